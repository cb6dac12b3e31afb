"""What a provisioning must run: the fingerprint of everything the machines are made from (ansible/, the jars, the
service's files, the machines' identities), and, when only knob overrides changed since the last one, the roles that
read them on the machines whose knobs changed."""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

import yaml

from lab import machines, paths
from lab.machines import reach
from lab.provision import role_names

ANSIBLE_DIR = paths.ANSIBLE_DIR
FULL_PLAY = "Provision the lab machines"       # site.yml's play of the machines' roles


def fingerprint(resolved: dict, overrides: dict[str, dict], jars: list[Path], machine_ids: dict[str, str],
                service_vars: dict | None = None) -> str:
    """What provisioning would apply: every file of ansible/ (not its tests, nor the knob sets: Ansible reads none,
    their values reach the machines in the overrides), the jars, the overrides, the machines' addresses and identities
    (/etc/machine-id: a re-created machine is a new one), and for real hosts their inventory. The stamp keeps it with
    overrides={} and the overrides beside it (scope())."""
    digest = hashlib.sha256()
    for path in sorted(p for p in ANSIBLE_DIR.rglob("*")
                       if p.is_file() and not {"tests", "knob_sets"} & set(p.relative_to(ANSIBLE_DIR).parts)):
        digest.update(f"{path.relative_to(ANSIBLE_DIR)}\0".encode() + path.read_bytes() + b"\0")
    for jar in sorted(jars):
        digest.update(jar.name.encode() + hashlib.sha256(jar.read_bytes()).digest())
    # real hosts: their inventory too (the generators, who may reach the targets)
    hosts_inventory = {"inventory": Path(resolved["inventory"]).read_text()} if resolved.get("inventory") else {}
    digest.update(json.dumps({"overrides": overrides, "service": service_vars or None,
                              "machines": resolved.get("machines"),
                              "memory_mb": resolved.get("memory_mb"), "ids": machine_ids, **hosts_inventory},
                             sort_keys=True).encode())
    return digest.hexdigest()


def service_templates(service_vars: dict | None) -> tuple[Path, ...]:
    """The service's template (its knobs: the `needs: template` ones of ansible/knobs.yml), which the app role
    renders into application.yml: a role's own files do not name what it reads."""
    template = ((service_vars or {}).get("lab_service") or {}).get("template")
    return (Path(template),) if template else ()


def service_files(service_vars: dict | None) -> list[Path]:
    """The service's files the machines are made from (its jars, template, logging): fingerprinted as ansible/ is."""
    svc = (service_vars or {}).get("lab_service") or {}
    found = [Path(b["jar"]) for b in (svc.get("builds") or {}).values()]
    return found + [Path(svc[key]) for key in ("template", "logging") if svc.get(key)]


def machine_ids() -> dict[str, str]:
    ids = {}
    for name in machines.NAMES:
        probe = reach.ssh(name, "cat /etc/machine-id")
        ids[name] = probe.stdout.strip() if probe.returncode == 0 else f"unknown-{os.urandom(4).hex()}"
    return ids


@dataclass(frozen=True)
class Scope:
    """What one provisioning runs: on which machines, which of site.yml's roles (None: all of them), and why."""
    machines: tuple[str, ...]
    roles: tuple[str, ...] | None
    why: str

    def arguments(self) -> list[str]:
        """ansible-playbook's arguments for it: --limit, and the roles as site.yml's lab_only_roles (a condition
        on each role, so that it holds for the tasks they include too, where tags would not)."""
        if self.roles is None:
            return []
        return ["--limit", ",".join(self.machines), "-e", json.dumps({"lab_only_roles": list(self.roles)})]

    def describe(self) -> str:
        if self.roles is None:
            return f"every role on {', '.join(self.machines)} ({self.why})"
        return (f"{', '.join(self.roles) or 'no role'} on {', '.join(self.machines)} ({self.why}; the knobs' "
                "validation and records run always)")


def site_roles() -> list[str]:
    """The roles of site.yml's play of the lab machines, in order."""
    plays = yaml.safe_load((ANSIBLE_DIR / "site.yml").read_text())
    play = next(p for p in plays if p.get("name") == FULL_PLAY)
    return [r["role"] if isinstance(r, dict) else r for r in play["roles"]]


RENDERS_TEMPLATE = "lab_service.template"      # in a role's files: it renders the service's template


def knob_readers(templates: tuple[Path, ...] = ()) -> dict[str, set[str]]:
    """{role: every knob and lab variable it depends on}: the names its files read (lab.provision.role_names), the
    service's templates' for the role that renders them, and through the variables they name (group_vars, any
    role's defaults and vars), the names those are made of."""
    made_of = {}
    for path in [ANSIBLE_DIR / "group_vars" / "all" / "lab.yml",
                 *sorted((ANSIBLE_DIR / "roles").glob("*/defaults/*.yml")),
                 *sorted((ANSIBLE_DIR / "roles").glob("*/vars/*.yml"))]:
        for name, value in (yaml.safe_load(path.read_text()) or {}).items():
            made_of.setdefault(name, set()).update(role_names.names_in(value))
    readers = {}
    for role in site_roles():
        todo = list(role_names.references(ANSIBLE_DIR / "roles" / role))
        if _renders_template(ANSIBLE_DIR / "roles" / role):
            todo += [n for t in templates for n in role_names.names_in_text(t.read_text(encoding="utf-8"))]
        names = set()
        while todo:
            name = todo.pop()
            if name not in names:
                names.add(name)
                todo += made_of.get(name, ())
        readers[role] = names
    return readers


def _renders_template(role: Path) -> bool:
    return any(RENDERS_TEMPLATE in path.read_text() for path in role_names.role_files(role))


def normal(overrides: dict[str, dict]) -> dict[str, dict]:
    return json.loads(json.dumps({m: o for m, o in overrides.items() if o}, sort_keys=True))


def scope(stamp: dict | None, base: str, overrides: dict[str, dict], names=machines.NAMES,
          templates: tuple[Path, ...] = ()) -> Scope | None:
    """What must run for these overrides, given what the machines were last provisioned from (the stamp): None
    when nothing changed; every role on every machine when anything but the knob overrides changed (ansible/,
    the jars, the machines); else only the roles that read a changed knob (templates: the service's, read by the
    role that renders them), on the machines whose knobs changed."""
    if not stamp or stamp.get("base") != base:
        return Scope(tuple(names), None,
                     "first provisioning" if not stamp else "ansible/, the jars or the machines changed")
    before, now = stamp.get("overrides") or {}, normal(overrides)
    missing = object()
    changed = {m: {k for k in {**before.get(m, {}), **now.get(m, {})}
                   if before.get(m, {}).get(k, missing) != now.get(m, {}).get(k, missing)} for m in names}
    if not any(changed.values()):
        return None
    knobs = set().union(*changed.values())
    roles = tuple(r for r, read in knob_readers(templates).items() if read & knobs)
    return Scope(tuple(m for m in names if changed[m]), roles, "changed: " + ", ".join(sorted(knobs)))


def read_stamp(stamp: Path) -> dict | None:
    """What the machines were last provisioned from (None: unknown, provision everything)."""
    try:
        found = json.loads(stamp.read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None
