"""Run folders made from synthetic paired samples, through the real commands: python -m report run (verdict with
intervals, verdict.json), python -m report combine (a crossover series) and python -m report compare. The TPS
interval is recomputed here independently (plain sums, arch's bootstrap indices, scipy's t)."""
import csv
import json
import math
import re
import subprocess
import sys

import numpy as np
import pytest
from arch.bootstrap import CircularBlockBootstrap
from scipy import stats

from runfolder import schema

from .conftest import REPO
from .synthetic import paired_samples

WARMUP = 20
SECONDS = 240


# what run.json says of the load and the host, as the lab writes it (lab/experiment/record.py): the A/A
# calibration matches runs on it (report/read/calibrations.py fingerprint)
LOAD = {"model": "closed", "users": 150, "ramp_up_s": 150, "duration_s": 300, "keep_alive": True, "scheme": "http",
        "mix": {"get": 60, "summary": 25, "post": 10, "delete": 5}}
HOST = {"provider": "libvirt", "accelerator": "kvm", "host": {"cpus": 2, "memory_mb": 7900}}


def write_run(folder, sides, design=None, warmup=WARMUP, load=None):
    folder.mkdir(parents=True)
    for name, s in sides.items():
        (folder / name).mkdir()
        with open(folder / name / "jmeter.jtl", "w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["timeStamp", "elapsed", "label", "responseCode", "responseMessage", "success",
                          "failureMessage"])
            for start, elapsed, ok, label in zip(s.start, s.elapsed_ms, s.ok, s.label, strict=True):
                out.writerow([int(round(start * 1000)), int(elapsed), label, "200" if ok else "503",
                              "" if ok else "Service Unavailable", "true" if ok else "false", ""])
    record = {"run_id": folder.name, "status": "complete", "load": {**LOAD, **(load or {}), "warmup_s": warmup},
              **HOST}
    if design:
        record["design"] = design
    (folder / "run.json").write_text(json.dumps(record))
    return folder


