"""The playbook and roles pass ansible-lint's strictest profile and Ansible's own syntax check."""
from __future__ import annotations

import subprocess

from conftest import ANSIBLE_DIR, INVENTORY, VENV_BIN, ansible_env, ansible_playbook

LINT = [str(VENV_BIN / "ansible-lint"), "--offline", "--profile", "production", "--nocolor"]


def lint(folder) -> subprocess.CompletedProcess:
    return subprocess.run(LINT, cwd=folder, env=ansible_env(), capture_output=True, text=True, timeout=900)


def test_ansible_lint_production_profile():
    result = lint(ANSIBLE_DIR)
    assert result.returncode == 0, result.stdout[-6000:] + result.stderr[-6000:]
    assert "Profile 'production' was required, and it passed" in result.stdout + result.stderr


def test_ansible_lint_refuses_a_sloppy_task(tmp_path):
    """The check above can fail: an unnamed shell task that always reports a change is refused."""
    (tmp_path / "play.yml").write_text("---\n- hosts: all\n  tasks:\n    - shell: echo hi\n")
    result = lint(tmp_path)
    assert result.returncode != 0
    assert "name[missing]" in result.stdout + result.stderr


def test_syntax_check():
    run = ansible_playbook("-i", str(INVENTORY), "--syntax-check", "site.yml")
    assert run.rc == 0, run.describe()
