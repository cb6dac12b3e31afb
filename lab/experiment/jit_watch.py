"""Each machine's JIT while the load runs, for --until-settled (lab/experiment/load/settle.py): the steady state
counts from where the JIT went quiet, and a load that ended on a flat throughput alone would end while a C2 compiler
still takes a CPU (20261202T022034Z-s74-petclinic-tune-confir-vs-default: settled in 2 minutes, compiling at 1.1
CPUs through the window).

One SSH session per machine for the whole load runs a small loop on the machine that reads the kit's counter
jvm_compilation_time_ms_total (kit/README.md, summed over its compilers) every PERIOD_S and prints it; the host
stamps each reading with its own clock (the JTLs' clock). host/jit.csv keeps every reading. A machine whose page
went unanswered for STALE_S or more is left out of `compiled()`: the load then judges it by its throughput alone
(load.settled records which)."""
from __future__ import annotations

import shlex
import subprocess
import threading
import time
from pathlib import Path

from lab import procs
from lab.experiment import descriptor, disk
from lab.machines import reach

PERIOD_S = 10.0
STALE_S = 3.5 * PERIOD_S
METRIC = "jvm_compilation_time_ms_total"


def loop_script(port: int, period_s: float = PERIOD_S) -> str:
    """The machine's side: one line "<compiling ms>" per PERIOD_S, nothing when the page did not answer."""
    url = shlex.quote(f"http://127.0.0.1:{port}/metrics?names={METRIC}")
    return (f"while :; do if page=$(curl -fsS -m 5 {url}); then printf '%s\\n' \"$page\" | "
            f"awk '/^{METRIC}/ {{s += $NF; n++}} END {{if (n) print s}}'; fi; sleep {period_s:g}; done")


class JitWatch:
    """start(), `compiled()` while the load runs (settle.Compiled), stop() → run.json's summary."""

    def __init__(self, run_dir: Path, commands: dict[str, list[str]], clock=time.time) -> None:
        self.path = Path(run_dir) / "host" / "jit.csv"
        self.commands = commands        # machine → the argv that prints its readings (reach.ssh_command)
        self.clock = clock
        self.readings: dict[str, tuple[list[float], list[float]]] = {m: ([], []) for m in commands}
        self._lock = threading.Lock()
        self._procs: dict[str, subprocess.Popen] = {}
        self._threads: list[threading.Thread] = []
        self.file: disk.CsvFile | None = None

    def start(self) -> JitWatch:
        self.file = disk.CsvFile(self.path, ["time", "machine", "compiling_ms"])
        for machine, argv in self.commands.items():
            self._procs[machine] = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                                    stdin=subprocess.DEVNULL, text=True)
            thread = threading.Thread(target=self._read, args=(machine,), name=f"jit-{machine}", daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def _read(self, machine: str) -> None:
        for line in self._procs[machine].stdout:
            try:
                ms = float(line)
            except ValueError:
                continue
            at = self.clock()
            with self._lock:
                times, seconds = self.readings[machine]
                times.append(at)
                seconds.append(ms / 1000.0)
                self.file.write([round(at, 3), machine, ms])

    def compiled(self) -> dict[str, tuple[list[float], list[float]]]:
        """The machines read within STALE_S: {machine: (epoch seconds, compiling seconds)} (copies)."""
        now = self.clock()
        with self._lock:
            return {m: (list(t), list(s)) for m, (t, s) in self.readings.items() if t and now - t[-1] < STALE_S}

    def stop(self) -> dict:
        """Ends the sessions; {machine: {readings, compiling_s}} for run.json (compiling_s: the last reading)."""
        for proc in self._procs.values():
            procs.end(proc)
        for thread in self._threads:
            thread.join(10)
        if self.file is not None:
            self.file.close()
        with self._lock:
            return {m: {"readings": len(t), "compiling_s": round(s[-1], 1) if s else None}
                    for m, (t, s) in self.readings.items()}


def watching(run_dir: Path, machines) -> JitWatch:
    """The watch of these machines, reached as every command towards them is (reach.py), started."""
    script = loop_script(descriptor.kit_metrics_port())
    return JitWatch(run_dir, {m: reach.ssh_command(m, script) for m in machines}).start()
