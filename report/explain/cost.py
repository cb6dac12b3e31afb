"""The lab's own cost: how much of each machine its instruments took over the measured window (PCP's
pmcd, pmlogger and agents; the JVM's time answering the metric scrapes; the mock service, part of the
scenario but not of the system under test), and whether the load generator on the host was short of CPU
(host/load-generator.csv, written by lab/instruments.py). Budget: the instruments together at most
INSTRUMENT_BUDGET of a machine's CPU."""
import csv
import math
import re
from dataclasses import dataclass, field

import numpy as np

from .pcp import contains
from .stats import mean_in_window

INSTRUMENT_BUDGET = 0.03            # of a machine's CPU (all its vCPUs), over the measured window
PCP_PROCESS = re.compile(r"\bpm(cd|logger|da\w*)\b|pmdaopenmetrics|/pcp/")   # pmcd, pmlogger, pmda*
SCRAPE_URI = "uri:/actuator/prometheus"
# the scrape's own frames in a CPU profile (Spring Boot's endpoint and the Prometheus client writing the page)
SCRAPE_FRAMES = re.compile(r"PrometheusScrapeEndpoint|io/prometheus/client/")
LOAD_GENERATOR = "host/load-generator.csv"


@dataclass
class Share:
    what: str
    cpu: float = math.nan          # share of the machine's CPU (1.0 = all its vCPUs busy)
    rss_mib: float = math.nan      # mean resident memory over the window
    rss_share: float = math.nan    # of the machine's RAM
    note: str = ""
    at_most: bool = False          # cpu is an upper bound, not a measure


@dataclass
class MachineCost:
    name: str
    shares: list = field(default_factory=list)   # [Share]: PCP, scrapes, mock
    instruments_cpu: float = math.nan            # PCP + scrapes (an upper bound when the scrapes' is)
    at_most: bool = False
    over_budget: bool = False
    verdict: str = "unknown"


def _cpus(metrics, window):
    n = mean_in_window(metrics, "hinv.ncpu", window)
    return n if n and not math.isnan(n) else math.nan


def _process_share(metrics, window, what, match, cpus, ram_kib):
    """CPU (utime + stime, ms of CPU per second) and RSS of the processes the instance filter matches."""
    names = [i for i in metrics.instances("hotproc.psinfo.utime") if match(i)]
    if not names:
        return Share(what, note="not recorded")
    chosen = set(names)

    def keep(instance):
        return instance in chosen
    cpu_ms = mean_in_window(metrics, "hotproc.psinfo.utime", window, keep) + \
        mean_in_window(metrics, "hotproc.psinfo.stime", window, keep)
    rss_kib = mean_in_window(metrics, "hotproc.psinfo.rss", window, keep)
    return Share(what, cpu=cpu_ms / (1000.0 * cpus), rss_mib=rss_kib / 1024.0,
                 rss_share=rss_kib / ram_kib if ram_kib else math.nan, note=f"{len(names)} process" + ("es" if len(names) > 1 else ""))


def profile_share(collapsed_path, frames):
    """(share of the CPU samples whose stack holds a frame matching `frames`, samples) of a collapsed
    profile; None when there is none."""
    total = hit = 0
    try:
        with open(collapsed_path, encoding="utf-8", errors="replace") as f:
            for line in f:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                if not count.isdigit():
                    continue
                total += int(count)
                hit += int(count) if frames.search(stack) else 0
    except OSError:
        return None
    return (hit / total, total) if total else None


def _scrape_share(machine, metrics, window, cpus):
    """The JVM's CPU answering the scrapes: its CPU times the scrape frames' share of its CPU profile, or
    without a profile the scrapes' wall time (an upper bound under load, where a scrape waits for CPU)."""
    java_cpu_ms = mean_in_window(metrics, "hotproc.psinfo.utime", window, contains("java")) + \
        mean_in_window(metrics, "hotproc.psinfo.stime", window, contains("java"))
    profiled = profile_share(machine.folder / "profile" / "cpu.collapsed", SCRAPE_FRAMES) if machine.folder else None
    if profiled is not None and not math.isnan(java_cpu_ms):
        share, samples = profiled
        return Share("metric scrapes in the JVM", cpu=share * java_cpu_ms / (1000.0 * cpus),
                     note=f"{100 * share:.1f} % of the JVM's {samples} CPU samples (profile)")
    wall_s = mean_in_window(metrics, "openmetrics.app.http_server_requests_seconds_sum", window, contains(SCRAPE_URI))
    if math.isnan(wall_s):
        return Share("metric scrapes in the JVM", note="not recorded")
    return Share("metric scrapes in the JVM", cpu=wall_s / cpus, at_most=True,
                 note="time answering /actuator/prometheus: wall time, an upper bound (waits for CPU under load); "
                      "./start.sh --profile measures it")


