"""The machines' play gathers no facts (site.yml: gathering them took ~20 s of every provisioning under
emulation), so none of its roles may read a gathered fact: it would be undefined on the machines, and only
there. The fact names are Ansible's own, gathered on this host (what is installed: one dpkg-query, site.yml)."""
from __future__ import annotations

import json
import re
import subprocess

import pytest
import yaml
from conftest import ANSIBLE_DIR, VENV_BIN, ansible_env

from lab.provision import scope


@pytest.fixture(scope="module")
def fact_names() -> set[str]:
    """Every fact name `setup` gathers here, without its ansible_ prefix."""
    done = subprocess.run([str(VENV_BIN / "ansible"), "localhost", "-c", "local", "-m", "setup", "-o"],
                          env=ansible_env(), capture_output=True, text=True, timeout=300, cwd=ANSIBLE_DIR)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    facts = json.loads(done.stdout.split("=>", 1)[1])["ansible_facts"]
    names = {name.removeprefix("ansible_") for name in facts}
    assert {"distribution", "memtotal_mb", "service_mgr", "default_ipv4"} <= names
    return names


def machine_play() -> dict:
    return next(p for p in yaml.safe_load((ANSIBLE_DIR / "site.yml").read_text())
                if p.get("name") == scope.FULL_PLAY)


def facts_read(text: str, names: set[str]) -> set[str]:
    """The gathered facts a role's file reads: ansible_facts.x, ansible_facts['x'] or ansible_x."""
    keyed = set(re.findall(r"ansible_facts(?:\.|\[\s*['\"])(\w+)", text))
    bare = {m for m in re.findall(r"\bansible_(\w+)", text) if m in names}
    return keyed | bare


def test_the_machines_play_gathers_no_facts():
    assert machine_play().get("gather_facts") is False


def test_no_role_of_the_machines_play_reads_a_gathered_fact(fact_names):
    # site.yml: this play only (the load generators' play gathers its facts)
    texts = {"site.yml": yaml.safe_dump(machine_play()),
             **{str(p.relative_to(ANSIBLE_DIR)): p.read_text() for role in scope.site_roles()
                for p in sorted((ANSIBLE_DIR / "roles" / role).rglob("*")) if p.is_file() and p.suffix in
                {".yml", ".yaml", ".j2"}},
             **{str(p.relative_to(ANSIBLE_DIR)): p.read_text()
                for p in sorted((ANSIBLE_DIR / "group_vars").rglob("*.yml"))}}
    read = {path: found for path, text in texts.items() if (found := facts_read(text, fact_names))}
    assert not read, f"gathered facts read by the machines' play, which gathers none: {read}"


def test_the_check_finds_a_fact_read(fact_names):
    """The scan above can fail: each way of reading a fact is found (package_facts' packages too: no role of the
    machines' play may run it), and other ansible_ names are not facts."""
    assert facts_read("when: ansible_facts.service_mgr == 'systemd'", fact_names) == {"service_mgr"}
    assert facts_read("{{ ansible_facts['default_ipv4'].address }}", fact_names) == {"default_ipv4"}
    assert facts_read("mem: {{ ansible_memtotal_mb }}", fact_names) == {"memtotal_mb"}
    assert facts_read("{{ ansible_facts.packages.keys() }}", fact_names) == {"packages"}
    assert facts_read("{{ ansible_play_hosts }} {{ ansible_managed }}", fact_names) == set()
