"""The saturation analysis (USE) and the request-path breakdown, on the recorded fixture's copy with synthetic
metrics.csv of known saturation (the fixture's own metrics lack the new ones), and on the fixture itself."""
import math
from datetime import UTC, datetime

import numpy as np
import pytest

from report.explain import path
from report.explain.saturation import analyse, first_held
from report.read.knobs import read_knobs
from report.read.runinfo import RunInfo
from report.render import panels
from report.render.saturation import saturation_lines
from report.stats.machine import load_machine

KIB_PER_MIB = 1024
MIB = 1024 * 1024
HTTP = "0 connector:http-nio-8080 protocol:Http11NioProtocol"
AJP = "1 connector:ajp-nio-127.0.0.1-8009 protocol:AjpNioProtocol"
FRACTION = 0.855  # the default machine's first sample is at …806.855 (its t0): whole seconds are t0 + k + 0.145


def _t0(folder, name="default"):
    return load_machine(RunInfo(folder), name, 30.0).t0


def _write_metrics(folder, series, name="default", until=170):
    """series: {(metric, instance): f(k) -> value or None}, sampled at t0 + k for k in [-5, until]."""
    t0 = _t0(folder, name)
    lines = ["time,metric,instance,value"]
    for k in range(-5, until + 1):
        for (metric, instance), value_at in series.items():
            value = value_at(k)
            if value is not None:
                lines.append(f"{t0 + k:.3f},{metric},{instance},{value}")
    (folder / name / "pcp" / "metrics.csv").write_text("\n".join(lines) + "\n")
    return t0


def _steady(overrides=None):
    """A quiet machine: CPU 60 % busy of 2 vCPUs (70 % at +45 s), 312 of 512 MiB in use, heap after GC 100 of 200 MiB,
    10 of 200 Tomcat threads, 20 of 150 HTTPD workers, no queue anywhere."""
    series = {
        ("hinv.ncpu", ""): lambda k: 2,
        # ms per s over both CPUs: (1100 + 300) / (1100 + 300 + 600) = 70 %
        ("kernel.all.cpu.user", ""): lambda k: 1100.0 if k == 45 else 900.0,
        ("kernel.all.cpu.sys", ""): lambda k: 300.0,
        ("kernel.all.cpu.steal", ""): lambda k: 0.0,
        ("kernel.all.cpu.idle", ""): lambda k: 600.0 if k == 45 else 800.0,
        ("kernel.all.runnable", ""): lambda k: 1,
        ("mem.physmem", ""): lambda k: 512 * KIB_PER_MIB,
        ("mem.util.available", ""): lambda k: 200 * KIB_PER_MIB,
        ("mem.vmstat.pswpout", ""): lambda k: 0.0,
        ("mem.vmstat.pgmajfault", ""): lambda k: 2.0,
        ("mem.vmstat.oom_kill", ""): lambda k: 0.0,
        ("network.tcp.listenoverflows", ""): lambda k: 0.0,
        ("network.tcp.listendrops", ""): lambda k: 0.0,
        ("openmetrics.app.jvm_gc_live_data_size_bytes", ""): lambda k: 100 * MIB,
        ("openmetrics.app.jvm_gc_max_data_size_bytes", ""): lambda k: 200 * MIB,
        ("openmetrics.app.jvm_gc_pause_seconds_sum", "0 action:end of minor GC cause:G1 Evacuation Pause"):
            lambda k: 0.01,
        ("openmetrics.app.jvm_gc_pause_seconds_count", "0 action:end of minor GC cause:G1 Evacuation Pause"):
            lambda k: 0.5,
        ("apache.busy_servers", ""): lambda k: 20,
        ("openmetrics.app.tomcat_connector_threads_busy", HTTP): lambda k: 10,
        ("openmetrics.app.tomcat_connector_threads_busy", AJP): lambda k: 0,
        ("openmetrics.app.tomcat_connector_threads_config_max", HTTP): lambda k: 200,
        ("openmetrics.app.tomcat_connector_threads_config_max", AJP): lambda k: 200,
        ("openmetrics.app.tomcat_connector_connections_current", HTTP): lambda k: 12,
        ("openmetrics.app.tomcat_connector_connections_current", AJP): lambda k: 0,
        ("openmetrics.app.tomcat_connector_connections_config_max", HTTP): lambda k: 8192,
        ("openmetrics.app.tomcat_connector_connections_config_max", AJP): lambda k: 8192,
        ("openmetrics.app.httpcomponents_httpclient_pool_total_pending", "0 httpclient:backend"): lambda k: 0,
        ("openmetrics.app.executor_active_threads", "0 name:compose"): lambda k: 4 if 50 <= k < 60 else 3,
        ("openmetrics.app.executor_pool_max_threads", "0 name:compose"): lambda k: 20,
        ("openmetrics.app.executor_queued_tasks", "0 name:compose"): lambda k: 0,
        ("openmetrics.app.executor_queue_remaining_tasks", "0 name:compose"): lambda k: 1000,
        ("openmetrics.app.process_files_open_files", ""): lambda k: 64,
        ("openmetrics.app.process_files_max_files", ""): lambda k: 65536,
        ("vfs.files.count", ""): lambda k: 900,
        ("vfs.files.max", ""): lambda k: 50000,
        ("openmetrics.conntrack.nf_conntrack_count", ""): lambda k: 10,
        ("openmetrics.conntrack.nf_conntrack_max", ""): lambda k: 4096,
    }
    series.update(overrides or {})
    return series


