"""A full disk, for real, on a small tmpfs (mounted here, unmounted after; root only) as the results' disk: a run
below its estimated need is refused before anything starts; run.json survives ENOSPC whole; a run whose disk fills
during provisioning or collection says so in run.json with the files left incomplete, writes nothing more and
touches no earlier run folder; the load (real JMeter) stops when the disk runs low and leaves whole JTLs."""
from __future__ import annotations

import csv
import errno
import http.server
import io
import json
import os
import socket
import subprocess
import tarfile
import threading
import time
from concurrent.futures import Future
from pathlib import Path

import pytest

from lab import cli, paths
from lab.experiment import collect, design, disk, finish, load, options, record, reporting, run, trial
from lab.machines import lifecycle
from lab.provision import jars

MB = 1024 * 1024
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")


@pytest.fixture
def small_fs(tmp_path):
    """small_fs(size_mb) → a fresh tmpfs of that size, unmounted at the end of the test."""
    mounted = []

    def mount(size_mb: int) -> Path:
        where = tmp_path / f"fs{len(mounted)}"
        where.mkdir()
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "lab-test", str(where)],
                              capture_output=True, text=True)
        if done.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
        mounted.append(where)
        return where
    yield mount
    for where in reversed(mounted):
        if subprocess.run(["umount", str(where)], capture_output=True).returncode != 0:
            subprocess.run(["umount", "-l", str(where)], check=True)


