"""One command at a time changes a lab (lab/lock.py): real processes contend for the lock, a holder that dies
leaves it to the next one (said so), what the holder starts never keeps it, and `./start.sh down` or a second run
during a run are refused through the command line, naming the holder."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab import cli, lock, paths
from lab.machines import lifecycle

RUN_ID = "20261127T120000Z-holder"
HOLDER = """
import subprocess, sys, time
from pathlib import Path
from lab import cli, lock
cli.interruptible()                 # SIGTERM as the lab takes it: KeyboardInterrupt
with lock.hold("./start.sh --label holder", Path(sys.argv[1])):
    lock.note(sys.argv[2])
    if sys.argv[3:] == ["child"]:   # something the lab starts (a daemon, JMeter), inheriting what it may
        print(subprocess.Popen(["sleep", "120"], close_fds=False).pid, flush=True)
    print("held", flush=True)
    time.sleep(120)
"""


def start_holder(path: Path, *extra: str) -> tuple[subprocess.Popen, list[str]]:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), RUN_ID, *extra], cwd=paths.ROOT,
                            stdout=subprocess.PIPE, text=True)
    said = []
    while not said or said[-1] != "held":
        line = proc.stdout.readline()
        assert line, f"the holder ended before it held the lock (exit {proc.wait()})"
        said.append(line.strip())
    return proc, said


@pytest.fixture
def holders():
    started = []
    yield started
    for proc in started:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_a_second_command_is_refused_naming_the_holder_until_it_ends(tmp_path, holders):
    path = tmp_path / "lock"
    proc, _ = start_holder(path)
    holders.append(proc)
    with pytest.raises(lock.Busy) as refused:
        with lock.hold("./start.sh down", path):
            pytest.fail("two holders at once")
    said = str(refused.value)
    assert f"PID {proc.pid}" in said and f"run {RUN_ID}" in said and "./start.sh --label holder" in said
    assert f"kill -INT {proc.pid}" in said
    proc.send_signal(signal.SIGTERM)            # as Ctrl-C: the holder's `with` ends and releases
    assert proc.wait(30) != 0
    assert lock.holder(path) is None, "a clean release names nobody"
    told = []
    with lock.hold("./start.sh down", path, log=told.append) as info:
        assert lock.holder(path)["pid"] == os.getpid() == info["pid"]
    assert told == [], "nobody died"


def test_a_dead_holders_lock_is_taken_over_and_said_so(tmp_path, holders):
    path = tmp_path / "lock"
    proc, _ = start_holder(path)
    holders.append(proc)
    proc.kill()                 # SIGKILL: no `finally` runs; the kernel releases the flock, the file still names it
    proc.wait()
    told = []
    with lock.hold("./start.sh", path, log=told.append):
        pass
    assert len(told) == 1 and f"PID {proc.pid}" in told[0] and f"run {RUN_ID}" in told[0] and "died" in told[0]


def test_what_the_holder_started_does_not_keep_the_lock(tmp_path, holders):
    path = tmp_path / "lock"
    proc, said = start_holder(path, "child")
    holders.append(proc)
    child = int(said[0])
    try:
        proc.kill()
        proc.wait()
        os.kill(child, 0)           # the holder's child still runs
        with lock.hold("./start.sh", path, log=lambda line: None):
            pass
    finally:
        os.kill(child, signal.SIGKILL)


def test_an_exception_or_ctrl_c_releases_the_lock(tmp_path):
    path = tmp_path / "lock"
    for raised in (RuntimeError("a phase failed"), KeyboardInterrupt()):
        with pytest.raises(type(raised)), lock.hold("./start.sh", path):
            raise raised
        assert lock.holder(path) is None
    with lock.hold("./start.sh", path, log=lambda line: pytest.fail(line)):
        with lock.hold("./start.sh nested", path):         # the same process: re-entrant, not refused
            pass


@pytest.mark.parametrize("argv", [["down"], ["up"], ["provision"], ["--users", "5", "--duration", "1m"]])
def test_down_or_a_second_run_during_a_run_is_refused(argv, tmp_path, monkeypatch, capsys, holders):
    monkeypatch.setattr(lock, "PATH", tmp_path / "lock")
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    for what in ("down", "up", "ensure_up", "install_prereqs"):
        monkeypatch.setattr(lifecycle, what, lambda *a, _w=what: pytest.fail(f"{_w} ran while another holds the lab"))
    proc, _ = start_holder(tmp_path / "lock")
    holders.append(proc)
    assert cli.main(argv) == 1
    err = capsys.readouterr().err
    assert "the lab is busy" in err and f"PID {proc.pid}" in err and f"run {RUN_ID}" in err
    assert not (tmp_path / "results").exists()


def test_commands_that_only_read_do_not_wait_for_the_lock(tmp_path, monkeypatch, capsys, holders):
    monkeypatch.setattr(lock, "PATH", tmp_path / "lock")
    proc, _ = start_holder(tmp_path / "lock")
    holders.append(proc)
    started = time.monotonic()
    assert cli.main(["report", str(tmp_path)]) == 2         # refused for what it is, not for the lock
    assert "not a run folder" in capsys.readouterr().err and time.monotonic() - started < 10
