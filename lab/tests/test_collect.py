"""The host/guest contract: lab/experiment/guest/run.sh reads what to collect from the machine's manifest (written by
Ansible), and collect.py holds what came back against it."""
import json
import os
import subprocess
import time

from lab.experiment import collect

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


def _stub(bin_dir, name, body):
    path = bin_dir / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


def test_mark_starts_the_archive_and_the_profile_and_pack_stops_and_brings_it(tmp_path):
    """run.sh mark/pack with stand-ins for PCP, systemd and jattach: the modes a run calls, end to end."""
    import io
    import tarfile
    bin_dir, calls, root = tmp_path / "bin", tmp_path / "calls.txt", tmp_path / "profiles"
    bin_dir.mkdir()
    root.mkdir()
    for name in ("lab-pmlogger", "jattach"):
        _stub(bin_dir, name, f'echo "{name} $*" >> {calls}')
    _stub(bin_dir, "systemctl", 'echo 4242')        # systemctl show -p MainPID --value camel-app
    data = tmp_path / "data"
    data.mkdir()
    manifest = {**MANIFEST, "logs": {"app.log": str(tmp_path / "app.log")}, "journals": {}, "configs": [],
                "crash_files": [str(data / "hs_err_pid*.log")],
                "info_url": "", "pcp": {**MANIFEST["pcp"], "archive_root": str(tmp_path / "archives")},
                "profile": {"events": ["cpu", "alloc"], "interval_ms": 20, "alloc_bytes": 2097152, "lock_ns": 1000000,
                            "library": "/opt/async-profiler/libasyncProfiler.so", "output_root": str(root),
                            "service": "camel-app"}}
    (tmp_path / "app.log").write_text("before the run\n")
    (tmp_path / "manifest.json").write_text(json.dumps(manifest))
    env = {**os.environ, "LAB_MANIFEST": str(tmp_path / "manifest.json"), "LAB_RUN_STATE": str(tmp_path / "state"),
           "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    run_id = "20261124T000000Z-t"
    mark = subprocess.run(["bash", str(collect.GUEST_SCRIPT), "mark", run_id], capture_output=True, text=True, env=env)
    assert mark.returncode == 0, mark.stderr
    assert "profiling camel-app (pid 4242): cpu alloc every 20 ms" in mark.stdout
    said = calls.read_text().splitlines()
    assert f"lab-pmlogger start {run_id}" in said
    start = [c for c in said if "true start," in c]
    assert start == [f"jattach 4242 load /opt/async-profiler/libasyncProfiler.so true start,jfr,file={root}/{run_id}/"
                     f"profile.jfr,log={root}/{run_id}/profile.log,"
                     "interval=20ms,chunktime=60s,event=cpu,alloc=2097152"], said
    info = json.loads((root / run_id / "profile.json").read_text())
    assert info["pid"] == 4242 and info["events"] == ["cpu", "alloc"] and info["stopped"] is None
    (tmp_path / "app.log").write_text("before the run\nduring the run\n")
    (root / run_id / "profile.jfr").write_bytes(b"JFR")
    (data / "hs_err_pid11.log").write_text("a crash of an earlier run")
    os.utime(data / "hs_err_pid11.log", (1000, 1000))
    (data / "hs_err_pid77.log").write_text("# A fatal error has been detected by the Java Runtime Environment")
    since = int(time.time()) - 60
    pack = subprocess.run(["bash", str(collect.GUEST_SCRIPT), "pack", run_id, str(since)], capture_output=True, env=env)
    assert "true stop" in calls.read_text().splitlines()[-1] and "lab-pmlogger stop" in calls.read_text()
    with tarfile.open(fileobj=io.BytesIO(pack.stdout), mode="r:gz") as tar:
        names = tar.getnames()
        assert tar.extractfile("./logs/app.log").read() == b"during the run\n"
        stopped = json.loads(tar.extractfile("./profile/profile.json").read())
    assert "./profile/profile.jfr" in names and stopped["stopped"] and stopped["jfr_bytes"] == 3, names
    # the JVM's crash file of this run comes back (the report's crash hint), an older one does not
    assert "./logs/hs_err_pid77.log" in names and "./logs/hs_err_pid11.log" not in names, names


def test_the_serial_console_is_copied_on_the_host_its_end_only(tmp_path, monkeypatch):
    console = tmp_path / "lab-default-serial.log"
    console.write_bytes(b"x" * 100 + b"[  812.1] Out of memory: Killed process 4242 (java)\n")
    monkeypatch.setattr(collect.vagrant, "SERIAL_LOG", str(tmp_path / "lab-{name}-serial.log"))
    monkeypatch.setattr(collect, "SERIAL_TAIL_BYTES", 60)
    assert collect.copy_serial_console("default", tmp_path / "run" / "default")
    kept = (tmp_path / "run" / "default" / "logs" / "serial-console.log").read_bytes()
    assert len(kept) == 60 and kept.endswith(b"Killed process 4242 (java)\n")
    assert not collect.copy_serial_console("tuned", tmp_path / "run" / "tuned"), "no console: nothing, no error"
