"""The lab's own cost: how much of each machine its instruments took over the measured window (PCP's pmcd,
pmlogger and agents; the JVM's time answering the metric scrapes; the mock service, part of the scenario but not
of the system under test). Budget: the instruments together at most INSTRUMENT_BUDGET of a machine's CPU. The
summary's section, with the load generator's line: report/render/cost.py."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from report.read.pcp import Match, Metrics, contains
from report.read.profiles import profile_share
from report.stats.figures import Window, mean_in_window
from report.stats.machine import Machine

INSTRUMENT_BUDGET = 0.03            # of a machine's CPU (all its vCPUs), over the measured window
PCP_PROCESS = re.compile(r"\bpm(cd|logger|da\w*)\b|pmdaopenmetrics|/pcp/")   # pmcd, pmlogger, pmda*
SCRAPE_URI = "uri:/actuator/prometheus"
KIT_SCRAPE = "openmetrics.app.lab_kit_scrape_seconds_sum"     # the tuning kit's own timer (kit/README.md)
# the scrape's own frames in a CPU profile (Spring Boot's endpoint and the Prometheus client writing the page; the
# tuning kit's exporter)
SCRAPE_FRAMES = re.compile(r"PrometheusScrapeEndpoint|io/prometheus/client/|lab/kit/metrics/")


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
    shares: list[Share] = field(default_factory=list)   # PCP, scrapes, mock
    instruments_cpu: float = math.nan            # PCP + scrapes (an upper bound when the scrapes' is)
    at_most: bool = False
    over_budget: bool = False
    verdict: str = "unknown"


def _cpus(metrics: Metrics, window: Window) -> float:
    n = mean_in_window(metrics, "hinv.ncpu", window)
    return n if n and not math.isnan(n) else math.nan


def _process_share(metrics: Metrics, window: Window, what: str, match: Match, cpus: float,
                   ram_kib: float) -> Share:
    """CPU (utime + stime, ms of CPU per second) and RSS of the processes the instance filter matches."""
    names = [i for i in metrics.instances("hotproc.psinfo.utime") if match(i)]
    if not names:
        return Share(what, note="not recorded")
    chosen = set(names)

    def keep(instance: str) -> bool:
        return instance in chosen
    cpu_ms = mean_in_window(metrics, "hotproc.psinfo.utime", window, keep) + \
        mean_in_window(metrics, "hotproc.psinfo.stime", window, keep)
    rss_kib = mean_in_window(metrics, "hotproc.psinfo.rss", window, keep)
    return Share(what, cpu=cpu_ms / (1000.0 * cpus), rss_mib=rss_kib / 1024.0,
                 rss_share=rss_kib / ram_kib if ram_kib else math.nan,
                 note=f"{len(names)} process" + ("es" if len(names) > 1 else ""))


def _scrape_share(machine: Machine, metrics: Metrics, window: Window, cpus: float) -> Share:
    """The JVM's CPU answering the scrapes: its CPU times the scrape frames' share of its CPU profile, or
    without a profile the scrapes' wall time (an upper bound under load, where a scrape waits for CPU)."""
    java_cpu_ms = mean_in_window(metrics, "hotproc.psinfo.utime", window, contains("java")) + \
        mean_in_window(metrics, "hotproc.psinfo.stime", window, contains("java"))
    profiled = profile_share(machine.folder / "profile" / "cpu.collapsed", SCRAPE_FRAMES) if machine.folder else None
    if profiled is not None and not math.isnan(java_cpu_ms):
        share, samples = profiled
        return Share("metric scrapes in the JVM", cpu=share * java_cpu_ms / (1000.0 * cpus),
                     note=f"{100 * share:.1f} % of the JVM's {samples} CPU samples (profile)")
    kit_s = mean_in_window(metrics, KIT_SCRAPE, window)     # the tuning kit times its own page (older runs: actuator's)
    wall_s = kit_s if not math.isnan(kit_s) else \
        mean_in_window(metrics, "openmetrics.app.http_server_requests_seconds_sum", window, contains(SCRAPE_URI))
    if math.isnan(wall_s):
        return Share("metric scrapes in the JVM", note="not recorded")
    page = "the tuning kit's /metrics" if not math.isnan(kit_s) else "/actuator/prometheus"
    return Share("metric scrapes in the JVM", cpu=wall_s / cpus, at_most=True,
                 note=f"time answering {page}: wall time, an upper bound (waits for CPU under load); "
                      "./start.sh --profile measures it")


def machine_cost(machine: Machine) -> MachineCost:
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
        cost.verdict = f"within budget without the scrapes ({pct(measured)}); over it if they took their upper bound"
    return cost


def pct(share: float, at_most: bool = False) -> str:
    return "—" if math.isnan(share) else ("≤ " if at_most else "") + f"{100 * share:.1f} %"
