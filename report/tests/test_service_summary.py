"""A run of a service of the user's (run.json service, issue 38): the summary names it, says what its jar is and what
its configurations could not take, and describes its load as its own plan, not the lab's request mix."""
from __future__ import annotations

import json

from report.read.runinfo import RunInfo
from report.render.summary import _run_line, service_lines

SERVICE = {"name": "petclinic-rest", "jar": "/ext/spring-petclinic-rest-3.4.3.jar", "proxy_path": "/petclinic/",
           "plan": "/work/services/examples/petclinic-rest.jmx",
           "facts": {"boot_version": "3.5.7", "tomcat_version": "10.1.48", "camel_version": None},
           "left_out": {"tuned": {"tomcat_ajp_connector": "needs Tomcat ≤ 9.0.113", "logback_audit_appender": "…"}}}
LOAD = {"name": "lab", "model": "closed", "users": 20, "ramp_up_s": 30, "duration_s": 180, "keep_alive": True,
        "mix": {"get": 60, "summary": 25}}


def run(tmp_path, **record) -> RunInfo:
    (tmp_path / "run.json").write_text(json.dumps({"run_id": "r", "status": "complete", "load": LOAD, **record}))
    return RunInfo(tmp_path)


def test_a_service_run_says_what_ran_and_what_was_left_out(tmp_path):
    lines = service_lines(run(tmp_path, service=SERVICE))
    assert lines[0] == ("Service: **petclinic-rest** (spring-petclinic-rest-3.4.3.jar: Spring Boot 3.5.7, Tomcat "
                        "10.1.48), with the lab's tuning kit on its class path; HTTPD forwards /petclinic/.")
    assert lines[1] == ("Left out of tuned (the service, or the machines' kind, cannot take them): "
                        "logback_audit_appender, tomcat_ajp_connector.")
    line = _run_line(run(tmp_path, service=SERVICE))
    assert "the service's own plan petclinic-rest.jmx" in line and "mix" not in line and "load lab" not in line


def test_the_sample_apps_run_says_its_mix_and_no_service(tmp_path):
    assert service_lines(run(tmp_path, service=None)) == []
    assert service_lines(run(tmp_path)) == []           # a run folder from before services
    sample = {"name": "sample", "jar": None, "facts": None, "stacks": ["camel3", "camel4"], "proxy_path": "/api/",
              "plan": None, "lab_plan": True}
    assert service_lines(run(tmp_path, service=sample)) == [
        "Service: **sample** (builds camel3, camel4 by app_stack: each machine's versions below), with the lab's "
        "tuning kit on its class path; HTTPD forwards /api/."]
    line = _run_line(run(tmp_path, service=sample))
    assert "load lab: closed model" in line and "mix get 60 %, summary 25 %" in line
    line = _run_line(run(tmp_path))
    assert "load lab: closed model" in line and "mix get 60 %, summary 25 %" in line


def test_sides_on_two_boxes_and_a_set_moved_to_another_line_are_said_beside_the_verdict(tmp_path):
    from report.render.lines import line_lines
    moved = {"tuned": {"from": "boot2 on Java 17", "to": "boot3 on Java 21",
                       "vanished": {"tomcat_ajp_connector": "apr needs Tomcat ≤ 9.0.113; replaced by nio"},
                       "changed": {"tomcat_threads_max": "with app_virtual_threads=true: no pool to size"},
                       "mandatory": {"jvm_version": "≥ 21"}, "measured": "as many requests at native speed"}}
    lines = line_lines(run(tmp_path, provider="libvirt", boxes={"default": "bookworm", "tuned": "trixie"},
                           service={**SERVICE, "upgrade": moved}))
    assert lines[0].startswith("**Across boxes:** the default column ran bookworm (OpenJDK 17), the tuned column ran "
                               "trixie (OpenJDK 21).")
    assert lines[1:4] == ["", "**Upgrade of tuned** from boot2 on Java 17 to boot3 on Java 21:", ""]  # own paragraphs
    assert lines[4:8] == ["- vanished: `tomcat_ajp_connector`: apr needs Tomcat ≤ 9.0.113; replaced by nio",
                          "- changes meaning: `tomcat_threads_max`: with app_virtual_threads=true: no pool to size",
                          "- mandatory: `jvm_version`: ≥ 21",
                          "- measured by the lab: as many requests at native speed"]
    # one box, no move: nothing to say; real hosts have no boxes
    assert line_lines(run(tmp_path, provider="libvirt", boxes={"default": "trixie", "tuned": "trixie"})) == []
    assert line_lines(run(tmp_path, provider="hosts", boxes={"default": "bookworm", "tuned": "trixie"})) == []