def _machine(folder, name="default"):
    run = RunInfo(folder)
    machine = load_machine(run, name, 30.0)
    return machine, analyse(machine, read_knobs(machine, run))


def _row(sat, name):
    found = [r for r in sat.resources if r.name.startswith(name)]
    assert found, f"no row {name!r} in {[r.name for r in sat.resources]}"
    return found[0]


def _section(folder):
    run = RunInfo(folder)
    machines = {n: load_machine(run, n, 30.0) for n in ("default", "tuned")}
    return "\n".join(saturation_lines(run, machines))


# --- the held rule ---

def test_held_needs_five_seconds_of_consecutive_samples():
    t = np.arange(20.0)
    four = np.zeros(20, bool)
    four[3:7] = True
    assert first_held(t, four, 1.0) is None
    five = four.copy()
    five[7] = True
    assert first_held(t, five, 1.0) == (3, 8)
    # a missing sample (a gap of 3 intervals) breaks the stretch
    gapped = np.concatenate([np.arange(3.0, 6.0), np.arange(9.0, 12.0)])
    assert first_held(gapped, np.ones(6, bool), 1.0) is None


# --- known saturation ---

@pytest.fixture
def saturated(run_copy):
    """Tomcat threads 200 of 200 from +60 s, heap after GC 190 of 200 MiB from +70 s, HTTPD 150 of 150 from
    +80 s, and the listen queue overflowing once at +90 s."""
    _write_metrics(run_copy, _steady({
        ("openmetrics.app.tomcat_connector_threads_busy", HTTP): lambda k: 200 if k >= 60 else 10,
        ("openmetrics.app.jvm_gc_live_data_size_bytes", ""): lambda k: (190 if k >= 70 else 100) * MIB,
        ("apache.busy_servers", ""): lambda k: 150 if k >= 80 else 20,
        ("network.tcp.listenoverflows", ""): lambda k: 5.0 if k == 90 else 0.0,
    }))
    return run_copy


def test_the_table_says_peak_limit_share_and_seconds_near_the_limit(saturated):
    machine, sat = _machine(saturated)
    t0 = machine.t0
    assert machine.window.end - t0 == pytest.approx(146.007, abs=0.001)  # the window: +30 … +146 s
    threads = _row(sat, "Tomcat threads (http-nio-8080, traffic)")
    assert (threads.peak, threads.limit, threads.limit_source) == (200, 200, "tomcat_connector_threads_config_max")
    assert threads.peak_at - t0 == pytest.approx(60.0, abs=0.01)
    assert threads.peak_pct == 100
    assert threads.near_s == 87  # samples +60 … +146 at 1 s
    assert threads.near_pct == pytest.approx(100 * 87 / 116.007, abs=0.01)
    assert threads.held_from - t0 == pytest.approx(60.0, abs=0.01)
    httpd = _row(sat, "HTTPD workers")
    assert (httpd.peak, httpd.limit, httpd.near_s) == (150, 150, 67)
    assert httpd.limit_source == "default: httpd_max_request_workers unset"
    assert httpd.held_from - t0 == pytest.approx(80.0, abs=0.01)
    heap = _row(sat, "JVM heap")
    assert heap.reads == "old gen after the last major GC"
    assert (heap.peak, heap.limit, heap.near_s) == (190, 200, 77)
    assert heap.peak_pct == pytest.approx(95.0)
    cpu = _row(sat, "CPU")
    assert cpu.peak == pytest.approx(70.0) and cpu.near_s == 0 and cpu.held_from is None
    assert cpu.saturation == "run queue peak 1 (> 2 vCPUs: 0 s)"
    memory = _row(sat, "Memory")
    assert memory.peak == pytest.approx(312.0) and memory.limit == 512 and memory.errors == "OOM kills 0"
    assert memory.saturation == "swap-out peak 0 pages/s (0 s); major faults peak 2/s"
    ajp = _row(sat, "Tomcat threads (ajp-nio-127.0.0.1-8009)")
    assert ajp.peak == 0 and not ajp.findings
    accept = _row(sat, "Accept queue")
    assert accept.saturation == "overflows 5 (peak 5/s)" and accept.errors == "drops 0"
    assert sat.traffic == "http-nio-8080 (most busy threads)"


