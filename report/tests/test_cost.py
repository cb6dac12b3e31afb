"""The lab's own cost: instruments' CPU and memory shares from hotproc and the scrape timer, the budget
verdict, processes told apart by their command lines, and the load generator's line."""
import csv
import math

from report.explain.cost import INSTRUMENT_BUDGET, machine_cost
from report.read.runinfo import RunInfo
from report.render.cost import cost_lines
from report.stats.machine import load_machine

PIDS = {  # instance → command line (pcp/processes.csv)
    "000875 /usr/bin/python3": "/usr/bin/python3 -m mock_service",
    "003710 python3": "python3 /var/lib/pcp/pmdas/openmetrics/pmdaopenmetrics.python -t 10",
    "003701 /usr/lib/pcp/bin/pmcd": "/usr/lib/pcp/bin/pmcd -A",
    "000937 /usr/bin/java": "/usr/bin/java -jar /opt/camel-app/app.jar",
}


def _write(folder, machine, pcp_ms, openmetrics_ms, mock_ms, scrape_s, seconds=200, kit=False):
    """A machine's metrics.csv: 2 CPUs, 512 MiB; constant per-second CPU of each process (ms/s). kit: the scrapes
    timed by the tuning kit (a service's run), not by actuator."""
    mdir = folder / machine
    with open(mdir / "pcp" / "metrics.csv", "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["time", "metric", "instance", "value"])
        t0 = 1_795_384_800
        for s in range(seconds):
            t = t0 + s
            out.writerow([t, "hinv.ncpu", "", 2])
            out.writerow([t, "mem.physmem", "", 512 * 1024])
            for instance, ms, rss in (("003701 /usr/lib/pcp/bin/pmcd", pcp_ms, 8 * 1024),
                                      ("003710 python3", openmetrics_ms, 40 * 1024),
                                      ("000875 /usr/bin/python3", mock_ms, 30 * 1024),
                                      ("000937 /usr/bin/java", 900, 250 * 1024)):
                out.writerow([t, "hotproc.psinfo.utime", instance, ms * 0.75])
                out.writerow([t, "hotproc.psinfo.stime", instance, ms * 0.25])
                out.writerow([t, "hotproc.psinfo.rss", instance, rss])
            if kit:
                out.writerow([t, "openmetrics.app.lab_kit_scrape_seconds_sum", "", scrape_s])
                continue
            out.writerow([t, "openmetrics.app.http_server_requests_seconds_sum",
                          "0 exception:None method:GET outcome:SUCCESS status:200 uri:/actuator/prometheus", scrape_s])
            out.writerow([t, "openmetrics.app.http_server_requests_seconds_sum",
                          "1 exception:None method:GET outcome:SUCCESS status:200 uri:/actuator/health", 5.0])
    with open(mdir / "pcp" / "processes.csv", "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["instance", "psargs"])
        out.writerows(PIDS.items())


def _machine(folder, name):
    run = RunInfo(folder)
    return run, load_machine(run, name, 0)


def test_shares_are_the_processes_cpu_of_all_vcpus_and_the_mock_is_not_pcp(run_copy):
    # pmcd 10 ms/s + the openmetrics agent 28 ms/s = 38 of 2000 ms/s = 1.9 %; scrapes 0.02 s/s = 1 % of 2 CPUs
    _write(run_copy, "tuned", pcp_ms=10, openmetrics_ms=28, mock_ms=100, scrape_s=0.02)
    run, machine = _machine(run_copy, "tuned")
    cost = machine_cost(machine)
    pcp, scrapes, mock = cost.shares
    assert math.isclose(pcp.cpu, 0.019, rel_tol=1e-6), pcp
    assert pcp.note == "2 processes" and math.isclose(pcp.rss_mib, 48, rel_tol=1e-6)
    assert math.isclose(scrapes.cpu, 0.01, rel_tol=1e-6)
    assert math.isclose(mock.cpu, 0.05, rel_tol=1e-6) and mock.note == "1 process"
    assert math.isclose(cost.instruments_cpu, 0.029, rel_tol=1e-6) and not cost.over_budget


def test_a_services_scrapes_are_the_kits_own_timer(run_copy):
    _write(run_copy, "tuned", pcp_ms=10, openmetrics_ms=28, mock_ms=100, scrape_s=0.03, kit=True)
    run, machine = _machine(run_copy, "tuned")
    scrapes = machine_cost(machine).shares[1]
    assert math.isclose(scrapes.cpu, 0.015, rel_tol=1e-6) and scrapes.at_most
    assert "time answering the tuning kit's /metrics" in scrapes.note


def test_over_budget_is_said(run_copy):
    _write(run_copy, "default", pcp_ms=50, openmetrics_ms=40, mock_ms=10, scrape_s=0.1)   # 4.5 % + at most 5 %
    run, machine = _machine(run_copy, "default")
    cost = machine_cost(machine)
    assert cost.instruments_cpu > INSTRUMENT_BUDGET and cost.over_budget
    text = "\n".join(cost_lines(run, {"default": machine}))
    assert "| default | **instruments together** | **≤ 9.5 %** | | **over budget** |" in text, text
    assert "| default | metric scrapes in the JVM | ≤ 5.0 % |" in text


def test_an_upper_bound_does_not_make_a_run_over_budget(run_copy):
    """Without a profile the scrapes' figure is their wall time, an upper bound of their CPU: PCP's 1.5 % and
    at most 2.5 % of scrapes is not a measured 4 %."""
    _write(run_copy, "default", pcp_ms=10, openmetrics_ms=20, mock_ms=10, scrape_s=0.05)
    run, machine = _machine(run_copy, "default")
    cost = machine_cost(machine)
    assert not cost.over_budget and cost.at_most
    assert cost.verdict.startswith("within budget without the scrapes (1.5 %)"), cost.verdict


def test_without_the_new_metrics_nothing_is_invented(run_copy):
    run, machine = _machine(run_copy, "default")          # the recorded fixture: no PCP processes, no scrapes
    pcp, scrapes, mock = machine_cost(machine).shares
    assert pcp.note == "not recorded" and math.isnan(pcp.cpu)
    assert scrapes.note == "not recorded"
    text = "\n".join(cost_lines(run, {"default": machine}))
    assert "Load generator: not watched in this run" in text


def test_the_load_generator_line_flags_saturation(run_copy):
    import json
    data = json.loads((run_copy / "run.json").read_text())
    data["load_generator"] = {"seconds": 300, "host_cpus": 2, "jmeter_cpu_pct_mean": 120.0, "jmeter_cpu_pct_p99": 190.0,
                              "host_busy_pct_mean": 90.0, "host_busy_pct_p99": 99.0, "timer_lag_ms_p50": 3.0,
                              "timer_lag_ms_p99": 240.0, "saturated": True, "why": "timer lag 240 ms"}
    (run_copy / "run.json").write_text(json.dumps(data))
    run, machine = _machine(run_copy, "default")
    text = "\n".join(cost_lines(run, {"default": machine}))
    assert "**The load generator was saturated:** timer lag 240 ms" in text and "p99 240.0 ms" in text


def test_the_scrapes_cpu_comes_from_the_jvm_profile_when_there_is_one(run_copy):
    _write(run_copy, "tuned", pcp_ms=10, openmetrics_ms=28, mock_ms=100, scrape_s=0.5)
    profile = run_copy / "tuned" / "profile"
    profile.mkdir()
    # 4 of 200 CPU samples in the scrape: 2 % of the JVM's 900 ms/s = 18 ms/s = 0.9 % of 2 CPUs
    (profile / "cpu.collapsed").write_text(
        "java/lang/Thread.run;org/springframework/boot/actuate/metrics/export/prometheus/"
        "PrometheusScrapeEndpoint.scrape 3\n"
        "java/lang/Thread.run;io/prometheus/client/exporter/common/TextFormat.write004_[j] 1\n"
        "java/lang/Thread.run;org/apache/camel/Route.process 196\n"
        "a malformed line\n")
    run, machine = _machine(run_copy, "tuned")
    scrapes = machine_cost(machine).shares[1]
    assert math.isclose(scrapes.cpu, 0.009, rel_tol=1e-6), scrapes
    assert scrapes.note == "2.0 % of the JVM's 200 CPU samples (profile)"
