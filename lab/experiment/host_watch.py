"""The host watched while the load runs: CPU taken by processes that are not the lab's (a build, a backup, a
browser, another benchmark), each named with its share, so the report can say when the machines and JMeter shared
the host with something else. Under TCG or with containers the twins and JMeter fill the host's cores: whatever
else runs takes its CPU from them, and on pinned VMs from one machine more than the other.

The lab's own processes are: this process and its descendants (JMeter, ssh), the daemons it recorded (.lab/run:
libvirtd, virtlogd, dockerd, slirp4netns) and theirs, whatever runs in the lab's network namespace (QEMU, dnsmasq)
or in its containers' cgroups (camel-lab/<id>), and the containers' shims (their command names the lab's Docker
runtime folder). Kernel threads are counted apart: they mostly carry the lab's own traffic and disk writes.

host/outside.csv: one row per process outside the lab that took CPU during the load (pid, command, cpu_s,
cpu_pct of the host's capacity: all its cores over the load's seconds). run.json `host_outside` sums it up and
says whether it passed OUTSIDE_WARN_PCT."""
from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from lab import paths, procs
from lab.experiment import disk
from lab.machines import containers, netns

SAMPLE_S = 2.0      # between two scans of /proc: a process that lives less long is seen once or not at all
# The report warns when processes outside the lab took at least this share of the host's CPU (all its cores) over
# the load. Measured (docs/methods.md, The host watched): a quiet host's own background took 0.08 %; an outsider cost
# the lab's throughput about twice its own share (4.4 % → −10 %, 19 % → −35 %), so from 2 % it moves a figure by
# about the smallest difference the lab resolves on containers (A/A intervals ±3-7 %).
OUTSIDE_WARN_PCT = 2.0
NAMED = 5           # the heaviest outsiders named in run.json and the report
PF_KTHREAD = 0x00200000
CLK_TCK = os.sysconf("SC_CLK_TCK")
PROC = Path("/proc")


@dataclass(frozen=True)
class Seen:
    """One process at one scan: its CPU (user + system, seconds), its ended children's that it reaped (the same),
    and when it started (clock ticks since boot)."""
    pid: int
    ppid: int
    start: int
    cpu_s: float
    children_s: float
    kernel: bool


