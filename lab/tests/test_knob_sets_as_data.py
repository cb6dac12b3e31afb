"""Every knob set reaches Ansible as data: no knob set is a file Ansible reads itself (host_vars, group_vars by a
machine's or a group's name), so the tuned machine's own set comes, like any other, in the lab's overrides, each
string marked unsafe (lab/provision/as_data.py). Ansible runs as root on the controller and renders a var read
from a file when a task reads it: a value `{{ lookup('pipe', …) }}` in ansible/knob_sets/tuned.yml ran a command
there through host_vars/tuned.yml, a link to that set."""
from __future__ import annotations

import json
import shutil

import pytest

from lab import paths
from lab.experiment import design
from lab.provision import as_data, knob_sets, playbook

# a one-jar service as lab/experiment/service.py ansible_vars gives it (no build needed to validate the knobs)
SERVICE_VARS = {"tomcat_http_port": 8080, "lab_service": {
    "name": "shop", "builds": {"": {"jar": "/srv/shop.jar", "camel": "3.22.2", "tomcat": "9.0.98", "boot": "2.7.18",
                                 "java": 17}},
    "health": "/actuator/health", "proxy_path": "/", "properties": {}, "template": None, "logging": None, "logs": [],
    "cds": False, "footprint": None, "mock": None}}


def hostile(marker) -> str:
    """A template running `touch MARKER` through the shell, then a valid time zone: rendered, it is `UTC`."""
    return "{{lookup('pipe','touch${IFS}" + str(marker) + "')}}UTC"


@pytest.fixture
def hostile_tuned(tmp_path, monkeypatch):
    """ansible/ copied with its knob set `tuned` holding a template in base_timezone, the lab pointed at the copy;
    the marker file the template would make."""
    copy = tmp_path / "ansible"
    shutil.copytree(paths.ANSIBLE_DIR, copy, symlinks=True, ignore=shutil.ignore_patterns("tests"))
    marker = tmp_path / "ran-as-root"
    tuned = copy / "knob_sets" / "tuned.yml"
    tuned.unlink()          # a file of its own, not the lab's (were it a link)
    tuned.write_text((paths.ANSIBLE_DIR / "knob_sets" / "tuned.yml").read_text()
                     + f"base_timezone: \"{hostile(marker)}\"\n")
    monkeypatch.setattr(knob_sets, "DIR", copy / "knob_sets")
    monkeypatch.setattr(playbook, "ANSIBLE_DIR", copy)
    return marker


def test_no_knob_set_is_a_file_ansible_reads():
    """Ansible reads host_vars/ and group_vars/ beside the playbook and the inventory by name: only the catalog's
    values (generated from ansible/knobs.yml) and the lab's own variables are there."""
    ansible = paths.ANSIBLE_DIR
    assert not (ansible / "host_vars").exists() or not any((ansible / "host_vars").iterdir())
    assert sorted(p.name for p in (ansible / "group_vars").iterdir()) == ["all"]
    assert sorted(p.name for p in (ansible / "group_vars" / "all").iterdir()) == ["knobs.yml", "lab.yml"]
    for folder in ("host_vars", "group_vars"):
        found = [p for p in ansible.rglob(folder) if "tests" not in p.relative_to(ansible).parts]
        assert found in ([], [ansible / folder]), found
    links = [p for p in ansible.rglob("*") if p.is_symlink() and "knob_sets" in str(p.resolve())]
    assert not links, f"a link to a knob set Ansible may read: {links}"


def test_the_tuned_machine_gets_its_own_set_as_marked_data(hostile_tuned):
    overrides = design.Trial().overrides()
    assert overrides["tuned"]["base_timezone"] == hostile(hostile_tuned), "tuned's set reaches the machine as overrides"
    assert overrides["tuned"]["httpd_mpm"] == "worker" and overrides["default"] == {}
    handed = json.loads(as_data.extra_vars({"lab_overrides": overrides}))
    assert handed["lab_overrides"]["tuned"]["base_timezone"] == {as_data.UNSAFE: hostile(hostile_tuned)}


def test_a_template_in_the_tuned_set_is_judged_as_text_by_the_validation_play(hostile_tuned):
    """The real validation play, run on this host as every run runs it first: the command never runs, and the
    value, as typed, is no time zone."""
    with pytest.raises(ValueError) as refused:
        playbook.validate({"memory_mb": 512}, design.Trial().overrides(), service_vars=SERVICE_VARS)
    assert not hostile_tuned.exists(), "Ansible rendered the tuned set's value: a command ran as root"
    assert "tuned: knob base_timezone" in str(refused.value) and "lookup('pipe'" in str(refused.value)


def test_provision_outside_a_run_gives_each_machine_its_own_set(monkeypatch):
    """`./start.sh provision` hands the machines their sets as a run does (lab/experiment/provisioning.py)."""
    from lab.experiment import provisioning
    seen = {}
    monkeypatch.setattr(provisioning.machine_fit, "use", lambda kind: None)
    monkeypatch.setattr(provisioning.lifecycle, "kind", lambda s: "containers")
    monkeypatch.setattr(provisioning.service, "load", lambda name: "sample")
    monkeypatch.setattr(provisioning.service, "ansible_vars", lambda svc, overrides: {})
    monkeypatch.setattr(provisioning.playbook, "validate", lambda resolved, overrides, **kw: seen.update(overrides))
    monkeypatch.setattr(provisioning.lifecycle, "running", lambda: False)
    # the sample service takes all of tuned.yml (test_service_run); its jar is not needed here
    monkeypatch.setattr(design.Configuration, "knobs", lambda self, svc=None: {
        **design.catalog.defaults(), **knob_sets.values(self.base), **self.values})

    class Settings:
        machines, management_network, memory_mb = {}, "192.168.121.0/24", 512
    with pytest.raises(Exception, match="not up"):
        provisioning.provision({"default": {"tomcat_threads_max": 333}}, Settings())
    assert seen["default"] == {"tomcat_threads_max": 333}
    assert seen["tuned"]["httpd_mpm"] == "worker" and seen["tuned"]["tomcat_threads_max"] == 150