def test_the_story_orders_what_reached_its_limit_then_the_symptoms(saturated):
    machine, sat = _machine(saturated)
    assert [r.name for r in sat.reached] == ["Tomcat threads (http-nio-8080, traffic)", "JVM heap",
                                             "HTTPD workers", "Accept queue"]
    text = _section(saturated)
    default = text.split("### default", 1)[1].split("### tuned", 1)[0]
    assert "1. Tomcat threads (http-nio-8080, traffic): 200 of 200 threads from +60 s (22:01:06 UTC), " \
           "for 75 % of the window." in default
    assert "2. JVM heap: 190 of 200 MiB from +70 s (22:01:16 UTC), for 66 % of the window." in default
    assert "3. HTTPD workers: 150 of 150 workers from +80 s (22:01:26 UTC), for 58 % of the window." in default
    assert "4. Accept queue: the listen queue overflowed from +90 s (22:01:36 UTC)." in default
    # the fixture's own JTL: 404s from the start, the frozen JVM at +99 s
    symptoms = default.split("Symptoms, in time order: ", 1)[1]
    assert symptoms.index("errors above 1 % of requests at +20 s") < symptoms.index("stopped answering at +99 s")
    assert "100 % java.net.SocketTimeoutException: Read timed out" in symptoms
    assert "the app's own metrics stop" not in symptoms  # the synthetic app metrics go on to the end
    assert "| Tomcat threads (http-nio-8080, traffic): busy threads | 200 threads (+60 s, 22:01:06 UTC) | " \
           "200 threads (tomcat_connector_threads_config_max) | 100 % | 87 s (75 %) | +60 s |" in default


def test_nothing_saturated_names_the_closest(run_copy):
    _write_metrics(run_copy, _steady())
    _, sat = _machine(run_copy)
    assert sat.reached == []
    assert sat.closest.name == "CPU" and sat.closest.peak_pct == pytest.approx(70.0)
    default = _section(run_copy).split("### default", 1)[1].split("### tuned", 1)[0]
    assert "Nothing reached its limit; the closest: CPU 70 % busy (70 % of its limit, at +45 s)." in default
    assert "| Compose pool: active threads | 4 threads (+50 s, 22:00:56 UTC) | 20 threads " \
           "(executor_pool_max_threads) | 20 % | 0 s (0 %) | — | queued peak 0 of 1000 (> 0: 0 s) | " \
           "queue full 0 s |" in default


def test_a_queue_held_over_two_scrapes_saturates_one_scrape_does_not(run_copy):
    # pmrep gives each 1 s sample the nearest scrape's value (10 s apart): one scrape of 3 pending = 10 samples
    (run_copy / "default" / "config" / "knobs.json").write_text('{"pcp_openmetrics_interval_s": 10}')
    _write_metrics(run_copy, _steady({
        ("openmetrics.app.httpcomponents_httpclient_pool_total_pending", "0 httpclient:backend"):
            lambda k: 3 if 40 <= k < 50 else (7 if 100 <= k < 120 else 0),
        ("kernel.all.runnable", ""): lambda k: 5 if 50 <= k < 54 else 1,  # 4 s above 2 vCPUs: not held
    }))
    machine, sat = _machine(run_copy)
    pool = _row(sat, "Backend pool")
    assert [(f.kind, round(f.at - machine.t0)) for f in pool.findings] == [("saturation", 100)]
    assert pool.findings[0].text == "requests waiting for a backend connection (up to 7)"
    assert pool.saturation == "pending peak 7 (> 0: 30 s)"  # +40 … +49 and +100 … +119
    assert pool.not_recorded == "httpcomponents_httpclient_pool_total_connections"
    assert _row(sat, "CPU").findings == [] and _row(sat, "CPU").saturation == "run queue peak 5 (> 2 vCPUs: 4 s)"


