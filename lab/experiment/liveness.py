"""Whether each machine is still alive while the load runs: a cheap probe from the host, so a machine that dies
(QEMU gone, kernel panic, a guest frozen solid) is noticed when it happens, not at collection.

A small Python loop inside the lab namespace opens a TCP connection to each machine's SSH port every PERIOD_S
(the guest's kernel completes the handshake even when its services are swamped, so a failure means the machine
itself is gone) and prints one line per probe. A machine whose probes fail DEAD_AFTER times in a row is dead from
its first failed probe; one that answers again is back. host/liveness.csv holds every probe; run.json
`liveness` sums it up per machine; the load of the other machine goes on, and collection does not wait on a
machine that is still dead (lab/experiment/collect.py)."""
from __future__ import annotations

import json
import subprocess
import sys
import threading
from pathlib import Path

from lab import procs
from lab.experiment import disk

PERIOD_S = 10.0
TIMEOUT_S = 5.0
DEAD_AFTER = 3          # failed probes in a row: ~30 s without an answer
PORT = 22

# argv: period timeout name=ip=port ...; prints {"t", "machine", "ok", "ms"} per probe, flushed
PROBE = r"""
import json, socket, sys, time
period, timeout = float(sys.argv[1]), float(sys.argv[2])
targets = [a.split("=", 2) for a in sys.argv[3:]]
while True:
    started = time.monotonic()
    for name, ip, port in targets:
        t0 = time.monotonic()
        try:
            socket.create_connection((ip, int(port)), timeout=timeout).close()
            ok = True
        except OSError:
            ok = False
        print(json.dumps({"t": round(time.time(), 3), "machine": name, "ok": ok,
                          "ms": round((time.monotonic() - t0) * 1000)}), flush=True)
    time.sleep(max(0.0, period - (time.monotonic() - started)))
"""


def probe_once(ip: str, wrap=lambda argv: argv, port: int = PORT, timeout_s: float = TIMEOUT_S) -> bool:
    """One TCP connection to ip:port (inside the namespace with wrap=netns.wrap): does the machine answer?"""
    code = ("import socket, sys\ntry:\n    socket.create_connection((sys.argv[1], int(sys.argv[2])), "
            "timeout=float(sys.argv[3])).close()\nexcept OSError:\n    sys.exit(1)\n")
    try:
        return subprocess.run(wrap([sys.executable, "-c", code, ip, str(port), str(timeout_s)]),
                              capture_output=True, timeout=timeout_s + 30).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


class MachineWatch:
    """The probe loop while the load runs: start(), then stop() → run.json's summary. `dead()` names the
    machines that are dead now; `on_change(machine, state, since)` is told when one dies or comes back."""

    def __init__(self, run_dir: Path, addresses: dict[str, str], wrap=lambda argv: argv,
                 period_s: float = PERIOD_S, timeout_s: float = TIMEOUT_S, port: int = PORT,
                 on_change=lambda machine, state, since: None, ports: dict[str, int] | None = None) -> None:
        self.path = Path(run_dir) / "host" / "liveness.csv"
        self.addresses = dict(addresses)
        # ports: each machine's SSH port where they differ (real hosts); port for the others
        self.command = wrap([sys.executable, "-c", PROBE, str(period_s), str(timeout_s),
                             *(f"{m}={ip}={(ports or {}).get(m, port)}" for m, ip in self.addresses.items())])
        self.on_change = on_change
        self.state = {m: {"probes": 0, "failed": 0, "failing_since": None, "in_a_row": 0, "dead_at": None,
                          "back_at": None, "deaths": 0} for m in self.addresses}
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self.file: disk.CsvFile | None = None
        self._thread = threading.Thread(target=self._read, name="machine-watch", daemon=True)

    def start(self) -> MachineWatch:
        self.file = disk.CsvFile(self.path, ["time", "machine", "answered", "ms"])   # `cut` says if it stopped
        self._proc = subprocess.Popen(self.command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        self._thread.start()
        return self

    def _read(self) -> None:
        try:
            for line in self._proc.stdout:
                try:
                    probe = json.loads(line)
                except ValueError:
                    continue
                self.file.write([probe["t"], probe["machine"], int(probe["ok"]), probe["ms"]])
                self._count(probe["machine"], probe["ok"], probe["t"])
        finally:
            self.file.close()

    def _count(self, machine: str, ok: bool, at: float) -> None:
        with self._lock:
            s = self.state.get(machine)
            if s is None:
                return
            s["probes"] += 1
            if ok:
                s["in_a_row"], s["failing_since"] = 0, None
                if s["dead_at"] is not None and s["back_at"] is None:
                    s["back_at"] = at
                    self.on_change(machine, "back", at)
                return
            s["failed"] += 1
            s["in_a_row"] += 1
            s["failing_since"] = s["failing_since"] or at
            if s["in_a_row"] == DEAD_AFTER:
                s["dead_at"], s["back_at"], s["deaths"] = s["failing_since"], None, s["deaths"] + 1
                self.on_change(machine, "dead", s["dead_at"])

    def dead(self) -> dict[str, float]:
        """{machine: dead since (epoch s)} for the machines dead now."""
        with self._lock:
            return {m: s["dead_at"] for m, s in self.state.items() if s["dead_at"] is not None and s["back_at"] is None}

    def stop(self) -> dict:
        """Ends the probe loop; {machine: {probes, failed, dead_at, back_at, deaths}} (times epoch s)."""
        if self._proc is not None:
            procs.end(self._proc)
        if self._thread.is_alive():
            self._thread.join(10)
        with self._lock:
            return {m: {k: s[k] for k in ("probes", "failed", "dead_at", "back_at", "deaths")}
                    for m, s in self.state.items()}
