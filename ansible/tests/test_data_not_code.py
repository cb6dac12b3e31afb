"""A user's text reaches Ansible as data: knob values (--set, a knob set) and a service descriptor's properties,
each holding a template that would run a command on the controller, as root, if Ansible rendered it. The real
validation play runs (lab/provision/playbook.py validate, on this host as every run does first): no command runs,
and the text is judged as typed. (Before lab/provision/as_data.py, each of the three markers below was made.)"""
from __future__ import annotations

import json

import pytest

from lab.experiment import service
from lab.provision import playbook


def sample_service() -> dict:
    return service.ansible_vars(service.load(service.DEFAULT), {})


def hostile(marker) -> str:
    """A template running `touch MARKER` through the shell, without a space (a JVM option may hold none)."""
    return "{{lookup('pipe','touch${IFS}" + str(marker) + "')}}"


def test_a_template_in_a_jvm_option_or_a_property_is_passed_on_as_typed(tmp_path):
    ran = {name: tmp_path / name for name in ("jvm", "property")}
    svc_vars = sample_service()
    svc_vars["lab_service"]["properties"]["lab.greeting"] = hostile(ran["property"])
    playbook.validate({"memory_mb": 512}, {"tuned": {}}, service_vars=svc_vars)   # a Spring property: valid as typed
    option = "-Dlab.x=" + hostile(ran["jvm"])      # a system property the JVM allowlist lacks: refused, as typed
    with pytest.raises(ValueError) as refused:
        playbook.validate({"memory_mb": 512}, {"tuned": {"jvm_extra_options": [option]}}, service_vars=svc_vars)
    assert f"knob jvm_extra_options item {json.dumps(option)}" in str(refused.value)
    assert not [name for name, marker in ran.items() if marker.exists()], "Ansible ran a user's text as a command"


def test_a_template_in_a_knob_value_is_judged_as_typed(tmp_path):
    marker = tmp_path / "timezone"
    with pytest.raises(ValueError) as refused:
        playbook.validate({"memory_mb": 512}, {"tuned": {"base_timezone": hostile(marker) + "UTC"}},
                          service_vars=sample_service())
    assert not marker.exists(), "Ansible ran a user's text as a command"
    # rendered, the lookup gave '' and left a valid "UTC"; as typed, the name is refused with the text shown
    assert "knob base_timezone" in str(refused.value) and "lookup('pipe'" in str(refused.value)


def test_a_jvm_option_that_writes_a_file_is_refused_before_any_jvm_runs(tmp_path):
    """The controller's JVM check (as root, before the lab's user ran it): with -Xlog:gc:file=F it wrote F (and
    renamed an existing F to F.0)."""
    log = tmp_path / "gc.log"
    log.write_text("a file of the user's\n")
    with pytest.raises(ValueError) as refused:
        playbook.validate({"memory_mb": 512}, {"tuned": {"jvm_extra_options": [f"-Xlog:gc:file={log}"]}},
                          service_vars=sample_service())
    assert "use instead: jvm_gc_log" in str(refused.value)
    assert log.read_text() == "a file of the user's\n" and not (tmp_path / "gc.log.0").exists()