def fill(fs: Path, leave: int = 0) -> None:
    """Writes fs/filler until the disk is full, then frees `leave` bytes of it again."""
    fd = os.open(fs / "filler", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    try:
        for chunk in (MB, 4096, 1):
            try:
                while True:
                    os.write(fd, b"\0" * chunk)
            except OSError as full:
                assert full.errno == errno.ENOSPC
    finally:
        os.close(fd)
    if leave:
        os.truncate(fs / "filler", max(0, (fs / "filler").stat().st_size - leave))


def started_record(run_dir: Path) -> record.Record:
    run_dir.mkdir(parents=True)
    for side in ("default", "tuned"):
        (run_dir / side).mkdir()
        (run_dir / side / "jmeter.jtl").write_text("timeStamp,elapsed\n")
    rec = record.Record(run_dir, {"run_id": run_dir.name, "status": "running", "phase": "load", "stopped_at": None,
                                  "error": None, "phases": {}})
    rec.reserve()
    return rec


def test_run_json_is_saved_whole_from_the_reserve_when_the_disk_fills(small_fs):
    run_dir = small_fs(4) / "run"
    rec = started_record(run_dir)
    fill(run_dir.parent)
    with pytest.raises(record.DiskFull):        # the phase that was running stops
        rec.update(phase="collect", machines={"default": {"knobs": "x" * 20000}})
    saved = json.loads((run_dir / "run.json").read_text())
    assert (saved["status"], saved["stopped_at"]) == ("failed", "collect")
    assert saved["error"].startswith("disk full at collect") and saved["machines"]
    assert not (run_dir / "run.json.tmp").exists() and not (run_dir / record.RESERVE).exists()
    rec.update(phase="report")                  # later saves do what they can, and raise no more


def test_without_room_run_json_keeps_its_previous_state_and_no_partial_file(small_fs, capsys):
    run_dir = small_fs(2) / "run"
    run_dir.mkdir()
    rec = record.Record(run_dir, {"run_id": "r", "status": "running", "phase": "load"})
    before = (run_dir / "run.json").read_text()
    fill(run_dir.parent)
    with pytest.raises(record.DiskFull):
        rec.update(phase="collect")
    assert (run_dir / "run.json").read_text() == before
    assert sorted(p.name for p in run_dir.iterdir()) == ["run.json"], "no 0-byte run.json.tmp left behind"
    assert "could not be saved (disk full)" in capsys.readouterr().err


def earlier_run(results: Path) -> dict[Path, bytes]:
    earlier = results / "20261126T000000Z-earlier"
    (earlier / "default").mkdir(parents=True)
    (earlier / "run.json").write_text('{"status": "complete"}\n')
    (earlier / "default" / "jmeter.jtl").write_text("timeStamp,elapsed\n1,2\n")
    return {p: p.read_bytes() for p in earlier.rglob("*") if p.is_file()}


def guest_archive(size: int) -> bytes:
    """A machine's collection (run.sh pack) with an incompressible PCP archive of `size` bytes."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tar:
        info = tarfile.TarInfo("./pcp/archive.0")
        info.size = size
        tar.addfile(info, io.BytesIO(os.urandom(size)))
    return buf.getvalue()


def test_a_collection_that_fills_the_disk_is_named_and_nothing_more_is_written(small_fs, monkeypatch, capsys):
    results = small_fs(8) / "results"
    kept = earlier_run(results)
    monkeypatch.setattr(disk, "FLOOR_BYTES", 2 * MB)        # the floor, scaled to an 8 MB disk (above the reserve)
    rec = started_record(results / "20261127T000000Z-run")
    run_dir = rec.path.parent
    archive = guest_archive(6 * MB)             # two machines' 6 MB into ~7 MB free
    monkeypatch.setattr(collect, "_guest", lambda name, args, timeout: subprocess.CompletedProcess(args, 0, archive))
    monkeypatch.setattr(collect, "copy_serial_console", lambda name, target: False)
    monkeypatch.setattr(load, "dashboards", lambda *a, **k: pytest.fail("dashboards written on a full disk"))
    monkeypatch.setattr(reporting, "report_command", lambda *a, **k: pytest.fail("a report written on a full disk"))
    finish.finish(design.plan()[0], rec, run_dir, run_dir.name, marked_at=1.0, log=lambda line: None)
    saved = json.loads((run_dir / "run.json").read_text())
    assert (saved["status"], saved["stopped_at"]) == ("failed", "collect")
    assert saved["error"].startswith("disk full at collect")
    assert any(f.endswith("pcp/archive.0") for f in saved["incomplete"]), saved["incomplete"]
    assert all(saved["finish_errors"][step].startswith("skipped: the disk is full")
               for step in ("dashboards", "report"))
    assert not (run_dir / "run.json.tmp").exists() and not (run_dir / record.RESERVE).exists()
    assert {p: p.read_bytes() for p in kept} == kept, "an earlier run folder was touched"
    err = capsys.readouterr().err
    assert "the disk filled during collect" in err and "pcp/archive.0" in err and "./start.sh report" in err


def test_a_run_whose_disk_fills_during_provisioning_says_so(small_fs, monkeypatch):
    fs = small_fs(8)
    monkeypatch.setattr(paths, "RESULTS", fs / "results")
    monkeypatch.setattr(disk, "FLOOR_BYTES", 2 * MB)
    kept = earlier_run(fs / "results")
    monkeypatch.setattr(lifecycle, "ensure_up",
                        lambda s, suites: {"machines": {"default": "192.0.2.1", "tuned": "192.0.2.2"}})
    built = Future()
    built.set_result([])
    monkeypatch.setattr(jars, "jars_beside", lambda log=print: built)
    monkeypatch.setattr(load, "jmeter_beside", lambda log=print: built)
    monkeypatch.setattr(trial.playbook, "run", lambda *a, **k: fill(fs))    # Ansible's log grows on the same disk
    monkeypatch.setattr(collect, "copy_serial_console", lambda vm, target: False)
    monkeypatch.setattr(reporting, "report_command", lambda *a, **k: pytest.fail("a report written on a full disk"))
    assert run.execute(options.checked(label="full"), s=None, log=lambda line: None) == 1
    [run_dir] = [d for d in (fs / "results").iterdir() if d.name.endswith("-full")]
    saved = json.loads((run_dir / "run.json").read_text())
    assert (saved["status"], saved["stopped_at"]) == ("failed", "provision")
    assert saved["error"].startswith("disk full at provision")
    assert saved["finish_errors"]["report"].startswith("skipped: the disk is full")
    assert sorted(p.name for p in run_dir.iterdir()) == ["knobs-catalog.json", "run.json"]
    assert {p: p.read_bytes() for p in kept} == kept


def test_a_run_is_refused_below_its_estimated_need(small_fs, monkeypatch, capsys):
    fs = small_fs(16)
    monkeypatch.setattr(paths, "RESULTS", fs / "results")
    monkeypatch.setattr(lifecycle, "ensure_up", lambda s, suites: pytest.fail("must not bring anything up"))
    assert cli.main(["--users", "150", "--duration", "20m"]) == 1
    err = capsys.readouterr().err
    need, how = disk.estimate(load.Profile())
    assert "not enough free disk" in err and f"needs ~{(need + disk.FLOOR_BYTES) / MB:.0f} MB" in err and how in err
    assert not (fs / "results").exists()


def test_the_estimate_follows_the_load():
    small, _ = disk.estimate(load.Profile(users=10, ramp_up_s=15, duration_s=150))
    assert 5 * MB < small < 30 * MB          # the fixture's run of this shape left ~4.4 MB
    full, how = disk.estimate(load.Profile())
    assert 250 * MB < full < 500 * MB and "150 users" in how
    assert disk.estimate(load.Profile(model="open", rate_per_s=10))[0] < full


class Answering(http.server.BaseHTTPRequestHandler):
    """Any request answered at once: the load's stand-in for the machines."""
    protocol_version = "HTTP/1.1"

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        body = b'{"id": 1}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *args) -> None:
        pass


def test_the_load_stops_before_the_disk_is_full_and_its_jtls_stay_whole(small_fs, monkeypatch):
    """Real JMeter: once both JTLs grow, something else takes the disk down to below the floor (as a long run's own
    files would, in its time): the load is stopped within seconds, JMeter's own writes never having failed."""
    fs = small_fs(64)
    monkeypatch.setattr(disk, "FLOOR_BYTES", 16 * MB)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answering)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    target = f"http://127.0.0.1:{server.server_address[1]}"
    jtls = [fs / "run" / m / "jmeter.jtl" for m in load.MACHINES]
    filled_at = []

    def take_the_disk() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not all(p.exists() and p.stat().st_size > 2000 for p in jtls):
            time.sleep(0.5)
        with open(fs / "filler", "wb") as filler:
            filler.write(b"\0" * (disk.free_bytes(fs) - disk.FLOOR_BYTES + MB))
        filled_at.append(time.monotonic())
    threading.Thread(target=take_the_disk, daemon=True).start()
    said = []
    try:
        with pytest.raises(load.LoadError, match="disk full at load") as stopped:
            load.run(fs / "run", {"default": target, "tuned": target},
                     load.Profile(users=1, ramp_up_s=0, duration_s=90), progress=said.append, progress_every_s=2)
    finally:
        server.shutdown()
    assert filled_at and time.monotonic() - filled_at[0] < 45, said
    result = stopped.value.result
    assert result.ended_by == "disk full" and not result.interrupted, said
    for machine, jtl in zip(load.MACHINES, jtls, strict=True):
        assert jtl.read_text().endswith("\n")
        with open(jtl, newline="") as f:
            records = list(csv.reader(f))
        assert all(len(r) == 17 for r in records) and len(records) - 1 == result.samples[machine] > 0


