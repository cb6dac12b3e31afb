"""End to end on system containers: a hostile customer's service (tests/hostile/) whose build, main() (started on the
host by `service check` and by jvm_cds's training start) and plan (with --allow-plan-code) each try to read a
root-only file, write outside their folder and connect to a service on the host's loopback (docs/security.md). None
succeeds, what each tried is said where the lab keeps it, and while it all runs no process running the customer's
code on the host has uid 0: read from /proc every 0.1 s, not assumed. Runs on the containers tests/conftest.py
brought up, after the containers' own e2e.

Needs root and Docker (./start.sh prereqs installs docker.io); under CI=true it always runs.
"""
import json
import os
import shutil
import socket
import sys
import threading
import time
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.lab_e2e import NEEDS_ROOT, ROOT, run_folders, the_labs_user  # noqa: E402
from tests.lab_e2e import on_containers as start  # noqa: E402

pytestmark = NEEDS_ROOT

HOSTILE = ROOT / "tests" / "hostile"
DESCRIPTOR = HOSTILE / "hostile.yml"
JAR = HOSTILE / "camel3" / "target" / "lab-hostile.jar"
# what tests/hostile's build, main() and plan reach for (their sources name the same)
FOLDER = Path("/run/camel-lab-hostile")
SECRET = "root's secret, never to be read\n"
PORT = 47815
MARKS = [Path("/tmp/camel-lab-hostile-build"), Path("/tmp/camel-lab-hostile-main"), Path("/tmp/camel-lab-hostile-plan")]
PLANTED = ("planted-by-build", "planted-by-main", "planted-by-plan")
RUN = ["--allow-plan-code", "--service", str(DESCRIPTOR), "--users", "2", "--ramp-up", "5s", "--duration", "30s",
       "--set", "tuned:jvm_cds=true", "--label", "e2e-hostile"]


class Listener:
    """A service of the host's on its loopback (PORT): every connection that reached it, counted."""

    def __init__(self) -> None:
        self.reached: list[str] = []
        self.socket = socket.socket()
        self.socket.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.socket.bind(("127.0.0.1", PORT))
        self.socket.listen()
        self.socket.settimeout(0.5)
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.done.is_set():
            try:
                conn, peer = self.socket.accept()
            except OSError:
                continue
            self.reached.append(str(peer))
            conn.close()

    def close(self) -> None:
        self.done.set()
        self.thread.join(5)
        self.socket.close()


class Watch:
    """Every process of the host's (its own PID namespace: the machines' are the containers') that runs the
    customer's code: a JVM started with the hostile jar, in a folder of its, or loading its plan, and Maven building
    it; with the user the kernel shows it running as."""
    CODE = ("lab-hostile", "hostile.jmx", "/hostile/", "/cds/made/", "PlanInspect", "ApacheJMeter.jar",
            "plexus-classworlds")

    def __init__(self) -> None:
        self.seen: dict[int, tuple[int, str]] = {}      # pid: (real uid, what it ran)
        self.host_pid_ns = os.readlink("/proc/self/ns/pid")
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        while not self.done.is_set():
            for proc in Path("/proc").glob("[0-9]*"):
                try:
                    if os.readlink(proc / "ns" / "pid") != self.host_pid_ns or (proc / "comm").read_text() != "java\n":
                        continue
                    cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                    where = os.readlink(proc / "cwd")
                    uid = int(next(line for line in (proc / "status").read_text().splitlines()
                                   if line.startswith("Uid:")).split()[1])
                except (OSError, StopIteration, ValueError):
                    continue
                if any(mark in cmd or mark in where for mark in self.CODE):
                    self.seen.setdefault(int(proc.name), (uid, f"{where}: {cmd}"))
            time.sleep(0.1)

    def close(self) -> None:
        self.done.set()
        self.thread.join(5)

    def ran(self, mark: str) -> list[tuple[int, str]]:
        return [seen for seen in self.seen.values() if mark in seen[1]]