def test_oom_kill_and_restart_from_the_journal(run_copy):
    t0 = _write_metrics(run_copy, _steady({
        ("mem.util.available", ""): lambda k: (20 if k >= 110 else 200) * KIB_PER_MIB,
        ("mem.vmstat.oom_kill", ""): lambda k: 1.0 if k == 120 else 0.0,
    }))
    def stamp(k):  # the journal's whole second after t0 + k
        return datetime.fromtimestamp(math.ceil(t0) + k, tz=UTC)
    # journalctl -o short-iso, as lab/guest/run.sh collects it (synthetic: the fixture's JVM was frozen, not killed)
    (run_copy / "default" / "logs" / "journal.txt").write_text(
        f"{stamp(120):%Y-%m-%dT%H:%M:%S}+0000 lab-default kernel: java invoked oom-killer: gfp_mask=0x140cca\n"
        f"{stamp(120):%Y-%m-%dT%H:%M:%S}+0000 lab-default kernel: Out of memory: Killed process 4242 (java) "
        "total-vm:2000000kB\n"
        f"{stamp(121):%Y-%m-%dT%H:%M:%S}+0000 lab-default systemd[1]: camel-app.service: Main process exited, "
        "code=killed, status=9/KILL\n"
        f"{stamp(126):%Y-%m-%dT%H:%M:%S}+0000 lab-default systemd[1]: camel-app.service: Scheduled restart job, "
        "restart counter is at 1.\n")
    machine, sat = _machine(run_copy)
    memory = _row(sat, "Memory")
    assert memory.errors == "OOM kills 1"
    assert memory.peak == 492 and memory.held_from - t0 == pytest.approx(110, abs=0.01)
    texts = [(round(f.at - t0), f.text) for f in sat.symptoms]
    assert (120, "OOM kill (journal: Out of memory: Killed process 4242 (java) total-vm:2000000kB)") in texts
    assert (121, "camel-app exited (journal: Main process exited, code=killed, status=9/KILL)") in texts
    assert (126, "camel-app restarted (journal)") in texts
    assert [t for t, _ in texts] == sorted(t for t, _ in texts)
    default = _section(run_copy).split("### default", 1)[1].split("### tuned", 1)[0]
    assert "1. Memory: 492 of 512 MiB from +110 s" in default
    assert "; camel-app restarted (journal) at +126 s" in default


def test_cpu_is_a_share_of_all_cpu_time_when_sampling_stalls(run_copy):
    """A starved guest's stalled sample: pmrep's rates of one sample add up to 8 × the capacity of 2 vCPUs, the
    next ones to a sixth of it (the values of results/20261124T122420Z-full-explain, default, 12:51:14 … 12:51:22).
    Shares of all CPU time stay within 100 %: the peak is 98 %, not 793 %."""
    stall = {30: (12445.0, 3421.0, 322.5), 31: (155.5, 155.5, 5.0), 32: (155.5, 155.5, 5.0)}
    _write_metrics(run_copy, _steady({
        ("kernel.all.cpu.user", ""): lambda k: stall[k][0] if k in stall else 900.0,
        ("kernel.all.cpu.sys", ""): lambda k: stall[k][1] if k in stall else 300.0,
        ("kernel.all.cpu.idle", ""): lambda k: stall[k][2] if k in stall else 800.0}))
    machine, sat = _machine(run_copy)
    cpu = _row(sat, "CPU")
    assert cpu.peak == pytest.approx(max(100 * (u + s) / (u + s + i) for u, s, i in stall.values()), abs=0.01)
    assert cpu.limit == 100 and cpu.near_s == 3   # the stalled sample and the two after it, ≥ 90 % busy
    panel = panels.cpu(machine, None)
    stacked = sum(v for _, _, v in panel.series)
    assert stacked.max() <= 100.0 + 1e-9 and stacked.max() == pytest.approx(cpu.peak)


def test_missing_metrics_are_not_recorded_rows(run_copy):
    _write_metrics(run_copy, {("hinv.ncpu", ""): lambda k: 2, ("kernel.all.cpu.sys", ""): lambda k: 100.0,
                              ("kernel.all.cpu.user", ""): lambda k: 500.0 if k == 40 else 300.0,
                              ("kernel.all.cpu.idle", ""): lambda k: 1400.0 if k == 40 else 1600.0})
    (run_copy / "tuned" / "pcp" / "metrics.csv").unlink()
    text = _section(run_copy)
    default = text.split("### default", 1)[1].split("### tuned", 1)[0]
    assert "| CPU: busy (user + sys + steal), % of all CPU time | 30 % (+40 s" in default  # steal absent: skipped
    for row in ("Memory: in use (RAM − available) | not recorded (mem.util.available, mem.physmem)",
                "HTTPD workers: busy workers | not recorded (apache.busy_servers)",
                "Tomcat threads: busy threads | not recorded (openmetrics.app.tomcat_connector_threads_busy)",
                "Accept queue: the kernel's listen-queue overflows and drops (all sockets) | not recorded",
                "System file handles: allocated file handles | not recorded (vfs.files.count)"):
        assert f"| {row}" in default
    assert "run queue not recorded" in default and "Nothing reached its limit; the closest: CPU 30 % busy" in default
    tuned = text.split("### tuned", 1)[1]
    assert "| CPU: busy (user + sys + steal), % of all CPU time | not recorded (kernel.all.cpu.* (idle included))" \
        in tuned
    assert "Nothing reached its limit." in tuned


