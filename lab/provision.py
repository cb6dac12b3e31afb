"""Provisioning: the app jars built on the host, the lab's inventory, Ansible run inside the lab namespace.

Knob overrides for one run (`--set [machine:]knob=value`) are parsed and checked against the catalog
(ansible/knobs.yml, read by lab.knobs) here, so a typo fails before anything starts; then validate() runs
Ansible's validation play (ansible/validate.yml: types, ranges, the rules between knobs, what the kernel and
the JVM accept) on this host alone, before anything is built, booted or changed. site.yml runs the same play
first, so real hosts get the same checks.
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import yaml

from lab import knobs, machines, paths, profiler, role_names, shell

ANSIBLE_DIR = paths.ANSIBLE_DIR
STOP_GRACE_S = 30               # for Ansible to end its connections after SIGTERM, before SIGKILL
INVENTORY = paths.STATE_DIR / "inventory.yml"
OVERRIDES = paths.STATE_DIR / "overrides.json"
# What the machines were last provisioned from: {"base": fingerprint() of all but the knob overrides, "overrides":
# the overrides}; written only after a successful run. scope() compares the next run's with it.
STAMP = paths.STATE_DIR / "provisioned.json"
FULL_PLAY = "Provision the lab machines"       # site.yml's play of the machines' roles
APP_DIR = paths.ROOT / "app"
STACKS = ("camel3", "camel4")


FAILED_LINE = re.compile(r"^(?:failed|fatal): \[(?P<host>[^\]]+)\].*? => (?P<json>\{.*\})\s*$")


class ProvisionError(RuntimeError):
    """Provisioning could not run or failed; the message says where."""


def catalog() -> dict:
    """The knobs --set may change and their out-of-the-box values (the inventory's are not set here)."""
    return knobs.defaults()


def parse_overrides(items: list[str], targets: tuple[str, ...] | list[str] = machines.NAMES,
                    prefixes: tuple[str, ...] | list[str] | None = None, what: str = "machine") -> dict[str, dict]:
    """`knob=value` (every target) or `target:knob=value` → {target: {knob: value}}. targets: the machines
    (`./start.sh provision`) or the knob sets a run uses; prefixes: what a prefix may name (default: targets;
    a run allows every knob set, and refuses one no machine runs later, with the reason); what: "machine" or
    "knob set", for the messages.

    Values are YAML (200 → int, true → bool, null → None, [a, b] → list), as in the catalog.
    """
    known = catalog()
    prefixes = list(targets) if prefixes is None else list(prefixes)
    out: dict[str, dict] = {name: {} for name in targets}
    for item in items:
        target, sep, assignment = item.partition(":") if ":" in item.split("=", 1)[0] else ("", "", item)
        knob, eq, raw = assignment.partition("=")
        knob = knob.strip()
        if not eq or not knob:
            raise ValueError(f"--set {item!r}: expected [{'|'.join(prefixes)}:]knob=value, e.g. tuned:tomcat_threads_max=250")
        if target and target not in prefixes:
            raise ValueError(f"--set {item!r}: unknown {what} {target!r} ({what}s: {', '.join(prefixes)})")
        if knob not in known:
            close = [k for k in known if k.split("_")[0] == knob.split("_")[0]][:8]
            raise ValueError(f"--set {item!r}: unknown knob {knob!r}"
                             + (f" (knobs of that tier: {', '.join(close)})" if close else " (see ansible/knobs.yml)"))
        try:
            value = yaml.safe_load(raw) if raw.strip() else None
        except yaml.YAMLError as bad:
            raise ValueError(f"--set {item!r}: the value is not valid YAML: {bad}") from None
        for name in ([target] if target else targets):
            out.setdefault(name, {})[knob] = value
    return out


def ensure_jar(stack: str, log=print) -> Path:
    """The app jar of a stack, built with the Maven wrapper when missing or older than its sources."""
    jar = APP_DIR / stack / "target" / f"camel-tuning-app-{stack}.jar"
    sources = [p for d in ("common", stack) for p in (APP_DIR / d).rglob("*")
               if p.is_file() and "target" not in p.parts] + [APP_DIR / "pom.xml"]
    newest = max(p.stat().st_mtime for p in sources)
    if jar.exists() and jar.stat().st_mtime >= newest:
        return jar
    log(f"building the {stack} jar (Maven, ~1–2 min)")
    shell.run(["./mvnw", "-B", "-ntp", "-q", "package", "-DskipTests", "-pl", stack, "-am"],
              f"building the {stack} jar failed", error=ProvisionError, lines=40, cwd=APP_DIR)
    if not jar.exists():
        raise ProvisionError(f"building the {stack} jar: Maven succeeded but left no {jar}")
    return jar


def jars_beside(overrides: dict[str, dict], log=print) -> Future:
    """The jars of this run's stacks, built on a thread of their own while the caller brings the machines up
    (run(jars=...) waits for them): a cold run's base box build leaves a host core to Maven's 1-2 min."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="jars")
    try:
        return pool.submit(lambda: [ensure_jar(stack, log) for stack in sorted(stacks_in_use(overrides))])
    finally:
        pool.shutdown(wait=False)


def stacks_in_use(overrides: dict[str, dict]) -> set[str]:
    """app_stack of each machine: catalog, then host_vars, then this run's overrides."""
    default = catalog()["app_stack"]
    used = set()
    for name in machines.NAMES:
        host_vars = ANSIBLE_DIR / "host_vars" / f"{name}.yml"
        stack = (yaml.safe_load(host_vars.read_text()) or {}).get("app_stack", default) if host_vars.exists() else default
        used.add(overrides.get(name, {}).get("app_stack", stack))
    return {s for s in used if s in STACKS}


def inventory(resolved: dict) -> dict:
    """The lab machines for Ansible: reached through .lab/ssh_config from inside the namespace. memory_mb: the
    machines' RAM, one figure for both, or {machine: MB} (real hosts may differ)."""
    networks = sorted({resolved.get("management_network", "192.168.121.0/24"),
                       _private_network(resolved)})
    memory = resolved.get("memory_mb", 512)
    each = memory if isinstance(memory, dict) else {name: memory for name in machines.NAMES}
    return {"all": {
        "vars": {"ansible_user": "vagrant",
                 "ansible_ssh_common_args": f"-F {machines.SSH_CONFIG}",
                 "lab_networks": networks,
                 "lab_memory_mb": int(min(each.values()))},
        "hosts": {name: {"lab_private_ip": resolved.get("machines", {}).get(name),
                         **({"lab_memory_mb": int(each[name])} if isinstance(memory, dict) else {})}
                  for name in machines.NAMES}}}


def write_inventory(resolved: dict, path: Path = INVENTORY) -> Path:
    path.write_text("# Generated by ./start.sh from the lab's settings; do not edit.\n"
                    + yaml.safe_dump(inventory(resolved), sort_keys=False))
    return path


def validate(resolved: dict, overrides: dict[str, dict], load_id_max: int | None = None) -> None:
    """Every knob of both machines (catalog, host_vars, these overrides) checked by ansible/validate.yml on
    this host, with no connection to any machine; ValueError with one line per bad value when any is bad.
    resolved: the machines' settings as far as known (memory_mb, machines, management_network)."""
    with tempfile.TemporaryDirectory(prefix="lab-validate-") as tmp:
        local = inventory(resolved)
        local["all"]["vars"] = {**local["all"]["vars"], "ansible_connection": "local",
                                "ansible_python_interpreter": sys.executable}
        path = Path(tmp) / "inventory.yml"
        path.write_text(yaml.safe_dump(local, sort_keys=False))
        values = Path(tmp) / "overrides.json"
        values.write_text(json.dumps({"lab_overrides": overrides}))
        command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(path), "-e", f"@{values}",
                   *(["-e", f"lab_load_id_max={int(load_id_max)}"] if load_id_max is not None else []),
                   str(ANSIBLE_DIR / "validate.yml")]
        env = {**os.environ, "ANSIBLE_CONFIG": str(ANSIBLE_DIR / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
               # the default callback, each result on one line as JSON (its json callback is not in ansible-core)
               "ANSIBLE_STDOUT_CALLBACK": "default", "ANSIBLE_CALLBACK_RESULT_FORMAT": "json",
               "ANSIBLE_CALLBACK_FORMAT_PRETTY": "false"}
        done = subprocess.run(command, cwd=ANSIBLE_DIR, env=env, capture_output=True, text=True)
    if done.returncode == 0:
        return
    problems = validation_problems(done.stdout)
    if not problems:
        raise ProvisionError(f"the knobs' validation (ansible/validate.yml) exited {done.returncode}:\n"
                             + "\n".join((done.stdout + done.stderr).strip().splitlines()[-20:]))
    raise ValueError("bad knob values, nothing was built, booted or changed:\n"
                     + "\n".join(f"  {host}: {msg}" for host, msg in problems))


def validation_problems(output: str) -> list[tuple[str, str]]:
    """(machine, message) of every failed check in ansible-playbook's output (default callback, JSON
    results on one line: `failed: [tuned] (item=…) => {…}`, `fatal: [tuned]: FAILED! => {…}`). A loop's
    summary line (`fatal: … => {"msg": "One or more items failed", …}`) is left out: its items are in."""
    out = []
    for line in output.splitlines():
        m = FAILED_LINE.match(line)
        if not m:
            continue
        try:
            result = json.loads(m.group("json"))
        except ValueError:
            continue
        if isinstance(result, dict) and "results" not in result:
            out.append((m.group("host"), " ".join(str(result.get("msg", "")).split())))
    return out


def _private_network(resolved: dict) -> str:
    first = next(iter(resolved.get("machines", {}).values()), "192.168.56.11")
    return ".".join(first.split(".")[:3]) + ".0/24"


def ansible_env() -> dict:
    """Ansible's settings for the lab's machines. Mitogen's strategy keeps one Python per machine instead
    of starting one per task: under emulation that start-up was most of the provisioning time."""
    import ansible_mitogen
    strategies = Path(ansible_mitogen.__file__).parent / "plugins" / "strategy"
    return {**os.environ, "ANSIBLE_CONFIG": str(ANSIBLE_DIR / "ansible.cfg"),
            "ANSIBLE_STRATEGY_PLUGINS": str(strategies), "ANSIBLE_STRATEGY": "mitogen_linear",
            "ANSIBLE_FORCE_COLOR": "0", "ANSIBLE_NOCOLOR": "1", "PYTHONUNBUFFERED": "1"}


def playbook_command(inventory: Path, overrides: dict[str, dict], extra: list[str] = ()) -> list[str]:
    OVERRIDES.write_text(json.dumps({"lab_overrides": overrides}, indent=2))
    return [str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory),
            "-e", f"@{OVERRIDES}", *extra, str(ANSIBLE_DIR / "site.yml")]


