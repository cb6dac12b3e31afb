"""summary.md of the recorded fixture run against figures computed independently from its raw files
(tests/independent.py), and the stop of the default machine (its JVM was frozen with SIGSTOP)."""
import json
import re
from datetime import UTC, datetime

import pytest

from . import independent as ind
from .conftest import FIXTURE, run_report

WARMUP = json.loads((FIXTURE / "run.json").read_text())["load"]["warmup_s"]


def table(summary):
    """The Results table: {row name: (default cell, tuned cell, ratio cell, interval cell)}."""
    section = summary.split("## Results", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 5 and not set(cells[1]) <= {"-", ":"}:
            rows[cells[0]] = tuple(cells[1:])
    return rows


def number(cell):
    """The first number of a cell ('1,234.5 ± 3.0 req/s' -> 1234.5)."""
    return float(re.search(r"-?[\d,]+(\.\d+)?", cell).group(0).replace(",", ""))


def decimals(cell):
    found = re.search(r"[\d,]+\.(\d+)", cell)
    return len(found.group(1)) if found else 0


def close_to_shown(cell, expected):
    """The cell shows `expected` rounded to the cell's own precision."""
    return abs(number(cell) - expected) <= 0.5 * 10 ** -decimals(cell) + 1e-9


@pytest.fixture(scope="module")
def raw():
    data = {}
    for i, m in enumerate(("default", "tuned")):
        rows = ind.jtl_rows(FIXTURE / m / "jmeter.jtl")
        first, last = min(r["ts"] for r in rows), max(r["ts"] for r in rows)
        data[m] = dict(rows=rows, col=i, first_s=first / 1000, start_s=first / 1000 + WARMUP, end_s=last / 1000,
                       figures=ind.load_figures(rows, WARMUP), csv=FIXTURE / m / "pcp" / "metrics.csv")
    return data


def test_summary_says_what_warm_up_it_excluded(fixture_report):
    _, summary = fixture_report
    assert f"Figures exclude the first {WARMUP} s of warm-up" in summary


@pytest.mark.parametrize("machine", ["default", "tuned"])
def test_request_figures_equal_an_independent_count_of_the_jtl(fixture_report, raw, machine):
    rows = table(fixture_report[1])
    fig, col = raw[machine]["figures"], raw[machine]["col"]
    assert number(rows["requests"][col]) == fig["requests"]
    tps_mean, tps_sd = rows["successful TPS (mean ± σ of 1 s)"][col].split(" ± ")
    assert close_to_shown(tps_mean, fig["tps"]) and close_to_shown(tps_sd, fig["tps_sd"])
    assert close_to_shown(rows["errors"][col], fig["error_pct"])
    for p in ("p50", "p95", "p99"):
        assert number(rows[f"latency {p} (successful)"][col]) == fig[p]
    lat_mean, lat_sd = rows["latency mean ± σ (successful)"][col].split(" ± ")
    assert close_to_shown(lat_mean, fig["mean"]) and close_to_shown(lat_sd, fig["sd"])
    assert close_to_shown(rows["measured window"][col], fig["window_s"])


@pytest.mark.parametrize("machine", ["default", "tuned"])
def test_pcp_figures_equal_an_independent_reading_of_metrics_csv(fixture_report, raw, machine):
    rows = table(fixture_report[1])
    r, col = raw[machine], raw[machine]["col"]
    load = ind.summed_by_time(ind.metric_rows(r["csv"], "kernel.all.load"), lambda i: i == "1 minute")
    assert close_to_shown(rows["max load average (1 min)"][col], ind.max_in(load, r["start_s"], r["end_s"]))
    rss = ind.metric_rows(r["csv"], "hotproc.psinfo.rss")
    java = ind.summed_by_time(rss, lambda i: i.split(" ", 1)[1].endswith("java"))
    httpd = ind.summed_by_time(rss, lambda i: "apache2" in i)
    assert close_to_shown(rows["peak RSS java"][col], ind.max_in(java, r["start_s"], r["end_s"]) / 1024)
    assert close_to_shown(rows["peak RSS httpd"][col], ind.max_in(httpd, r["start_s"], r["end_s"]) / 1024)
    mock = ind.summed_by_time(rss, lambda i: "python" in i)  # the mock is the only python process recorded
    assert close_to_shown(rows["peak RSS mock"][col], ind.max_in(mock, r["start_s"], r["end_s"]) / 1024)
    gc = ind.summed_by_time(ind.metric_rows(r["csv"], "openmetrics.app.jvm_gc_pause_seconds_sum"))
    pauses = ind.summed_by_time(ind.metric_rows(r["csv"], "openmetrics.app.jvm_gc_pause_seconds_count"))
    gc_cell = rows["total GC pause"][col]  # "0.062 s (11 pauses)"
    assert close_to_shown(gc_cell, ind.integral(gc, r["start_s"], r["end_s"]))
    assert gc_cell.endswith(f"({round(ind.integral(pauses, r['start_s'], r['end_s'])):,} pauses)")


def test_ratios_and_verdict_use_the_same_figures(fixture_report, raw):
    summary = fixture_report[1]
    ratio = raw["tuned"]["figures"]["tps"] / raw["default"]["figures"]["tps"]
    assert table(summary)["successful TPS (mean ± σ of 1 s)"][2] == f"{ratio:.2f}×"
    assert f"tuned served {ratio:.2f}× the successful TPS of default" in summary.splitlines()[2]


def test_default_stopped_answering_at_the_time_its_jvm_was_frozen(fixture_report, raw):
    summary = fixture_report[1]
    rows = raw["default"]["rows"]
    at_s = ind.last_answer_before_silence(rows) / 1000
    clock = datetime.fromtimestamp(at_s, tz=UTC).strftime("%H:%M:%S")
    rel = round(at_s - raw["default"]["first_s"])
    phrase = f"default stopped answering at {clock} UTC (+{rel} s)"
    assert phrase in summary.splitlines()[2], "the verdict line names the stop"
    assert f"### {phrase}" in summary
    # ground truth: the recording script's SIGSTOP time (whole seconds)
    frozen = re.search(r"SIGSTOP java \d+ at (\S+)", (FIXTURE / "default" / "recording.txt").read_text()).group(1)
    frozen_s = datetime.fromisoformat(frozen.replace("Z", "+00:00")).timestamp()
    assert -1.0 <= at_s - frozen_s <= 2.0
    # evidence: every request after that time timed out
    after = [r for r in rows if r["ts"] >= at_s * 1000]
    timeouts = [r for r in after if r["success"] == "false" and "SocketTimeoutException" in r["responseCode"]]
    assert len(after) > 20 and len(timeouts) == len(after)
    assert f"{len(after):,} requests, 0 succeeded" in summary
    assert f"| java.net.SocketTimeoutException: Read timed out | {len(after):,} | 100.0 % |" in summary


def test_tuned_did_not_stop(fixture_report):
    assert "tuned stopped answering" not in fixture_report[1]


def test_versions_and_knob_diff_come_from_run_json(fixture_report):
    summary = fixture_report[1]
    run = json.loads((FIXTURE / "run.json").read_text())
    for knob, values in run["knob_diff"].items():
        shown = ["null" if values[m] is None else str(values[m]) for m in ("default", "tuned")]
        assert f"| {knob} | {shown[0]} | {shown[1]} |" in summary
    assert f"| java | {run['machines']['default']['versions']['java']} |" in summary


def test_missing_logs_are_listed(fixture_report):
    summary = fixture_report[1]
    section = summary.split("## Missing or unreadable", 1)[1]
    assert "- default/logs/journal.txt" in section and "- tuned/logs/journal.txt" in section


def test_warmup_option_overrides_run_json(run_copy):
    done = run_report(run_copy, "--warmup", "60")
    assert done.returncode == 0, done.stderr
    summary = (run_copy / "summary.md").read_text()
    assert "Figures exclude the first 60 s of warm-up" in summary and "--warmup" in summary
    expected = ind.load_figures(ind.jtl_rows(run_copy / "tuned" / "jmeter.jtl"), 60)
    assert number(table(summary)["requests"][1]) == expected["requests"]