def test_limits_from_knobs_json_and_counts_logged_as_rates(run_copy):
    series = _steady({
        ("openmetrics.app.tomcat_connector_threads_busy", HTTP): lambda k: 48,
        # PCP's openmetrics agent logs names with "count" or "total" as counters: pmrep exported their rate
        ("openmetrics.conntrack.nf_conntrack_count", ""): lambda k: 0.25,
    })
    del series[("openmetrics.app.tomcat_connector_threads_config_max", HTTP)]
    del series[("openmetrics.app.tomcat_connector_threads_config_max", AJP)]
    _write_metrics(run_copy, series)
    (run_copy / "default" / "config").mkdir(exist_ok=True)
    (run_copy / "default" / "config" / "knobs.json").write_text('{"tomcat_threads_max": 50, "httpd_mpm": "event"}')
    _, sat = _machine(run_copy)
    threads = _row(sat, "Tomcat threads (http-nio-8080")
    assert (threads.limit, threads.limit_source, threads.peak_pct) == (50, "knob tomcat_threads_max", 96)
    assert threads.held_from is not None
    conntrack = _row(sat, "Conntrack")
    assert conntrack.unusable.startswith("nf_conntrack_count is its rate, not its level")
    assert math.isnan(conntrack.peak)


def test_a_knob_neither_the_machine_nor_the_catalog_gives_is_unknown_and_said(run_copy):
    """A run folder from before knobs-catalog.json whose machine does not name the knobs: no limit is guessed."""
    (run_copy / "knobs-catalog.json").unlink()
    (run_copy / "default" / "config" / "knobs.json").write_text("{}")
    _write_metrics(run_copy, _steady({("apache.busy_servers", ""): lambda k: 150 if k >= 80 else 20}))
    _, sat = _machine(run_copy)
    httpd = _row(sat, "HTTPD workers")
    assert math.isnan(httpd.limit) and httpd.held_from is None and httpd.peak == 150
    assert httpd.limit_source == ("unknown: httpd_max_request_workers unset and the run folder has no "
                                  "knobs-catalog.json")
    assert _row(sat, "Accept queue").limit_source.startswith("Tomcat's backlog (unknown: tomcat_accept_count unset")
    default = _section(run_copy).split("### default", 1)[1].split("### tuned", 1)[0]
    assert "| HTTPD workers: busy workers | 150 workers (+80 s" in default
    assert "unknown: httpd_max_request_workers unset and the run folder has no knobs-catalog.json" in default
    assert "> How often the app's metrics were scraped is not known (unknown: pcp_openmetrics_interval_s unset" \
        in default


def test_the_fixture_says_the_default_stopped(fixture_report):
    folder, summary = fixture_report
    section = summary.split("## Saturation (USE)", 1)[1].split("\n## ", 1)[0]
    assert summary.index("## Stopped answering") < summary.index("## Saturation (USE)") < \
        summary.index("## Errors after warm-up")
    default, tuned = section.split("### default", 1)[1].split("### tuned", 1)
    assert "Traffic connector: http-nio-8080 (most busy threads)." in default
    assert "the app's own metrics stop at +98 s (22:01:44 UTC), 57 s before the system's" in default
    assert "stopped answering at +99 s (22:01:45 UTC), 100 % java.net.SocketTimeoutException: Read timed out" \
        in default
    assert "| Tomcat threads (http-nio-8080, traffic): busy threads | 6 threads (+60 s, 22:01:06 UTC) | " \
           "200 threads (knob tomcat_threads_max) | 3 % |" in default
    assert "| Accept queue: the kernel's listen-queue overflows and drops (all sockets) | not recorded" in default
    assert "stopped answering" not in tuned


# --- the request path ---

def _access_log(folder, t0, lines):
    """lines: [(k, request, %D µs)], k whole seconds after ceil(t0)."""
    text = ['127.0.0.1 - - [22/Nov/2026:22:00:02 +0000] "GET /server-status?auto HTTP/1.1" 200 1076 9999999']
    for k, request, d in lines:
        at = datetime.fromtimestamp(math.ceil(t0) + k, tz=UTC)
        text.append(f'192.168.56.1 [{at:%d/%b/%Y:%H:%M:%S} +0000] "{request} HTTP/1.1" 200 457 {d}')
    (folder / "default" / "logs" / "httpd-access.log").write_text("\n".join(text) + "\n")