def fingerprint(resolved: dict, overrides: dict[str, dict], jars: list[Path], machine_ids: dict[str, str]) -> str:
    """What provisioning would apply: every file of ansible/ (not its tests), the jars, the overrides, the
    machines' addresses and identities (/etc/machine-id: a re-created machine is a new one), and for real hosts
    their inventory. The stamp keeps it with overrides={} and the overrides beside it (scope())."""
    digest = hashlib.sha256()
    for path in sorted(p for p in ANSIBLE_DIR.rglob("*") if p.is_file() and "tests" not in p.relative_to(ANSIBLE_DIR).parts):
        digest.update(f"{path.relative_to(ANSIBLE_DIR)}\0".encode() + path.read_bytes() + b"\0")
    for jar in sorted(jars):
        digest.update(jar.name.encode() + hashlib.sha256(jar.read_bytes()).digest())
    # real hosts: their inventory too (the generators, who may reach the targets)
    hosts_inventory = {"inventory": Path(resolved["inventory"]).read_text()} if resolved.get("inventory") else {}
    digest.update(json.dumps({"overrides": overrides, "machines": resolved.get("machines"),
                              "memory_mb": resolved.get("memory_mb"), "ids": machine_ids, **hosts_inventory},
                             sort_keys=True).encode())
    return digest.hexdigest()


