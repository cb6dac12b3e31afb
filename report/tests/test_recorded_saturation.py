"""The saturation analysis on a recorded lab run with known saturation: results/20261124T122420Z-full-explain, 150
users, 150 s ramp-up, 20 min, both machines under QEMU/TCG with profiling on, trimmed into
fixtures/20261124T122420Z-both-fell.tar.xz (fixtures/record/trim_lab_run.py). What happened, read from its charts
and logs by hand: both machines' CPU was busy from the first seconds; default's HTTPD workers pegged at 150 of
150 (MaxRequestWorkers in httpd-error.log), it stopped answering, its JVM was OOM-killed (journal) and the
conntrack table filled; tuned's AJP threads pegged at 150 of 150, its 200 AJP connections filled shortly before it
stopped answering with HTTP 503s; on both, pmcd cut PCP's openmetrics agent off under load and the app's metrics
ended there."""
import tarfile
from pathlib import Path

import pytest

from report.explain.saturation import analyse
from report.read.knobs import read_knobs
from report.read.runinfo import RunInfo
from report.render.saturation import saturation_lines
from report.stats.machine import load_machine
from report.tests.catalog import write_snapshot

FIXTURE = Path(__file__).parent / "fixtures" / "20261124T122420Z-both-fell.tar.xz"


@pytest.fixture(scope="module")
def fell(tmp_path_factory):
    """{"run", "machines", "sat": {name: Saturation}, "text": the summary's section}"""
    root = tmp_path_factory.mktemp("recorded")
    with tarfile.open(FIXTURE) as tar:
        tar.extractall(root, filter="data")
    write_snapshot(root / "20261124T122420Z-both-fell")    # the catalog's snapshot, as the lab now writes it
    run = RunInfo(root / "20261124T122420Z-both-fell")
    machines = {n: load_machine(run, n, run.warmup_s) for n in ("default", "tuned")}
    sat = {n: analyse(m, read_knobs(m, run)) for n, m in machines.items()}
    return {"run": run, "machines": machines, "sat": sat, "text": "\n".join(saturation_lines(run, machines))}


def _row(sat, name):
    found = [r for r in sat.resources if r.name.startswith(name)]
    assert found, f"no row {name!r} in {[r.name for r in sat.resources]}"
    return found[0]


def _held(sat, name):
    return round(_row(sat, name).held_from - sat.t0)


def _section(text, machine):
    return text.split(f"### {machine}", 1)[1].split("###", 1)[0]


def test_default_pegged_its_httpd_workers_and_was_oom_killed(fell):
    sat = fell["sat"]["default"]
    httpd = _row(sat, "HTTPD workers")
    assert (httpd.peak, httpd.limit) == (150, 150) and httpd.limit_source.startswith("default")
    assert _held(sat, "HTTPD workers") == 118 and httpd.near_s > 0.4 * httpd.window_s
    cpu = _row(sat, "CPU")
    assert 99 <= cpu.peak <= 100 and _held(sat, "CPU") < 10      # a share of CPU time: never above 100 %
    memory = _row(sat, "Memory")
    assert memory.peak / memory.limit > 0.95
    assert memory.errors.startswith("OOM kills 1 (journal")       # the kill PCP's stalled counter missed
    conntrack = _row(sat, "Conntrack")
    assert conntrack.errors.startswith("table full")
    tomcat = _row(sat, "Tomcat threads (http-nio-8080, traffic)")
    assert tomcat.limit == 200 and tomcat.peak < 0.9 * tomcat.limit and tomcat.held_from is None


def test_default_story_in_order(fell):
    story = _section(fell["text"], "default")
    order = [story.index(s) for s in ("1. CPU: 100 % busy from +2 s", "HTTPD workers: 150 of 150 workers from +118 s",
                                      "Memory: 435 of 457 MiB from +264 s", "Conntrack: conntrack table full")]
    assert order == sorted(order), story
    symptoms = story.split("Symptoms, in time order:", 1)[1]
    steps = ["the app's own metrics stop at +440 s", "PCP lost agents", "stopped answering at +649 s",
             "OOM kill (journal: java (pid 7376) was killed holding 274 MiB; it was the largest process",
             "camel-app restarted (journal) at +852 s"]
    at = [symptoms.index(s) for s in steps]
    assert at == sorted(at), symptoms
    assert "pmcd cut that agent off 38 s later (pcp/pmlogger-20261124.12.34.56.log)" in symptoms