def test_the_watches_go_on_counting_when_the_disk_fills_and_their_csvs_are_listed_incomplete(small_fs, monkeypatch):
    """The load generator's and the machines' watches write their CSVs on the results' disk: when it fills they
    stop writing (no exception in their threads; here from their first row) and go on counting, so run.json
    gets their summaries, and the trial lists both CSVs in run.json's incomplete."""
    from lab.experiment import instruments, liveness
    fs = small_fs(2)
    run_dir = fs / "run"
    rec = started_record(run_dir)
    busy = subprocess.Popen(["python3", "-c", "import time\nend = time.time() + 8\nwhile time.time() < end: pass"])
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    watch = instruments.LoadGeneratorWatch(run_dir)
    alive = liveness.MachineWatch(run_dir, {"default": "127.0.0.1", "tuned": "127.0.0.1"}, period_s=0.1,
                                  timeout_s=1.0, port=server.getsockname()[1])
    try:
        rec.release_reserve()
        fill(fs)            # before they start: their first rows need a new block (a page's slack hides a few)
        watch.started(busy.pid)
        alive.start()
        time.sleep(3.5)
        t = trial.TrialRun.__new__(trial.TrialRun)
        t.watch, t.alive, t.record, t.run_dir = watch, alive, rec, run_dir
        t.host = None
        t.t = t.run_id = t.marked_at = t.log = None
        t.addresses, t.ssh_ports = {}, {}
        t.opts = options.Options()      # the run's options: finish reads whether it makes the dashboards
        monkeypatch.setattr(finish, "finish", lambda *args, **kwargs: None)
        os.truncate(fs / "filler", (fs / "filler").stat().st_size - 256 * 1024)     # room for run.json
        t.finish()
    finally:
        busy.kill()
        busy.wait()
        server.close()
    assert watch.file.cut == "the disk filled" and alive.file.cut == "the disk filled"
    assert len(watch.rows) >= 3 and rec.data["load_generator"]["seconds"] >= 3
    assert all(s["probes"] > len((run_dir / "host" / "liveness.csv").read_text().splitlines()) / 2
               for s in rec.data["liveness"].values())
    saved = json.loads((run_dir / "run.json").read_text())
    assert {"host/load-generator.csv", "host/liveness.csv"} <= set(saved["incomplete"])