def _machine_ids() -> dict[str, str]:
    ids = {}
    for name in machines.NAMES:
        probe = machines.ssh(name, "cat /etc/machine-id")
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


def knob_readers() -> dict[str, set[str]]:
    """{role: every knob and lab variable it depends on}: the names its files read (lab.role_names), and through
    the variables they name (group_vars, any role's defaults and vars), the names those are made of."""
    made_of = {}
    for path in [ANSIBLE_DIR / "group_vars" / "all" / "lab.yml",
                 *sorted((ANSIBLE_DIR / "roles").glob("*/defaults/*.yml")),
                 *sorted((ANSIBLE_DIR / "roles").glob("*/vars/*.yml"))]:
        for name, value in (yaml.safe_load(path.read_text()) or {}).items():
            made_of.setdefault(name, set()).update(role_names.names_in(value))
    readers = {}
    for role in site_roles():
        names, todo = set(), list(role_names.references(ANSIBLE_DIR / "roles" / role))
        while todo:
            name = todo.pop()
            if name not in names:
                names.add(name)
                todo += made_of.get(name, ())
        readers[role] = names
    return readers


def _normal(overrides: dict[str, dict]) -> dict[str, dict]:
    return json.loads(json.dumps({m: o for m, o in overrides.items() if o}, sort_keys=True))