@pytest.fixture(scope="module")
def hostile(containers_up):
    FOLDER.mkdir(mode=0o700, exist_ok=True)
    (FOLDER / "secret").write_text(SECRET)
    for path in [*MARKS, *(FOLDER / name for name in PLANTED)]:
        path.unlink(missing_ok=True)
    shutil.rmtree(HOSTILE / "camel3" / "target", ignore_errors=True)        # its build runs in this test
    listener, watch = Listener(), Watch()
    results = ROOT / "results"
    before = run_folders(results)
    try:
        checked = start("--allow-plan-code", "service", "check", str(DESCRIPTOR), timeout=20 * 60)
        print(checked.stdout[-3000:], checked.stderr[-2000:])
        run = start(*RUN, timeout=30 * 60)
        print(run.stdout[-5000:], run.stderr[-3000:])
    finally:
        watch.close()
        listener.close()
    made = sorted(run_folders(results) - before)
    yield {"check": checked, "run": run, "folder": made[-1] if made else None, "listener": listener, "watch": watch}
    shutil.rmtree(FOLDER, ignore_errors=True)


def test_the_hostile_service_is_checked_and_run(hostile):
    assert hostile["check"].returncode == 0, hostile["check"].stdout[-3000:] + hostile["check"].stderr[-3000:]
    assert f"started      as camel-lab (uid {the_labs_uid()})" in hostile["check"].stdout
    run = hostile["run"]
    assert run.returncode == 0, f"./start.sh failed:\n{run.stdout[-4000:]}\n{run.stderr[-3000:]}"
    record = json.loads((hostile["folder"] / "run.json").read_text())
    assert record["status"] == "complete" and record["service"]["name"] == "hostile"
    assert record["load"]["runs_as"]["read_all"] is False
    the_labs_user(record["load"]["runs_as"])


def the_labs_uid() -> int:
    import pwd
    return pwd.getpwnam("camel-lab").pw_uid


def test_no_process_running_its_code_on_the_host_had_uid_0(hostile):
    watch = hostile["watch"]
    for kind in ("plexus-classworlds", "PlanInspect", "lab-hostile.jar", "/cds/made/hostile", "ApacheJMeter.jar"):
        assert watch.ran(kind), f"no {kind} process was seen: {[what[:200] for _, what in watch.seen.values()]}"
    as_root = [what for uid, what in watch.seen.values() if uid == 0]
    assert as_root == [], as_root
    assert {uid for uid, _ in watch.seen.values()} == {the_labs_uid()}


def test_nothing_reached_the_hosts_loopback(hostile):
    assert hostile["listener"].reached == []


def test_nothing_was_written_outside_its_folder(hostile):
    assert [p for p in MARKS if p.exists()] == [], "its /tmp was the host's"
    assert sorted(p.name for p in FOLDER.iterdir()) == ["secret"]


def test_each_refusal_is_said_where_the_lab_keeps_it(hostile):
    with zipfile.ZipFile(JAR) as jar:           # what its build read: written into the jar by the build
        assert jar.read("BOOT-INF/classes/hostile-build.txt").decode().split() == ["read", "REFUSED"]
    service_log = (ROOT / ".lab" / "services" / "hostile" / "service.log").read_text()
    [training] = list((ROOT / ".lab" / "cds" / "made").glob("hostile-camel3-*/app.jsa.log"))
    for said in (service_log, training.read_text()):      # service check's start, the training start
        tried = dict(line.split(" ", 3)[2:] for line in said.splitlines() if line.startswith("hostile main: "))
        assert tried["user"] == "camel-lab", said[-2000:]
        for attempt in ("read", "write-root", "connect"):
            assert tried[attempt].startswith("REFUSED"), f"{attempt}: {tried[attempt]}"
    jmeter_log = (hostile["folder"] / "jmeter.log").read_text()
    assert "File secret must exist and be readable" in jmeter_log, "JMeter's log says nothing of what it could not read"
    assert SECRET.strip() not in jmeter_log + service_log + training.read_text()
