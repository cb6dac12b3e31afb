"""lab_start_services as the full run passes it (lab/provision/playbook.py start_services_vars) reaches the roles'
conditions as a boolean: a key=value extra var would be the string "false", which Ansible refuses as a
condition (ansible-core 2.19: "Conditionals must have a boolean result")."""
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from conftest import ANSIBLE_DIR, ansible_env

from lab.provision import playbook

GATED = [("roles/app/tasks/service.yml", "Make sure the app runs"),
         ("roles/app/tasks/service.yml", "Wait until the app is ready"),
         ("roles/app/handlers/main.yml", "Restart camel-app"),
         ("roles/httpd/tasks/service.yml", "Check the app answers through HTTPD"),
         # the services the equal start restarts anyway (lab/experiment/services.py): not started twice either
         ("roles/mock_service/tasks/service.yml", "Start the mock"),
         ("roles/mock_service/tasks/service.yml", "Wait for the mock to answer"),
         ("roles/mock_service/handlers/main.yml", "Restart mock-service"),
         ("roles/httpd/handlers/main.yml", "Restart apache2"),
         ("roles/httpd/handlers/main.yml", "Reload apache2")]


@pytest.mark.parametrize("path, name", GATED)
def test_the_app_start_is_gated_on_lab_start_services(path, name):
    [task] = [t for t in yaml.safe_load((ANSIBLE_DIR / path).read_text()) if t.get("name") == name]
    assert task.get("when") == "lab_start_services", task


@pytest.mark.parametrize("start, says", [(True, "ok: [localhost]"), (False, "skipping: [localhost]")])
def test_the_full_runs_extra_vars_are_a_condition_ansible_accepts(tmp_path, start, says):
    play = tmp_path / "play.yml"
    play.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False,
        "vars_files": [str(ANSIBLE_DIR / "group_vars" / "all" / "lab.yml")],
        "tasks": [{"name": "gated as the roles gate the app's start", "ansible.builtin.debug": {"msg": "started"},
                   "when": "lab_start_services"}]}]))
    run = subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local",
                          *playbook.start_services_vars(start), str(play)],
                         capture_output=True, text=True, env=ansible_env(), timeout=300)
    assert run.returncode == 0 and says in run.stdout, run.stdout[-2000:] + run.stderr[-2000:]