def scope(stamp: dict | None, base: str, overrides: dict[str, dict], names=machines.NAMES) -> Scope | None:
    """What must run for these overrides, given what the machines were last provisioned from (the stamp): None
    when nothing changed; every role on every machine when anything but the knob overrides changed (ansible/,
    the jars, the machines); else only the roles that read a changed knob, on the machines whose knobs changed."""
    if not stamp or stamp.get("base") != base:
        return Scope(tuple(names), None, "first provisioning" if not stamp else "ansible/, the jars or the machines changed")
    before, now = stamp.get("overrides") or {}, _normal(overrides)
    missing = object()
    changed = {m: {k for k in {**before.get(m, {}), **now.get(m, {})}
                   if before.get(m, {}).get(k, missing) != now.get(m, {}).get(k, missing)} for m in names}
    if not any(changed.values()):
        return None
    knobs = set().union(*changed.values())
    roles = tuple(r for r, read in knob_readers().items() if read & knobs)
    return Scope(tuple(m for m in names if changed[m]), roles, "changed: " + ", ".join(sorted(knobs)))


def _read_stamp() -> dict | None:
    try:
        found = json.loads(STAMP.read_text())
    except (OSError, ValueError):
        return None
    return found if isinstance(found, dict) else None


def run(resolved: dict, overrides: dict[str, dict], log=print, out=sys.stdout, force: bool = True,
        start_services: bool = True, jars: Future | None = None) -> Scope | None:
    """Builds the jars the machines need, then runs site.yml against both machines at once. With
    force=False it runs only what changed since the last successful provisioning of these machines (scope():
    nothing at all, or only the roles of the changed knobs on the machines whose knobs changed).
    start_services=False leaves the app stopped for a caller that starts every service itself right after (the
    full run's equal start); jars, the jars_beside() the caller started. The Scope that ran, None when nothing did."""
    try:
        for path in knobs.write_stale():   # an edited default in the catalog must reach group_vars before Ansible
            log(f"regenerated {path.relative_to(paths.ROOT)} from ansible/knobs.yml")
    except (ValueError, yaml.YAMLError) as bad:
        raise ProvisionError(f"the knob catalog cannot be read: {bad}") from None
    jars = list(jars.result()) if jars is not None else [ensure_jar(stack, log) for stack in sorted(stacks_in_use(overrides))]
    try:   # the agent library the app role copies to the machines
        jars.append(profiler.ensure(log=log) / profiler.LIBRARY)
    except profiler.ProfilerError as failure:
        raise ProvisionError(str(failure)) from None
    base = fingerprint(resolved, {}, jars, _machine_ids())
    names = tuple(resolved.get("machines") or machines.NAMES)
    chosen = Scope(names, None, "asked for (./start.sh provision or --provision)") if force else \
        scope(_read_stamp(), base, overrides, names)
    if chosen is None:
        log("nothing changed since these machines were last provisioned (ansible/, jars, --set): skipped; "
            "./start.sh provision runs it anyway")
        return None
    log(f"provisioning {chosen.describe()}")
    STAMP.unlink(missing_ok=True)
    # real hosts (lab/hosts.py) come with their own inventory, written when they were checked
    hosts_inventory = resolved.get("inventory")
    command = machines.wrap(playbook_command(Path(hosts_inventory) if hosts_inventory else write_inventory(resolved),
                                             overrides, [*start_services_vars(start_services), *chosen.arguments()]))
    logfile = paths.LOG_DIR / "ansible.log"
    paths.LOG_DIR.mkdir(parents=True, exist_ok=True)
    with open(logfile, "w", buffering=1) as keep:     # line by line: a user may tail it
        proc = subprocess.Popen(command, cwd=ANSIBLE_DIR, env=ansible_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True)
        try:
            started = time.monotonic()
            for line in proc.stdout:
                keep.write(f"[{time.monotonic() - started:7.1f} s] {line}")   # where provisioning's time goes
                if _worth_showing(line):
                    out.write("    " + line)
                    out.flush()
            proc.wait()
        except BaseException:       # Ctrl-C: Ansible must not go on changing the machines behind the user
            proc.terminate()
            try:
                proc.wait(STOP_GRACE_S)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            raise
    if proc.returncode != 0:
        raise ProvisionError(f"ansible-playbook exited {proc.returncode}; the whole output is in {logfile}")
    STAMP.write_text(json.dumps({"base": base, "overrides": _normal(overrides)}, indent=1) + "\n")
    return chosen