def test_the_path_splits_httpd_app_and_backend(run_copy):
    rest, backend = "0 outcome:success route:rest-get-customer", "1 outcome:success route:backend-get-customer"
    api = "2 outcome:success route:api-get-customer"
    t0 = _write_metrics(run_copy, {
        ("openmetrics.app.camel_route_exchanges_seconds_sum", rest): lambda k: 0.06,    # 60 ms per exchange
        ("openmetrics.app.camel_route_exchanges_seconds_count", rest): lambda k: 1.0,
        ("openmetrics.app.camel_route_exchanges_seconds_sum", backend): lambda k: 0.04,  # 40 ms of it waiting
        ("openmetrics.app.camel_route_exchanges_seconds_count", backend): lambda k: 1.0,
        ("openmetrics.app.camel_route_exchanges_seconds_sum", api): lambda k: 0.05,      # not counted
        ("openmetrics.app.camel_route_exchanges_seconds_count", api): lambda k: 1.0,
    }, until=60)
    # bin 2 (+20 … +30 s): %D 80 and 120 ms → mean 100 ms; bin 3: 300 ms (a queue in front of Tomcat)
    _access_log(run_copy, t0, [(21, "GET /api/customers/1", 80000), (25, "GET /api/customers/2", 120000),
                               (31, "GET /api/customers/3", 300000)])
    machine = load_machine(RunInfo(run_copy), "default", 30.0)
    found = path.breakdown(machine, 59.0, 10)
    assert [label for label, _ in found.parts] == [path.FRONT, path.APP, path.WAIT]
    front, app, wait = (ms for _, ms in found.parts)
    assert (front[2], app[2], wait[2]) == pytest.approx((40.0, 20.0, 40.0))
    assert (front[3], app[3], wait[3]) == pytest.approx((240.0, 20.0, 40.0))
    assert math.isnan(front[4]) and found.missing == []


def test_the_path_without_route_timers_uses_the_mock_per_httpd_request(run_copy):
    t0 = _write_metrics(run_copy, {
        ("openmetrics.mock.mock_http_request_duration_seconds_sum", "0 endpoint:customer_get"): lambda k: 0.03,
        ("openmetrics.mock.mock_http_request_duration_seconds_count", "0 endpoint:customer_get"): lambda k: 1.0,
    }, until=60)
    _access_log(run_copy, t0, [(20 + i, "GET /api/customers/1", 100000) for i in range(8)])
    machine = load_machine(RunInfo(run_copy), "default", 30.0)
    found = path.breakdown(machine, 59.0, 10)
    assert [label for label, _ in found.parts] == [path.FRONT_AND_APP, path.WAIT_MOCK]
    # bin 2: 10 samples × 0.03 s of mock time over 8 HTTPD requests = 37.5 ms each
    assert (found.parts[0][1][2], found.parts[1][1][2]) == pytest.approx((62.5, 37.5))
    assert found.missing == ["route timers"]


def test_the_path_chart_says_when_nothing_was_recorded(run_copy):
    (run_copy / "default" / "logs" / "httpd-access.log").unlink()
    _write_metrics(run_copy, {("hinv.ncpu", ""): lambda k: 2}, until=60)
    machine = load_machine(RunInfo(run_copy), "default", 30.0)
    panel = panels.request_path(machine, 60.0)
    assert not panel.series
    assert panel.note == "no data (httpd-access.log, route timers, backend timers not recorded)"


def test_log_lines_are_dated_and_told(run_copy):
    """The logs' own timestamps: HTTPD's error log, gc.log, the classic journal form (no year)."""
    t0 = _write_metrics(run_copy, _steady())
    at = datetime.fromtimestamp(math.ceil(t0) + 85, tz=UTC)  # +85 s
    logs = run_copy / "default" / "logs"
    with open(logs / "httpd-error.log", "a") as f:
        f.write(f"[{at:%a %b %d %H:%M:%S}.123456 {at:%Y}] [mpm_event:error] [pid 21150:tid 21150] AH00484: "
                "server reached MaxRequestWorkers setting, consider raising the MaxRequestWorkers setting\n")
    with open(logs / "gc.log", "a") as f:
        f.write(f"[{at:%Y-%m-%dT%H:%M:%S}.500+0000][99.000s][info][gc,start    ] GC(90) Pause Full (Ergonomics)\n"
                f"[{at:%Y-%m-%dT%H:%M:%S}.900+0000][99.400s][info][gc          ] GC(90) Pause Full (Ergonomics) "
                "250M->240M(256M) 400.000ms\n")
    (logs / "journal.txt").write_text(f"{at:%b %d %H:%M:%S} default kernel: Out of memory: Killed process 4242 "
                                      "(java) total-vm:2000000kB\n")
    machine, sat = _machine(run_copy)
    httpd = _row(sat, "HTTPD workers")
    assert [(f.kind, round(f.at - t0), f.text) for f in httpd.findings] == \
        [("errors", 85, "MaxRequestWorkers reached (logs/httpd-error.log)")]
    assert httpd.errors == "MaxRequestWorkers reached ×1"
    told = {f.text: round(f.at - t0) for f in sat.symptoms}
    assert told["full GC (gc.log)"] == 85  # one collection: its end line
    assert told["OOM kill (journal: Out of memory: Killed process 4242 (java) total-vm:2000000kB)"] == 85
    assert _row(sat, "JVM heap").errors == "full GCs 1 (gc.log)"  # gc.log before the major-GC timer