def _stat(pid: int) -> Seen | None:
    try:
        fields = (PROC / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return Seen(pid, int(fields[1]), int(fields[19]), (int(fields[11]) + int(fields[12])) / CLK_TCK,
                (int(fields[13]) + int(fields[14])) / CLK_TCK,
                bool(int(fields[6]) & PF_KTHREAD) or pid == 2 or int(fields[1]) == 2)


def scan() -> dict[tuple[int, int], Seen]:
    """Every process now, keyed by (pid, start): a PID reused between two scans is another process."""
    found = {}
    for entry in PROC.iterdir():
        if entry.name.isdigit() and (seen := _stat(int(entry.name))) is not None:
            found[(seen.pid, seen.start)] = seen
    return found


def command(pid: int) -> str:
    """What the process runs, for naming it: its program, and the script an interpreter runs when its first argument
    is a file; never the other arguments (another user's command line may carry a password or a token). Its name in
    brackets when it has no command line (a kernel thread)."""
    try:
        argv = (PROC / str(pid) / "cmdline").read_bytes().decode(errors="replace").split("\0")
        if not argv[0]:
            return f"[{(PROC / str(pid) / 'comm').read_text().strip()}]"
    except OSError:
        return "?"
    script = next((a for a in argv[1:] if a and not a.startswith("-")), None)
    shown = argv[0] + (f" {script}" if script and "/" in script and Path(script).is_file() else "")
    return shown[:120]


def lab_roots() -> set[int]:
    """This process and the daemons the lab recorded (alive and still the process it started)."""
    roots = {os.getpid()}
    for name in procs.names():
        if procs.alive(name) and (pid := procs.recorded(name)) is not None:
            roots.add(pid)
    return roots


def _in_lab_cgroup(pid: int) -> bool:
    try:
        return f"/{containers.CGROUP_PARENT}/" in (PROC / str(pid) / "cgroup").read_text()
    except OSError:
        return False


class Classifier:
    """Whether a process is the lab's, decided once per process (a process does not change owner)."""

    def __init__(self, roots: set[int]) -> None:
        self.roots = roots
        self.known: dict[tuple[int, int], bool] = {}

    def is_lab(self, seen: Seen, by_pid: dict[int, Seen]) -> bool:
        """by_pid: the scan's processes by PID, where the parent is looked up."""
        key = (seen.pid, seen.start)
        if key not in self.known:
            self.known[key] = self._decide(seen, by_pid)
        return self.known[key]

    def _decide(self, seen: Seen, by_pid: dict[int, Seen]) -> bool:
        if seen.pid in self.roots or netns.in_lab_netns(seen.pid) or _in_lab_cgroup(seen.pid):
            return True
        line = procs.cmdline(seen.pid)      # the whole line, to tell the lab's by its folders (never recorded)
        if str(containers.RUNTIME_DIR) in line or str(paths.STATE_DIR) in line:
            return True
        parent = by_pid.get(seen.ppid)
        return parent is not None and parent.pid > 1 and self.is_lab(parent, by_pid)


class HostWatch:
    """A thread scanning /proc every SAMPLE_S from the load's start (load.run's `beside` calls started) to stop():
    the CPU each process outside the lab took in between."""

    def __init__(self, run_dir: Path, roots: set[int] | None = None) -> None:
        self.path = Path(run_dir) / "host" / "outside.csv"
        self.roots = roots
        self.cpu: dict[tuple[int, int], float] = {}      # outside processes: CPU seconds during the load
        self.names: dict[tuple[int, int], str] = {}
        self.kernel_s = 0.0
        self.lab_s = 0.0
        self.seconds = 0.0
        self.cpus = os.cpu_count() or 1
        self.file: disk.CsvFile | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="host-watch", daemon=True)

    def started(self, pid: int) -> None:        # JMeter's pid: a descendant of this process, the lab's
        self._thread.start()

    def _loop(self) -> None:
        classify = Classifier(self.roots if self.roots is not None else lab_roots())
        last, began = scan(), time.monotonic()
        while not self._stop.wait(SAMPLE_S):
            self._account(last, now := scan(), classify)
            last = now
        self._account(last, scan(), classify)
        self.seconds = time.monotonic() - began
        self._write()

    def _account(self, before: dict, now: dict, classify: Classifier) -> None:
        """The CPU each process took between two scans: its own, and its children's that ended and were reaped in
        between (a compiler run by make between two scans), less what was already counted of those seen before."""
        by_pid = {seen.pid: seen for seen in now.values()}
        counted_gone: dict[int, float] = {}         # parent → the CPU already counted of its children now gone
        for key, gone in before.items():
            if key not in now:
                counted_gone[gone.ppid] = counted_gone.get(gone.ppid, 0.0) + gone.cpu_s + gone.children_s
        for key, seen in now.items():
            earlier = before.get(key)
            if earlier is None:         # started since the last scan: all of its life (and its reaped children's)
                used = seen.cpu_s + seen.children_s
            else:
                reaped = seen.children_s - earlier.children_s - counted_gone.get(seen.pid, 0.0)
                used = seen.cpu_s - earlier.cpu_s + max(0.0, reaped)
            if used <= 0:
                continue
            if seen.kernel:
                self.kernel_s += used
            elif classify.is_lab(seen, by_pid):
                self.lab_s += used
            else:
                self.cpu[key] = self.cpu.get(key, 0.0) + used
                self.names.setdefault(key, command(seen.pid))

    def _write(self) -> None:
        capacity_s = max(self.seconds, 1e-9) * self.cpus
        out = self.file = disk.CsvFile(self.path, ["pid", "command", "cpu_s", "cpu_pct"])
        try:
            for key, cpu_s in sorted(self.cpu.items(), key=lambda kv: -kv[1]):
                out.write((key[0], self.names[key], round(cpu_s, 2), round(100 * cpu_s / capacity_s, 2)))
        finally:
            out.close()

    def stop(self) -> dict:
        """Ends the watch; run.json's host_outside."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(30)
        return summarise(self.cpu, self.names, self.kernel_s, self.lab_s, self.seconds, self.cpus)


def summarise(cpu: dict, names: dict, kernel_s: float, lab_s: float, seconds: float, cpus: int) -> dict:
    """run.json's host_outside: the outsiders' share of the host's capacity, the heaviest ones named, the kernel's
    and the lab's shares, and whether it passed OUTSIDE_WARN_PCT."""
    if seconds <= 0:
        return {"seconds": 0, "warn": None, "why": "not watched"}
    capacity = seconds * cpus

    def share(cpu_s: float) -> float:
        return round(100 * cpu_s / capacity, 2)
    heaviest = sorted(cpu.items(), key=lambda kv: -kv[1])[:NAMED]
    outside = share(sum(cpu.values()))
    return {"seconds": round(seconds, 1), "host_cpus": cpus, "outside_cpu_pct": outside,
            "kernel_cpu_pct": share(kernel_s), "lab_cpu_pct": share(lab_s),
            "heaviest": [{"pid": key[0], "command": names[key], "cpu_pct": share(cpu_s)} for key, cpu_s in heaviest],
            "warn": outside >= OUTSIDE_WARN_PCT, "threshold_pct": OUTSIDE_WARN_PCT}