def start_services_vars(start_services: bool) -> list[str]:
    """The extra vars that leave the app stopped (group_vars/all/lab.yml lab_start_services). JSON, not
    key=value: a key=value extra var is a string, and Ansible refuses a string as a condition."""
    return [] if start_services else ["-e", json.dumps({"lab_start_services": False})]


def _worth_showing(line: str) -> bool:
    """Task names, failures, warnings and the recap; not every ok/skipping line of every loop item."""
    s = line.strip()
    return bool(s) and (s.startswith(("TASK [", "PLAY [", "PLAY RECAP", "fatal:", "failed:", "[WARNING", "[ERROR",
                                      "ERROR!", "msg:", "WARNING:"))
                        or " : ok=" in s or "changed:" in s[:10] or "WARNING" in s)


def memory_summary(samples: str) -> dict | None:
    """What a machine's memory watch (site.yml: "epoch MemAvailable SwapTotal SwapFree", kB, every 2 s) saw:
    available memory at its start (before the app was stopped) and at its lowest, when, and the most swap in
    use. None without a whole sample."""
    rows = []
    for line in samples.splitlines():
        fields = line.split()
        if len(fields) == 4 and all(f.isdigit() for f in fields):
            rows.append([int(f) for f in fields])
    if not rows:
        return None
    start = rows[0][0]
    lowest = min(rows, key=lambda r: r[1])
    return {"samples": len(rows), "seconds": rows[-1][0] - start,
            "available_at_start_mb": rows[0][1] // 1024, "available_min_mb": lowest[1] // 1024,
            "available_min_at_s": lowest[0] - start,
            "swap_used_max_mb": max(r[2] - r[3] for r in rows) // 1024}


def memory_during(names=machines.NAMES) -> dict[str, dict | str]:
    """Each machine's memory summary of its last provisioning, or why there is none."""
    found = {}
    for name in names:
        try:
            read = machines.ssh(name, f"cat {paths.GUEST_PROVISION_MEMORY}", timeout=60)
        except subprocess.TimeoutExpired:
            found[name] = "not read: SSH timed out"
            continue
        summary = memory_summary(read.stdout) if read.returncode == 0 else None
        found[name] = summary or f"not read: {(read.stderr.strip() or 'no samples')[-200:]}"
    return found


def report_memory(names, log=print) -> dict[str, dict | str]:
    """memory_during, each machine's line logged: after a provisioning that ran (a skipped one left the last
    provisioning's samples)."""
    found = memory_during(names)
    for name, summary in found.items():
        log(describe_memory(name, summary))
    return found


def describe_memory(name: str, summary: dict | str) -> str:
    if isinstance(summary, str):
        return f"{name}: memory while provisioning {summary}"
    return (f"{name}: memory while provisioning: {summary['available_at_start_mb']} MB available at the start, "
            f"lowest {summary['available_min_mb']} MB at +{summary['available_min_at_s']} s, "
            f"swap used at most {summary['swap_used_max_mb']} MB ({summary['samples']} samples)")
