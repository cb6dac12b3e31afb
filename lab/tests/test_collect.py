"""The host/guest contract: lab/guest/run.sh reads what to collect from the machine's manifest (written by
Ansible), and collect.py holds what came back against it."""
import json
import os
import subprocess

from lab import collect

MANIFEST = {
    "configs": ["/etc/lab/knobs.json", "/etc/apache2/mods-enabled/mpm_*.conf"],
    "services": ["mock-service", "camel-app"],
    "logs": {"app.log": "/var/log/camel-app/app.log", "httpd-access.log": "/var/log/apache2/access.log"},
    "journals": {"mock.log": "mock-service"},
    "info_url": "http://127.0.0.1:8080/actuator/info",
    "pcp": {"archive_root": "/var/log/pcp/lab", "interval_s": 5, "metrics": ["hinv.ncpu", "kernel.all.cpu.user"]},
}


def guest(tmp_path, *args, manifest=MANIFEST):
    path = tmp_path / "manifest.json"
    if manifest is not None:
        path.write_text(json.dumps(manifest))
    return subprocess.run(["bash", str(collect.GUEST_SCRIPT), *args], capture_output=True, text=True,
                          env={**os.environ, "LAB_MANIFEST": str(path)})


def test_the_guest_script_takes_every_entry_from_the_manifest(tmp_path):
    done = guest(tmp_path, "manifest")
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert '[app.log]="/var/log/camel-app/app.log"' in out and '[httpd-access.log]="/var/log/apache2/access.log"' in out
    assert '[mock.log]="mock-service"' in out
    assert '"/etc/apache2/mods-enabled/mpm_*.conf"' in out
    assert 'METRICS=([0]="hinv.ncpu" [1]="kernel.all.cpu.user")' in out
    assert 'INTERVAL="5"' in out and 'ARCHIVE_ROOT="/var/log/pcp/lab"' in out
    assert 'INFO_URL="http://127.0.0.1:8080/actuator/info"' in out


def test_a_machine_without_a_manifest_is_told_to_provision(tmp_path):
    done = guest(tmp_path, "mark", "20261123T000000Z-x", manifest=None)
    assert done.returncode == 3 and "provision this machine" in done.stderr


def test_a_value_with_shell_characters_stays_a_value(tmp_path):
    hostile = {**MANIFEST, "logs": {"x.log": "/tmp/$(touch pwned)"}}
    done = guest(tmp_path, "manifest", manifest=hostile)
    assert done.returncode == 0 and "$(touch pwned)" in done.stdout
    assert not (tmp_path / "pwned").exists() and not os.path.exists("pwned")


def test_metrics_the_manifest_promised_but_did_not_come_are_named(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "pcp").mkdir()
    (tmp_path / "config" / "manifest.json").write_text(json.dumps(MANIFEST))
    (tmp_path / "pcp" / "metrics.csv").write_text("time,metric,instance,value\n1.0,hinv.ncpu,,2\n")
    assert collect.missing_metrics(tmp_path) == ["kernel.all.cpu.user"]


def test_a_run_folder_from_before_the_manifest_misses_nothing(tmp_path):
    assert collect.read_manifest(tmp_path) == {} and collect.missing_metrics(tmp_path) == []


def test_a_manifest_that_cannot_be_read_stops_the_guest_script(tmp_path):
    (tmp_path / "manifest.json").write_text("{not json")
    done = subprocess.run(["bash", str(collect.GUEST_SCRIPT), "mark", "20261123T000000Z-x"], capture_output=True,
                          text=True, env={**os.environ, "LAB_MANIFEST": str(tmp_path / "manifest.json")})
    assert done.returncode == 3 and "cannot read" in done.stderr


def test_a_manifest_without_its_pcp_part_stops_the_guest_script(tmp_path):
    done = guest(tmp_path, "manifest", manifest={k: v for k, v in MANIFEST.items() if k != "pcp"})
    assert done.returncode == 3 and "cannot read" in done.stderr
