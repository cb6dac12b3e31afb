"""The sweep's and the ablation's report from recorded trial verdicts: the best-value rule, the overlap
warning, the share of the gain per tier with its interval."""
import json
import math

import pytest

from report.commands.sweep import write
from report.read.sweep import load
from report.render.sweep import _share_text
from report.stats.sweep import gain_told_apart, share


def effect(estimate, half=0.05, errors=0.0):
    """A trial's effects as verdict.json records them (with Effect.detectable: the interval excludes none)."""
    return {"tps": {"default": 10.0, "tuned": 10 * estimate, "estimate": estimate, "low": estimate - half,
                    "high": estimate + half, "detectable": not estimate - half <= 1 <= estimate + half},
            "error_pct": {"default": 0.0, "tuned": errors, "estimate": errors, "detectable": False},
            "p99": {"default": 900, "tuned": 800, "estimate": 0.89, "low": 0.8, "high": 0.95, "detectable": True}}


def write_sweep(tmp_path, kind, points, axes=()):
    folder = tmp_path / f"20261125T000000Z-{kind}"
    folder.mkdir()
    recorded = []
    for k, (label, values, tier, effects) in enumerate(points):
        run_dir = None
        if effects is not None:
            run_dir = tmp_path / f"20261125T00010{k}Z-{label}"
            run_dir.mkdir()
            (run_dir / "verdict.json").write_text(json.dumps({"effects": effects}))
        recorded.append({"label": label, "values": values, "about": label, "tier": tier,
                         "run_dir": str(run_dir) if run_dir else None, "exit_code": 0 if run_dir else None})
    (folder / "sweep.json").write_text(json.dumps({
        "sweep_id": folder.name, "kind": kind, "configuration": "tuned", "status": "complete", "axes": list(axes),
        "rule": {"best": "highest ratio with errors ≤ 0.1 %", "max_error_pct": 0.1}, "load": {}, "points": recorded}))
    return folder


def test_the_best_value_keeps_errors_within_the_rule(tmp_path):
    axes = [{"side": "tuned", "knob": "tomcat_threads_max", "values": [100, 150, 200]}]
    folder = write_sweep(tmp_path, "sweep", [("t100", {"tomcat_threads_max": 100}, None, effect(1.2)),
                                              ("t150", {"tomcat_threads_max": 150}, None, effect(1.5, errors=2.0)),
                                              ("t200", {"tomcat_threads_max": 200}, None, effect(1.4))], axes)
    write(folder)
    text = (folder / "sweep.md").read_text()
    assert "**Best value: t200**" in text            # t150 is faster but breaks the error rule
    assert "cannot tell the two apart" not in text    # 1.35–1.45 vs 1.15–1.25: apart
    assert len([line for line in text.splitlines() if line.startswith("| t") and "report.html" in line]) == 3
    assert "data:image/png;base64," in (folder / "sweep.html").read_text()


def test_a_sweep_of_a_service_names_its_plan_as_the_load(tmp_path):
    folder = write_sweep(tmp_path, "sweep", [("a", {"x": 1}, None, effect(1.2)), ("b", {"x": 2}, None, effect(1.3))])
    data = json.loads((folder / "sweep.json").read_text())
    data.update(load={"name": "lab", "model": "closed", "users": 20},
                service={"name": "petclinic-rest", "plan": "/s/examples/petclinic-rest.jmx"})
    (folder / "sweep.json").write_text(json.dumps(data))
    write(folder)
    assert "Load: service petclinic-rest's own plan petclinic-rest.jmx, closed model, 20 users" in \
        (folder / "sweep.md").read_text()


def test_no_trial_within_the_rule_is_said(tmp_path):
    folder = write_sweep(tmp_path, "sweep", [("a", {"x": 1}, None, effect(1.2, errors=5)),
                                              ("b", {"x": 2}, None, effect(1.3, errors=1))])
    write(folder)
    assert "**Best value: none** — no trial kept the tuned side's errors at or below 0.1 %" in \
        (folder / "sweep.md").read_text()


