"""roles/app/tasks/logs.yml on this host: the service's user owns every log in its folder. A console service's app.log
(opened by systemd as root where it is missing) left root's, then a service that writes app.log itself as the
service's user: its JVM died at every start on "Permission denied" (native containers, 2026-12-08)."""
import os
import pwd
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ANSIBLE_DIR, ansible_env

USER = "daemon"             # a user with a group of its name on Debian, as the role's app_user has

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="giving files to another user needs root (CI runs as root)")


def logs_play(tmp_path: Path, logging) -> subprocess.CompletedProcess:
    play = tmp_path / "play.yml"
    play.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False,
        "vars": {"app_log_dir": str(tmp_path / "log"), "app_user": USER, "lab_service": {"logging": logging}},
        "tasks": [{"ansible.builtin.include_tasks": str(ANSIBLE_DIR / "roles" / "app" / "tasks" / "logs.yml")}]}]))
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                           str(play)], capture_output=True, text=True, env=ansible_env(), timeout=300)


@pytest.mark.parametrize("logging", [None, "logback.xml"])
def test_a_log_left_roots_by_an_earlier_service_is_given_to_the_services_user(tmp_path, logging):
    (tmp_path / "log").mkdir()
    left = tmp_path / "log" / "app.log"
    left.write_text("an earlier service's console\n")          # root's, as systemd made it
    run = logs_play(tmp_path, logging)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert left.stat().st_uid == pwd.getpwnam(USER).pw_uid
    assert left.read_text() == "an earlier service's console\n", "kept: a run's evidence is never lost"


def test_a_console_services_app_log_is_made_as_its_user_before_systemd_opens_it(tmp_path):
    run = logs_play(tmp_path, None)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    log = tmp_path / "log" / "app.log"
    assert log.is_file() and log.stat().st_uid == pwd.getpwnam(USER).pw_uid


def test_a_service_that_writes_its_own_log_gets_no_empty_app_log(tmp_path):
    run = logs_play(tmp_path, "logback.xml")
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    assert not (tmp_path / "log" / "app.log").exists()
    assert (tmp_path / "log").stat().st_uid == pwd.getpwnam(USER).pw_uid