def machine_cost(machine):
    """The instruments' and the mock's shares of one machine, over its measured window."""
    cost = MachineCost(machine.name)
    metrics, window = machine.metrics, machine.window
    if metrics is None or window is None:
        return cost
    cpus = _cpus(metrics, window)
    ram_kib = mean_in_window(metrics, "mem.physmem", window)
    pcp = _process_share(metrics, window, "PCP (pmcd, pmlogger, agents)", lambda i: bool(PCP_PROCESS.search(i)),
                         cpus, ram_kib)
    scrapes = _scrape_share(machine, metrics, window, cpus)
    mock = _process_share(metrics, window, "mock service", contains("mock_service", "mock"), cpus, ram_kib)
    cost.shares = [pcp, scrapes, mock]
    known = [s for s in (pcp, scrapes) if not math.isnan(s.cpu)]
    cost.instruments_cpu = sum(s.cpu for s in known) if known else math.nan
    cost.at_most = any(s.at_most for s in known)
    measured = sum(s.cpu for s in known if not s.at_most)          # a lower bound of the total
    if not known:
        return cost
    if measured > INSTRUMENT_BUDGET:
        cost.over_budget, cost.verdict = True, "**over budget**"
    elif cost.instruments_cpu <= INSTRUMENT_BUDGET:
        cost.verdict = "within budget"
    else:               # within it on what was measured, over it with the scrapes' upper bound
        cost.verdict = f"within budget without the scrapes ({_pct(measured)}); over it if they took their upper bound"
    return cost


def read_load_generator(folder):
    """host/load-generator.csv as arrays {column: np.array}; None when the run has none."""
    path = folder / LOAD_GENERATOR
    if not path.is_file():
        return None
    columns = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            for key, value in row.items():
                try:
                    columns.setdefault(key, []).append(float(value) if value not in ("", None) else math.nan)
                except ValueError:
                    columns.setdefault(key, []).append(math.nan)
    return {k: np.asarray(v) for k, v in columns.items()}


def _pct(share, at_most=False):
    return "—" if math.isnan(share) else ("≤ " if at_most else "") + f"{100 * share:.1f} %"


def cost_lines(run, machines):
    """Markdown: '## The lab's own cost': a table per machine and the load generator's line."""
    lines = ["## The lab's own cost", "",
             f"Share of each machine's CPU (all its vCPUs) and RAM over the measured window. Budget: the "
             f"instruments (PCP and the scrapes) at most {100 * INSTRUMENT_BUDGET:.0f} % of the CPU. The mock is "
             "the scenario's external service: listed, not counted as an instrument. The profiler's cost is "
             "inside the JVM's own CPU (see report/README.md: the lab's own cost).", "",
             "| machine | what | CPU | memory (mean RSS) | note |", "| --- | --- | --- | --- | --- |"]
    for m in machines.values():
        cost = machine_cost(m)
        if not cost.shares:
            lines.append(f"| {m.name} | — | — | — | no PCP data |")
            continue
        for s in cost.shares:
            memory = "—" if math.isnan(s.rss_mib) else f"{s.rss_mib:.0f} MiB ({_pct(s.rss_share)})"
            lines.append(f"| {m.name} | {s.what} | {_pct(s.cpu, s.at_most)} | {memory} | {s.note} |")
        lines.append(f"| {m.name} | **instruments together** | **{_pct(cost.instruments_cpu, cost.at_most)}** | | "
                     f"{cost.verdict} |")
    lines += ["", load_generator_line(run), ""]
    return lines


def load_generator_line(run):
    """One sentence on JMeter's host: its CPU, the host's, the timer lag, and whether it was saturated."""
    summary = run.get("load_generator")
    if not summary or not summary.get("seconds"):
        return "Load generator: not watched in this run (no host/load-generator.csv)."
    text = (f"Load generator (the host, {summary.get('host_cpus')} cores): JMeter used "
            f"{summary.get('jmeter_cpu_pct_mean')} % of one core on average (p99 {summary.get('jmeter_cpu_pct_p99')} %), "
            f"the host was {summary.get('host_busy_pct_mean')} % busy (p99 {summary.get('host_busy_pct_p99')} %), "
            f"timer lag p50 {summary.get('timer_lag_ms_p50')} ms, p99 {summary.get('timer_lag_ms_p99')} ms "
            f"over {summary.get('seconds')} s.")
    if summary.get("saturated"):
        return f"> **The load generator was saturated:** {summary.get('why')}. {text} Its figures understate the machines."
    return text + " Not saturated."