def test_tuned_pegged_its_ajp_threads_then_its_connections_then_stopped(fell):
    sat = fell["sat"]["tuned"]
    assert sat.traffic.startswith("ajp-apr-127.0.0.1-8009")
    threads = _row(sat, "Tomcat threads (ajp-apr-127.0.0.1-8009, traffic)")
    assert (threads.peak, threads.limit) == (150, 150) and _held(sat, "Tomcat threads (ajp") == 142
    connections = _row(sat, "Tomcat connections (ajp-apr-127.0.0.1-8009, traffic)")
    assert (connections.peak, connections.limit) == (200, 200) and _held(sat, "Tomcat connections (ajp") == 566
    metrics_port = _row(sat, "Tomcat threads (http-nio-8080)")
    assert metrics_port.peak <= 2 and metrics_port.held_from is None
    assert _row(sat, "HTTPD workers").peak == 150
    story = _section(fell["text"], "tuned")
    filled = story.index("Tomcat connections (ajp-apr-127.0.0.1-8009, traffic): 200 of 200 connections from +566 s")
    assert story.index("Tomcat threads (ajp-apr-127.0.0.1-8009, traffic): 150 of 150 threads from +142 s") < filled
    symptoms = story.split("Symptoms, in time order:", 1)[1]
    assert "stopped answering at +603 s (12:45:11 UTC), 97 % HTTP 503 Service Unavailable" in symptoms
    assert symptoms.index("stopped answering at +603 s") < symptoms.index("OOM kill (journal")


def test_every_row_stays_within_its_limit_or_says_why(fell):
    for name, sat in fell["sat"].items():
        for row in sat.resources:
            if row.unit == "%":
                assert row.peak <= 100.0 + 1e-9, (name, row.name, row.peak)


def test_the_processes_that_ended_are_listed_with_cause_and_restart(fell):
    """The log findings name each exit of the recorded run (journal.txt) with its cause and its restart."""
    from report.render.sections import logs_section
    text = "\n".join(logs_section(fell["run"], fell["machines"]))
    default = text.split("**default**", 1)[1].split("**tuned**", 1)[0]
    tuned = text.split("**tuned**", 1)[1]
    assert ("- 12:49:16 UTC camel-app ended — OOM killer (java (pid 7376) was killed holding 274 MiB; it was the "
            "largest process (274 MiB of the 357 MiB all processes held)); code=killed, status=9/KILL; "
            "restarted 12:49:21 UTC") in default
    assert "- 12:45:31 UTC lab-pmlogger ended — code=exited, status=1/FAILURE; restarted 12:45:37 UTC" in default
    assert "- 12:51:58 UTC camel-app ended — OOM killer (java (pid 7727) was killed holding 289 MiB" in tuned
    assert tuned.count(" ended — ") == 2, tuned


def test_a_log_its_configuration_never_writes_is_not_missing(fell):
    """default ran with jvm_gc_log false (its config/knobs.json) and wrote no gc.log; tuned had it on and did."""
    from report.render.integrity import machine_lines
    from report.render.sections import missing_section
    missing = missing_section(fell["run"], fell["machines"])
    assert "- default/logs/gc.log" not in missing and "- tuned/logs/gc.log" not in missing
    assert "- default/logs/app.log" not in missing and "- default/logs/journal.txt" not in missing
    default = fell["machines"]["default"]
    lines = machine_lines(default, default.folder, read_knobs(default, fell["run"]))
    logs = next(line for line in lines if line.startswith("- logs the manifest names"))
    assert logs.endswith("; gc.log not written: jvm_gc_log is false"), logs


def test_the_oom_kill_names_what_held_the_memory(fell):
    hints = {h.what: h for h in fell["machines"]["default"].hints}
    told = hints["OOM killer: what held the memory"]
    assert (told.file, told.count) == ("logs/journal.txt", 1)
    assert told.first == ("java (pid 7376) was killed holding 274 MiB; it was the largest process (274 MiB of the "
                          "357 MiB all processes held)")