def python(*args):
    done = subprocess.run([sys.executable, *args], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def read_jtl_plain(path):
    with open(path, newline="") as f:
        return [(int(r["timeStamp"]) / 1000.0, r["success"] == "true") for r in csv.DictReader(f)]


def independent_tps_interval(folder, block, resamples, seed):
    rows = {m: read_jtl_plain(folder / m / "jmeter.jtl") for m in ("default", "tuned")}
    start = max(min(t for t, _ in r) for r in rows.values()) + WARMUP
    end = min(max(t for t, _ in r) for r in rows.values())
    n = int(math.floor(end - start))
    ok = {m: np.zeros(n) for m in rows}
    for m, r in rows.items():
        for t, success in r:
            k = int((t - start) // 1.0)
            if 0 <= k < n and t >= start and success:
                ok[m][k] += 1
    estimate = ok["tuned"].sum() / ok["default"].sum()
    bs = CircularBlockBootstrap(block, np.arange(n), seed=np.random.default_rng(seed))
    logs = []
    for data in bs.bootstrap(resamples):
        idx = data[0][0]
        logs.append(math.log(ok["tuned"][idx].sum() / ok["default"][idx].sum()))
    # the bootstrap's spread, widened by the b/n of the variance its blocks leave out (blocks.centering_inflation)
    half = stats.t.ppf(0.975, max(1, n // block - 1)) * np.std(logs, ddof=1) / math.sqrt(1 - block / n)
    return n, estimate, estimate * math.exp(-half), estimate * math.exp(half)


def pct(r):
    change = 100.0 * (r - 1.0)
    digits = 0 if abs(change) >= 10 else 1
    return f"{'+' if change >= 0 else '−'}{abs(change):,.{digits}f}"


@pytest.fixture(scope="module")
def ab_run(tmp_path_factory):
    folder = write_run(tmp_path_factory.mktemp("results") / "20261123T100000Z-ab",
                       paired_samples(5, seconds=SECONDS, effect=1.4, latency_factor=0.6))
    python("-m", "report", "run", str(folder))
    return folder


def test_the_verdict_states_the_effect_with_its_interval(ab_run):
    summary = (ab_run / "summary.md").read_text()
    record = json.loads((ab_run / "verdict.json").read_text())
    assert schema.problems("verdict.json", record) == [], "the verdict as the run folder's contract says"
    method = record["method"]
    n, estimate, low, high = independent_tps_interval(ab_run, method["block_windows"]["tps"], method["resamples"],
                                                      method["seed"])
    assert method["windows"] == n
    tps = record["effects"]["tps"]
    assert tps["estimate"] == pytest.approx(estimate, rel=1e-12)
    assert tps["low"] == pytest.approx(low, rel=1e-9) and tps["high"] == pytest.approx(high, rel=1e-9)
    words = f"tuned: {pct(estimate)} % successful TPS (95 % CI {pct(low)} … {pct(high)} %)"
    assert f"**Verdict:** {words}" in summary
    assert ("**Intervals:** within-run noise only: no A/A calibration of this load (run ./start.sh --aa with the "
            "same load).") in summary
    assert record["interval"].startswith("within-run noise only: no A/A calibration of this load")
    assert tps["ci_within"] == {"low": tps["low"], "high": tps["high"]}     # nothing to widen
    # the results table carries the same interval, and latency intervals where enough requests succeeded
    row = next(line for line in summary.splitlines() if line.startswith("| successful TPS"))
    assert f"(95 % CI {pct(low)} … {pct(high)} %)" in row
    p50 = record["effects"]["p50"]
    assert p50["low"] < 0.6 < p50["high"] and p50["detectable"]


def test_an_aa_run_calibrates_the_next_reports(ab_run, tmp_path_factory):
    results = ab_run.parent
    aa = write_run(results / "20261123T090000Z-aa", paired_samples(6, seconds=SECONDS),
                   design={"kind": "aa", "configurations": {"default": "default", "tuned": "default"}})
    python("-m", "report", "run", str(aa))
    aa_summary = (aa / "summary.md").read_text()
    assert "A/A (both machines ran the default configuration): the twins are interchangeable" in aa_summary
    python("-m", "report", "run", str(ab_run))            # written again: now an A/A run of its load lies beside it
    summary = (ab_run / "summary.md").read_text()
    assert ("**Intervals:** within-run noise + between-run variance from 1 matching A/A trial "
            "(20261123T090000Z-aa).") in summary
    assert "One A/A trial gives a very uncertain τ" in summary
    record = json.loads((ab_run / "verdict.json").read_text())
    assert record["calibration"]["trials"] == ["20261123T090000Z-aa"] and record["calibration"]["applied"]
    tps = record["effects"]["tps"]      # the within-run interval kept; the verdict's at least as wide
    assert tps["low"] <= tps["ci_within"]["low"] < tps["ci_within"]["high"] <= tps["high"]


def test_a_crossover_series_is_combined_by_configuration(tmp_path):
    straight = write_run(tmp_path / "20261123T110000Z-t1", paired_samples(8, seconds=SECONDS, effect=1.2, bias=1.15),
                         design={"kind": "ab", "trial": 1, "trials": 2, "series": "S",
                                 "machines": {"default": "default", "tuned": "tuned"}})
    swapped = write_run(tmp_path / "20261123T111500Z-t2",
                        paired_samples(9, seconds=SECONDS, effect=1.2, bias=1 / 1.15),
                        design={"kind": "ab", "trial": 2, "trials": 2, "series": "S",
                                "machines": {"default": "tuned", "tuned": "default"}})
    for folder in (straight, swapped):
        python("-m", "report", "run", str(folder))
    assert "roles swapped — the default configuration ran on machine tuned" in (swapped / "summary.md").read_text()
    series = tmp_path / "20261123T110000Z-series"
    out = python("-m", "report", "combine", str(series), str(straight), str(swapped)).stdout
    record = json.loads((series / "verdict.json").read_text())
    assert schema.problems("verdict.json", record) == [], "a series' verdict as the run folder's contract says"
    single = [json.loads((f / "verdict.json").read_text())["effects"]["tps"]["estimate"] for f in (straight, swapped)]
    combined = record["effects"]["tps"]["estimate"]
    assert combined == pytest.approx(math.sqrt(single[0] * single[1]), rel=1e-9)   # the orientation means
    assert record["machine_bias"]["tps"]["estimate"] == pytest.approx(math.sqrt(single[0] / single[1]), rel=1e-9)
    assert record["effects"]["tps"]["low"] < 1.2 < record["effects"]["tps"]["high"]
    summary = (series / "summary.md").read_text()
    assert "combined over 2 trials in both orientations" in summary and "cancelled by the swap" in summary
    assert "[20261123T111500Z-t2](../20261123T111500Z-t2/report.html)" in summary
    assert "id='forest'" in (series / "report.html").read_text()     # each trial and the combination, drawn
    assert record["verdict"] in out
    assert record["effects"]["tps"]["intervals"] == "within-run" and record["calibration"]["trials"] == []
    # issue 52: an A/A run of the load beside the trials puts its between-run variance in the series' intervals
    aa = write_run(tmp_path / "20261123T100000Z-aa", paired_samples(6, seconds=SECONDS),
                   design={"kind": "aa", "configurations": {"default": "default", "tuned": "default"}})
    python("-m", "report", "run", str(aa))
    python("-m", "report", "combine", str(series), str(straight), str(swapped))
    calibrated = json.loads((series / "verdict.json").read_text())
    assert calibrated["calibration"]["trials"] == [aa.name]
    widened = [f for f, e in calibrated["effects"].items() if e["intervals"] == f"calibrated (A/A runs {aa.name})"]
    assert "tps" in widened and calibrated["effects"]["tps"]["ci_within"]["low"] == record["effects"]["tps"]["low"]
    assert "A/A runs " + aa.name in (series / "summary.md").read_text()
    # each interval's t degrees of freedom (format 4): the tuner re-levels a series' interval at its look; the interval
    # is the estimate ± t·se on the log scale, so both halves give one se
    for tps in (record["effects"]["tps"], calibrated["effects"]["tps"]):
        up, down = (math.log(tps["high"] / tps["estimate"]), math.log(tps["estimate"] / tps["low"]))
        assert tps["df"] > 0 and up == pytest.approx(down, rel=1e-9), tps


def test_compare_puts_runs_side_by_side(ab_run, tmp_path):
    other = write_run(tmp_path / "20261123T120000Z-more", paired_samples(12, seconds=SECONDS, rate=30.0, effect=1.4))
    out = tmp_path / "cmp"
    python("-m", "report", "compare", str(out), str(ab_run), str(other))
    text = (out / "compare.md").read_text()
    assert "comparison of 2 runs" in text and "## successful TPS" in text
    row = next(line for line in text.split("## successful TPS")[1].splitlines()
               if line.startswith("| 20261123T120000Z"))
    # the second run's default served ~30 req/s against ~20: +50 % with an interval
    change = re.findall(r"\+(\d+) % \(95 % CI", row)
    assert change and 35 <= int(change[0]) <= 65, row
    assert (out / "compare.html").read_text().startswith("<!DOCTYPE html>")
    assert "of service sample; status" in text and "different services" not in text
    record = json.loads((other / "run.json").read_text())          # the second run: a service of the user's
    (other / "run.json").write_text(json.dumps({**record, "service": {"name": "petclinic-rest"}}))
    python("-m", "report", "compare", str(tmp_path / "cmp2"), str(ab_run), str(other))
    text = (tmp_path / "cmp2" / "compare.md").read_text()
    assert "of service petclinic-rest; status" in text and "These runs are of different services" in text
    assert "Not the first run's load" not in text, "the services' difference is said once, above"
    # what each column ran, and a load that is not the first run's
    record = json.loads((other / "run.json").read_text())
    (other / "run.json").write_text(json.dumps({
        **record, "service": None, "load": {**record["load"], "users": 20},
        "design": {"kind": "ab", "configurations": {"default": "tuned", "tuned": "tuned"},
                   "machines": {"default": "default", "tuned": "tuned"}},
        "overrides": {"tuned": {"app_compose_pool_size": 40}}}))
    python("-m", "report", "compare", str(tmp_path / "cmp3"), str(ab_run), str(other))
    text = (tmp_path / "cmp3" / "compare.md").read_text()
    first, second = (line for line in text.splitlines() if line.startswith("- ["))
    assert "the default column ran the catalog (default), the tuned column ran knob set tuned" in first
    assert ("the default column ran knob set tuned (ansible/knob_sets/tuned.yml), the tuned column ran knob set "
            "tuned (ansible/knob_sets/tuned.yml) with app_compose_pool_size=40 given;") in second
    assert "Not the first run's load or kind of host" in text and "20261123T120000Z-more: users 20, not 150" in text


def with_jvm_cpu(folder, ms_per_s: dict, t0=1_795_000_000, seconds=SECONDS, step_s=10):
    """Each side's JVM CPU as PCP records it (pcp/metrics.csv: hotproc's rate since the sample before, ms per s)."""
    for side, ms in ms_per_s.items():
        pcp = folder / side / "pcp"
        pcp.mkdir(parents=True, exist_ok=True)
        with open(pcp / "metrics.csv", "w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["time", "metric", "instance", "value"])
            for t in range(t0, t0 + seconds + 1, step_s):
                out.writerow([t, "hotproc.psinfo.utime", "000937 /usr/bin/java", ms * 0.8])
                out.writerow([t, "hotproc.psinfo.stime", "000937 /usr/bin/java", ms * 0.2])
                out.writerow([t, "hotproc.psinfo.rss", "000937 /usr/bin/java", 250 * 1024])
        (pcp / "processes.csv").write_text("instance,psargs\n000937 /usr/bin/java,/usr/bin/java -jar app.jar\n")
    return folder


def test_compare_shows_the_jvms_cpu_per_request_of_runs_that_recorded_it(tmp_path):
    """Runs whose PCP archives hold the JVM's CPU (every run on the machines since the figure came) compare as
    any other figure: each side's ms per request, not a crash on its unit."""
    runs = [with_jvm_cpu(write_run(tmp_path / f"20261123T1{n}0000Z-cpu", paired_samples(20 + n, seconds=SECONDS)),
                         {"default": 300.0, "tuned": 450.0 * n}) for n in (1, 2)]
    python("-m", "report", "compare", str(tmp_path / "cmp"), *map(str, runs))
    section = (tmp_path / "cmp" / "compare.md").read_text().split("## JVM CPU per request")[1]
    rows = [line for line in section.splitlines() if line.startswith("| 20261123T")]
    assert len(rows) == 2 and all(re.search(r"\| \d+\.\d+ ms \| \d+\.\d+ ms \|", row) for row in rows), rows
    # tuned at 1.5x default's CPU in the first run, twice that in the second: each with its interval
    assert re.search(r"\| \+\d+ % \(95 % CI [^|]+\|  \|  \|$", rows[0]), rows[0]
    assert re.search(r"\| \+\d+ % \(95 % CI [^|]+\|[^|]+\| \+\d+ % \(95 % CI [^|]+\|$", rows[1]), rows[1]


def test_compare_has_a_unit_for_every_verdict_figure():
    from report.fmt import UNITS
    from report.render.compare import DECIMALS
    from report.stats.uncertainty import FIGURES
    assert set(DECIMALS) == set(FIGURES) == set(UNITS)


def test_bad_folders_are_refused(tmp_path):
    done = subprocess.run([sys.executable, "-m", "report", "compare", str(tmp_path / "o"), str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 2 and "at least two" in done.stderr
    done = subprocess.run([sys.executable, "-m", "report", "combine", str(tmp_path / "s"), str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 2 and "not run folders" in done.stderr and not (tmp_path / "s").exists()


def test_a_run_of_a_named_knob_set_and_load_says_so(tmp_path):
    folder = write_run(tmp_path / "20261123T120000Z-article", paired_samples(10, seconds=SECONDS, effect=1.1),
                       design={"kind": "ab", "configurations": {"default": "default", "tuned": "article-2018"},
                               "machines": {"default": "default", "tuned": "tuned"}})
    record = json.loads((folder / "run.json").read_text())
    record["load"].update({"name": "article-2018", "model": "closed", "users": 150, "ramp_up_s": 150,
                           "duration_s": 300, "keep_alive": False})
    (folder / "run.json").write_text(json.dumps(record))
    python("-m", "report", "run", str(folder))
    summary = (folder / "summary.md").read_text()
    assert ("Knob sets: the default column ran the catalog (default), the tuned column ran knob set article-2018 "
            "(ansible/knob_sets/article-2018.yml).") in summary
    assert "load article-2018: closed model, 150 users" in summary and "keep-alive off" in summary
    assert "article-2018" in (folder / "report.html").read_text()


def test_a_run_of_one_set_on_both_sides_says_which_side_was_given_what(tmp_path):
    """--knob-set tuned=default --set tuned:jvm_gc=parallel: both columns ran the catalog, one with a value given."""
    folder = write_run(tmp_path / "20261203T120000Z-gc", paired_samples(10, seconds=SECONDS, effect=1.1),
                       design={"kind": "ab", "configurations": {"default": "default", "tuned": "default"},
                               "machines": {"default": "default", "tuned": "tuned"}})
    record = json.loads((folder / "run.json").read_text())
    record["overrides"] = {"tuned": {"jvm_gc": "parallel"}}
    (folder / "run.json").write_text(json.dumps(record))
    python("-m", "report", "run", str(folder))
    assert ("Knob sets: the default column ran the catalog (default), the tuned column ran the catalog (default) "
            "with jvm_gc=parallel given.") in (folder / "summary.md").read_text()