def test_a_containers_cpu_and_memory_are_its_cgroups_not_the_hosts(run_copy):
    """A container's kernel.all.*, run queue and mem.util.* are the host's (24 GiB, busy with both twins): the
    USE rows read its cgroup's figures (openmetrics.machine.*: the pcp role's machine script) instead."""
    _write_metrics(run_copy, _steady({
        ("mem.physmem", ""): lambda k: 24 * 1024 * KIB_PER_MIB,                # the host's
        ("mem.util.available", ""): lambda k: 20 * 1024 * KIB_PER_MIB,
        ("kernel.all.runnable", ""): lambda k: 150,                             # the host's run queue
        ("openmetrics.machine.memory_total_kb", ""): lambda k: 512 * KIB_PER_MIB,
        ("openmetrics.machine.memory_available_kb", ""): lambda k: (100 if k >= 60 else 300) * KIB_PER_MIB,
        ("openmetrics.machine.oom_kills", ""): lambda k: 0.0,
        ("openmetrics.machine.cpu_limit_millis", ""): lambda k: 2000,
        ("openmetrics.machine.cpu_used_ms", ""): lambda k: 1900.0 if k >= 60 else 1000.0,   # ms of CPU per s
        ("openmetrics.machine.cpu_throttled_ms", ""): lambda k: 50.0 if k >= 60 else 0.0,
    }))
    _, sat = _machine(run_copy)
    memory = _row(sat, "Memory")
    assert memory.reads == "in use (the container's memory limit − available under it)"
    assert (memory.peak, memory.limit) == (pytest.approx(412.0), 512)
    cpu = _row(sat, "CPU")
    assert cpu.reads == "the container's CPU time, % of its quota (cpuacct)"
    assert cpu.peak == pytest.approx(95.0) and cpu.limit_source.startswith("2 CPUs of quota")
    assert cpu.saturation.startswith("throttled peak 50 ms/s") and "run queue" not in cpu.saturation
    # a VM (its own RAM below nothing): the kernel's figures as before
    _write_metrics(run_copy, _steady({("openmetrics.machine.memory_total_kb", ""): lambda k: 512 * KIB_PER_MIB}))
    _, vm = _machine(run_copy)
    assert _row(vm, "CPU").saturation == "run queue peak 1 (> 2 vCPUs: 0 s)"
    assert _row(vm, "Memory").reads == "in use (RAM − available)"


