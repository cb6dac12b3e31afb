"""The load generator watched on the host while the load runs, so the report can say whether JMeter itself
was short of CPU (the machines' own instruments are PCP and the profiler, started by collect.mark).

host/load-generator.csv, one row a second: JMeter's CPU (% of one core), the host's busy share (% of all
its cores) and the timer lag: how late a thread that sleeps TICK_S wakes up, worst and mean over the second
(a host short of CPU wakes its threads late, JMeter's timers and samplers included). run.json
`load_generator` sums it up and says whether the generator was saturated (see SATURATED_*)."""
from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from lab.experiment import disk

TICK_S = 0.05                   # the sleeper's period: the timer lag's resolution
# The generator counts as saturated when JMeter used ≥ 90 % of the host's cores, or threads woke ≥ 100 ms
# late (p99 of the seconds' worst). A busy host alone is not it: under emulation the machines keep the
# host's cores busy by design, and what matters is whether JMeter got the CPU when it needed it.
SATURATED_JMETER_CPU = 0.9
SATURATED_LAG_MS = 100
CLK_TCK = os.sysconf("SC_CLK_TCK")


def _process_cpu_s(pid: int) -> float | None:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def _host_cpu() -> tuple[float, float]:
    """(busy, total) jiffies of all CPUs since boot (/proc/stat; idle and iowait are not busy)."""
    values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return sum(values) - idle, sum(values)


class LoadGeneratorWatch:
    """A thread sampling JMeter's process and the host once a second into host/load-generator.csv; given
    to load.run as its `beside`, which calls started(JMeter's pid)."""

    def __init__(self, run_dir: Path) -> None:
        self.path = Path(run_dir) / "host" / "load-generator.csv"
        self.rows: list[tuple[float, float | None, float, float, float]] = []
        self.pid: int | None = None
        self.file: disk.CsvFile | None = None       # made when sampling starts; its `cut` says if it stopped
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="load-generator-watch", daemon=True)

    def started(self, pid: int) -> None:
        self.pid = pid
        self._thread.start()

    def _loop(self) -> None:
        cpus = os.cpu_count() or 1
        last_cpu, (last_busy, last_total), last = _process_cpu_s(self.pid), _host_cpu(), time.monotonic()
        out = self.file = disk.CsvFile(self.path, ["time", "jmeter_cpu_pct", "host_busy_pct", "host_cpus",
                                                   "timer_lag_ms_max", "timer_lag_ms_mean"])
        try:
            while not self._stop.is_set():
                lags = []
                until = last + 1.0
                while (now := time.monotonic()) < until and not self._stop.is_set():
                    time.sleep(TICK_S)
                    lags.append(max(0.0, time.monotonic() - now - TICK_S) * 1000)
                now = time.monotonic()
                cpu, (busy, total) = _process_cpu_s(self.pid), _host_cpu()
                span = now - last
                jmeter = 100 * (cpu - last_cpu) / span if cpu is not None and last_cpu is not None else None
                host = 100 * (busy - last_busy) / (total - last_total) if total > last_total else 0.0
                row = (round(time.time(), 3), None if jmeter is None else round(jmeter, 1), round(host, 1), cpus,
                       round(max(lags, default=0.0), 1), round(sum(lags) / len(lags), 2) if lags else 0.0)
                out.write(row)
                self.rows.append(row)
                last_cpu, last_busy, last_total, last = cpu, busy, total, now
        finally:
            out.close()

    def stop(self) -> dict:
        """Ends the sampling; the summary for run.json (None figures when it never sampled)."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        return summarise(self.rows)


def summarise(rows) -> dict:
    """run.json's load_generator from the rows (time, jmeter %, host %, cpus, lag max, lag mean)."""
    jmeter = sorted(r[1] for r in rows if r[1] is not None)
    host = sorted(r[2] for r in rows)
    lag = sorted(r[4] for r in rows)
    if not rows:
        return {"seconds": 0, "saturated": None, "why": "not sampled"}
    cpus = rows[0][3]

    def p(values, q):
        return values[min(len(values) - 1, int(q * len(values)))] if values else None
    why = []
    if jmeter and p(jmeter, 0.99) >= SATURATED_JMETER_CPU * 100 * cpus:
        why.append(f"JMeter at {p(jmeter, 0.99):.0f} % of one core (p99) on {cpus} cores")
    if p(lag, 0.99) >= SATURATED_LAG_MS:
        why.append(f"timer lag {p(lag, 0.99):.0f} ms (p99 of the seconds' worst)")
    return {"seconds": len(rows), "host_cpus": cpus,
            "jmeter_cpu_pct_mean": round(sum(jmeter) / len(jmeter), 1) if jmeter else None,
            "jmeter_cpu_pct_p99": p(jmeter, 0.99),
            "host_busy_pct_mean": round(sum(host) / len(host), 1), "host_busy_pct_p99": p(host, 0.99),
            "timer_lag_ms_p50": p(lag, 0.5), "timer_lag_ms_p99": p(lag, 0.99), "timer_lag_ms_max": lag[-1],
            "saturated": bool(why), "why": "; ".join(why) or None}
