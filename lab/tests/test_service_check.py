"""`./start.sh service check`: a service started once on this host with the tuning kit
(lab/experiment/service_check.py). The real starts need the sample app's jar and the kit's (./test.sh app builds
both, before this stage)."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
import yaml
from service_parts import BOOT32, boot_jar

from lab import cli, paths, unprivileged
from lab.experiment import service, service_check
from lab.provision import jars

SAMPLE_JAR = paths.ROOT / "app" / "camel3" / "target" / "camel-tuning-app-camel3.jar"


def write(tmp_path, **fields) -> str:
    path = tmp_path / "svc.yml"
    # the lab's own jar, copied into the descriptor's folder (its paths stay inside it)
    shutil.copyfile(SAMPLE_JAR, tmp_path / SAMPLE_JAR.name)
    path.write_text(yaml.safe_dump({"name": "sample-check", "jar": SAMPLE_JAR.name,
                                    "health": "/actuator/health",
                                    "start_timeout_s": 180, "mock": {"builtin": True},
                                    "properties": {"lab.backend.url": "{mock}", "lab.audit.enabled": False},
                                    **fields}))
    return str(path)


def test_the_kit_goes_on_loader_path_and_every_setting_is_a_system_property(tmp_path):
    boot_jar(tmp_path / "svc.jar", BOOT32, ("spring-boot-3.5.7.jar", "tomcat-embed-core-10.1.48.jar",
                                           "spring-boot-actuator-3.5.7.jar"))
    (tmp_path / "svc.yml").write_text(yaml.safe_dump({"name": "x", "jar": "svc.jar",
                                                      "properties": {"backend.url": "{mock}/v1", "flag": True}}))
    svc = service.load(str(tmp_path / "svc.yml"))
    argv = service_check.java_command(svc, tmp_path / "lab-kit.jar", 41234, "http://127.0.0.1:5555")
    assert argv[-3:] == ["-cp", str(tmp_path / "svc.jar"), "org.springframework.boot.loader.launch.PropertiesLauncher"]
    assert f"-Dloader.path={tmp_path / 'lab-kit.jar'}" in argv and "-Dloader.main=shop.App" in argv
    assert "-Dserver.port=41234" in argv and "-Dbackend.url=http://127.0.0.1:5555/v1" in argv and "-Dflag=true" in argv


def built() -> None:
    missing = [p for p in (SAMPLE_JAR, jars.KIT_JAR) if not p.exists()]
    if missing:
        pytest.skip(f"not built: {', '.join(map(str, missing))} (./test.sh app builds them)")


def test_a_real_service_starts_with_the_kit_answers_and_is_measured(tmp_path, capsys):
    built()
    svc = service.load(write(tmp_path))
    started = service_check.start_once(svc, jars.KIT_JAR, tmp_path / "work", log=lambda line: None)
    assert 0 < started.ready_after_s < 180 and 80 < started.rss_mb < 2000 and started.threads > 10
    page = (tmp_path / "work" / "metrics.txt").read_text()
    assert started.metrics_families > 10 and 'tomcat_connector_threads_busy{connector="ajp-nio-' in page
    log = (tmp_path / "work" / "service.log").read_text()
    assert "Started LabApplication" in log
    assert "lab kit: AJP connector AjpNioProtocol on 127.0.0.1" in log, "the kit came from loader.path, AJP on"
    assert not Path(f"/proc/{started.pid}").exists(), "the service outlived its check"
    if os.geteuid() == 0:       # the kernel's word, read from /proc while it ran: never root
        assert started.uid == unprivileged.find().uid != 0
    mock_log = (tmp_path / "work" / "mock.log").read_text()
    assert "listening on http://127.0.0.1:" in mock_log


def test_a_health_url_that_never_answers_200_fails_naming_it(tmp_path):
    built()
    svc = service.load(write(tmp_path, health="/actuator/nothing-here", start_timeout_s=30))
    with pytest.raises(service_check.CheckFailed, match=r"sample-check did not answer within 30 s; its last lines"):
        service_check.start_once(svc, jars.KIT_JAR, tmp_path / "work", log=lambda line: None)


def test_the_command_names_a_bad_descriptor_without_starting_anything(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(service_check, "start_once", lambda *a, **k: pytest.fail("must not start anything"))
    assert cli.main(["service", "check", str(tmp_path / "nothing.yml")]) == 2
    assert "no such service descriptor" in capsys.readouterr().err
