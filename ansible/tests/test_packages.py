"""What is installed is read once per provisioning (site.yml's pre_tasks, one dpkg-query), and a role of the machines'
play runs apt only for a package missing from it: each role's package_facts and its apt with nothing to do opened
python-apt's cache, 10-18 s apiece on an emulated guest (~200 s of a fresh provisioning of the preloaded box)."""
from __future__ import annotations

import json
import subprocess

import yaml
from conftest import ANSIBLE_DIR, VENV_BIN, ansible_env

from lab.provision import scope

READ_ONCE = ("Find which packages are installed", "Keep their names for the roles")


def machine_play() -> dict:
    return next(p for p in yaml.safe_load((ANSIBLE_DIR / "site.yml").read_text()) if p.get("name") == scope.FULL_PLAY)


def role_tasks():
    """(file, task) for every task of the machines' play's roles."""
    for role in scope.site_roles():
        for path in sorted((ANSIBLE_DIR / "roles" / role / "tasks").glob("*.yml")):
            for task in yaml.safe_load(path.read_text()) or []:
                yield path.relative_to(ANSIBLE_DIR), task


def test_no_role_of_the_machines_play_reads_the_package_database_itself():
    found = [f"{path}: {task.get('name')}" for path, task in role_tasks() if "ansible.builtin.package_facts" in task]
    assert not found, f"package_facts opens python-apt's cache (10-18 s under TCG): use lab_packages_installed: {found}"


def test_every_apt_of_the_machines_play_runs_only_for_a_missing_package():
    apts = [(path, task) for path, task in role_tasks() if "ansible.builtin.apt" in task]
    assert len(apts) >= 6, apts       # base, java, mock_service, app's profiler, httpd, pcp
    unguarded = [f"{path}: {task.get('name')}" for path, task in apts
                 if "lab_packages_installed" not in str(task.get("when", ""))]
    assert not unguarded, f"apt that runs whatever is installed: {unguarded}"


def test_the_installed_packages_are_those_dpkg_says_are_installed(tmp_path):
    """site.yml's own two tasks, run on this host: every package dpkg has installed, and nothing else (a package
    removed with its configuration kept, 'rc', is not installed)."""
    tasks = [t for t in machine_play()["pre_tasks"] if t.get("name") in READ_ONCE]
    assert [t["name"] for t in tasks] == list(READ_ONCE)
    playbook = tmp_path / "read.yml"
    playbook.write_text(yaml.safe_dump([{"hosts": "localhost", "connection": "local", "gather_facts": False,
                                         "tasks": [*tasks, {"ansible.builtin.copy": {
                                             "content": "{{ lab_packages_installed | to_json }}",
                                             "dest": str(tmp_path / "installed.json")}}]}]))
    done = subprocess.run([str(VENV_BIN / "ansible-playbook"), "-i", "localhost,", str(playbook)], cwd=ANSIBLE_DIR,
                          env=ansible_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    read = json.loads((tmp_path / "installed.json").read_text())
    status = subprocess.run(["dpkg-query", "--show", "--showformat=${db:Status-Status} ${Package}\n"],
                            capture_output=True, text=True, check=True).stdout.splitlines()
    installed = sorted(line.split()[1] for line in status if line.startswith("installed "))
    assert sorted(read) == installed
    assert {"dpkg", "bash", "python3"} <= set(read)