def test_each_tier_gets_its_share_of_the_gain_with_an_interval(tmp_path):
    folder = write_sweep(tmp_path, "ablate", [("full", {}, None, effect(1.5)),
                                               ("no-httpd", {"httpd_mpm": "event"}, "httpd", effect(1.2)),
                                               ("no-jvm", {"jvm_gc": None}, "jvm", effect(1.5)),
                                               ("no-base", {"base_sysctl": {}}, "base", None)])
    data, trials = load(folder)
    value, low, high = share(trials[0], trials[1])
    assert value == pytest.approx(1 - math.log(1.2) / math.log(1.5))
    assert low < value < high
    assert share(trials[0], trials[2])[0] == pytest.approx(0.0, abs=1e-12)
    write(folder)
    text = (folder / "sweep.md").read_text()
    assert f"| {100 * value:.0f} % ({100 * low:.0f} … {100 * high:.0f} %) |" in text
    assert "no-base (not run)" in text and "(reference)" in text


def overloaded(tps, tps_half, errors, errors_half):
    """A trial's effects under overload: the TPS ratio within the noise, the errors told apart."""
    e = effect(tps, half=tps_half)
    e["error_pct"] = {"kind": "difference", "default": 40.0, "tuned": 40.0 + errors, "estimate": errors,
                      "low": errors - errors_half, "high": errors + errors_half,
                      "detectable": not errors - errors_half <= 0 <= errors + errors_half}
    return e


def test_a_tier_gets_its_share_of_the_error_reduction_and_none_of_a_gain_within_the_noise(tmp_path):
    folder = write_sweep(tmp_path, "ablate", [("full", {}, None, overloaded(1.05, 0.15, -14.0, 7.0)),
                                               ("no-httpd", {"httpd_mpm": "event"}, "httpd",
                                                overloaded(1.0, 0.15, -4.0, 7.0))])
    data, trials = load(folder)
    assert not gain_told_apart(trials[0], "tps") and gain_told_apart(trials[0], "error_pct")
    value, low, high = share(trials[0], trials[1], "error_pct")
    assert value == pytest.approx(10 / 14)                  # 10 of the 14 points of errors went with HTTPD's changes
    assert high - value == pytest.approx(math.hypot(7.0, 7.0) / 14)
    write(folder)
    text = (folder / "sweep.md").read_text()
    assert "**No share of the TPS gain**" in text and "errors −14.00 pt (−21.00 … −7.00 pt) vs default" in text
    row = next(line for line in text.splitlines() if line.startswith("| no-httpd"))
    tps_share, error_share = row.split(" | ")[-3:-1]
    assert tps_share == "—" and error_share == f"{100 * value:.0f} % ({100 * low:.0f} … {100 * high:.0f} %)"
    assert _share_text((-0.24, -0.87, 0.39)) == "−24 % (−87 … 39 %)"    # the report's minus, as elsewhere


def test_a_full_set_without_an_interval_gives_no_share(tmp_path):
    """verdict.json's own word: a gain it could put no interval on (too few windows) is not told apart."""
    full = effect(1.5)
    full["tps"] = {"default": 10.0, "tuned": 15.0, "estimate": 1.5, "low": None, "high": None,
                   "detectable": False, "why_not": "too few windows"}
    folder = write_sweep(tmp_path, "ablate", [("full", {}, None, full),
                                               ("no-httpd", {"httpd_mpm": "event"}, "httpd", effect(1.2))])
    data, trials = load(folder)
    assert not gain_told_apart(trials[0], "tps")
    write(folder)
    row = next(line for line in (folder / "sweep.md").read_text().splitlines() if line.startswith("| no-httpd"))
    assert row.split(" | ")[-3] == "—"


def test_a_share_reads_each_intervals_own_t_quantile(tmp_path):
    """Issue 52: a 95 % interval made with t at 2 degrees of freedom is 4.30 standard errors wide each side, not 1.96:
    the share's interval propagates the standard errors, joined with Satterthwaite's degrees of freedom."""
    from scipy import stats
    full, without = effect(1.5, half=0.1), effect(1.2, half=0.1)
    for e in (full, without):
        e["tps"]["df"] = 2
    folder = write_sweep(tmp_path, "ablate", [("full", {}, None, full), ("no-httpd", {"x": 1}, "httpd", without)])
    _, trials = load(folder)
    value, low, high = share(trials[0], trials[1])
    se = [(math.log(e["tps"]["high"]) - math.log(e["tps"]["low"])) / 2 / stats.t.ppf(0.975, 2) for e in (full, without)]
    v = [x * x for x in se]
    half = stats.t.ppf(0.975, sum(v) ** 2 / sum(x * x / 2 for x in v)) * math.hypot(*se)     # Satterthwaite
    assert (low, high) == pytest.approx(((value * math.log(1.5) - half) / math.log(1.5),
                                         (value * math.log(1.5) + half) / math.log(1.5)))