def test_the_jits_time_and_camels_conversions_are_read_in_the_window_and_a_compiling_side_is_named(run_copy):
    """jvm_compilation_time_ms_total (ms of compiling per s, as pmrep exports a counter) and Camel's conversions,
    counted in the measured window only; a side still compiling ≥ STILL_COMPILING_CPU on average is named."""
    from report.render.summary import STILL_COMPILING_CPU, compiling_lines, resultstable
    miss = "1 outcome:miss"
    java = "1234 /usr/bin/java -jar app.jar"
    _write_metrics(run_copy, _steady({
        # 900 ms of compiling per s during the 30 s warm-up, 50 ms/s after: only the window's counts
        ("openmetrics.app.jvm_compilation_time_ms_total", "0 compiler:HotSpot 64-Bit Tiered Compilers"):
            lambda k: 900.0 if k < 30 else 50.0,
        ("openmetrics.app.camel_type_converter_total", "0 outcome:hit"): lambda k: 40.0,
        ("openmetrics.app.camel_type_converter_total", miss): lambda k: 2.0,
        ("openmetrics.app.camel_type_converter_total", "2 outcome:failed"): lambda k: 0.0,
        # the JVM's CPU, 700 ms per s, beside another process's that must not count
        ("hotproc.psinfo.rss", java): lambda k: 200_000,
        ("hotproc.psinfo.rss", "88 /usr/sbin/apache2"): lambda k: 9_000,
        ("hotproc.psinfo.utime", java): lambda k: 600.0, ("hotproc.psinfo.stime", java): lambda k: 100.0,
        ("hotproc.psinfo.utime", "88 /usr/sbin/apache2"): lambda k: 500.0,
    }))
    quiet, _ = _machine(run_copy)
    window = quiet.load.window_s
    assert quiet.system.jvm_cpu_ms == pytest.approx(700.0 * window, rel=0.05)
    assert quiet.system.jit_s == pytest.approx(0.05 * window, rel=0.05)
    assert quiet.system.conversions["miss"] == pytest.approx(2.0 * window, rel=0.05)
    assert quiet.system.conversions["hit"] == pytest.approx(40.0 * window, rel=0.05)
    table = "\n".join(resultstable({"default": quiet, "tuned": quiet}))
    per_request = 40.0 * window / quiet.load.requests
    assert f"| JIT compiling (CPU on average) | {0.05 * window:,.1f} s (0.05) |" in table
    cpu = quiet.system.jvm_cpu_ms / quiet.load.successes
    assert f"| JVM CPU per successful request | {cpu:,.2f} ms | {cpu:,.2f} ms | 1.00× |" in table
    assert f"| Camel type conversions per request (hit / miss / failed) | {per_request:,.2f} / " in table
    assert compiling_lines({"default": quiet}) == []            # 0.05 CPU: settled enough
    _write_metrics(run_copy, _steady({
        ("openmetrics.app.jvm_compilation_time_ms_total", "0 compiler:HotSpot 64-Bit Tiered Compilers"):
            lambda k: 1000.0 * STILL_COMPILING_CPU * 3}))
    busy, _ = _machine(run_copy)
    said = "".join(compiling_lines({"default": busy}))
    assert said.startswith("**Still compiling:**") and "default 0.30 CPU on average" in said
    assert "Camel type conversions" not in "\n".join(resultstable({"default": busy, "tuned": busy}))


def test_the_overhead_command_reads_the_jvms_cpu_and_rss_as_the_report_does(run_copy, tmp_path):
    """`report overhead`: per configuration the JVM's CPU per second and per successful request and its peak RSS,
    the figures the run's own report reads (the JVM's processes only, in the measured window), and the change
    between a run with an instrument and one without."""
    import shutil

    from report.explain.overhead import jvm_figures
    from report.render.overhead import table
    java = "1234 /usr/bin/java -jar app.jar"
    without = tmp_path / "without"
    shutil.copytree(run_copy, without)
    for folder, cpu in ((run_copy, 700.0), (without, 350.0)):
        for name in ("default", "tuned"):
            _write_metrics(folder, {
                ("hotproc.psinfo.rss", java): lambda k: 200_000 if k < 100 else 300_000,
                ("hotproc.psinfo.utime", java): lambda k, cpu=cpu: cpu - 100.0,
                ("hotproc.psinfo.stime", java): lambda k: 100.0,
                ("hotproc.psinfo.utime", "88 /usr/sbin/apache2"): lambda k: 500.0,   # not the JVM's
            }, name=name)
    figures = jvm_figures(run_copy, "default")
    machine = load_machine(RunInfo(run_copy), "default", RunInfo(run_copy).warmup_s or 0)
    assert figures["cpu_ms_s"] == pytest.approx(700.0, rel=0.05)
    assert figures["cpu_ms_per_request"] == pytest.approx(machine.system.jvm_cpu_ms / machine.load.successes)
    assert figures["tps"] == machine.load.tps and figures["rss_mib"] == pytest.approx(300_000 / 1024)
    rows = table(run_copy, without)
    cpu_row = next(r for r in rows if r.startswith("| default | JVM CPU |"))
    assert cpu_row.endswith("| +100.0 % |"), cpu_row
    assert next(r for r in rows if r.startswith("| tuned | successful TPS |")).endswith("| +0.0 % |")


def test_what_a_side_compiles_is_in_the_verdict_for_the_tuner():
    """verdict.json format 5: steady.<machine>.compiling_cpu and still_compiling (a tune's proof needs none)."""
    import math
    from types import SimpleNamespace

    from report.stats.steady import STILL_COMPILING_CPU, compiling_cpu
    machine = SimpleNamespace(system=SimpleNamespace(jit_s=134.0), load=SimpleNamespace(window_s=120.0))
    assert compiling_cpu(machine) == 134.0 / 120.0 >= STILL_COMPILING_CPU
    assert math.isnan(compiling_cpu(SimpleNamespace(system=None, load=None)))
    assert math.isnan(compiling_cpu(SimpleNamespace(system=SimpleNamespace(jit_s=math.nan),
                                                    load=SimpleNamespace(window_s=120.0))))

