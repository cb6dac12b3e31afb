"""The A/A calibration of a run's intervals: which A/A runs match its load (read/calibrations.py fingerprint), the
variance components they give (stats/between.py: known-zero mean; DerSimonian–Laird), checked against values
computed by hand, and what a run's report makes of them (python -m report run)."""
import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy import stats

from report.read.calibrations import fingerprint, mismatch, unknown
from report.read.runinfo import RunInfo
from report.stats.between import dersimonian_laird, dl_regression, satterthwaite, tau2_known_zero, within_se

from .conftest import REPO
from .synthetic import paired_samples
from .test_verdict_folders import HOST, LOAD, write_run

AA = {"kind": "aa", "configurations": {"default": "default", "tuned": "default"}}
SECONDS = 120


def run_with(tmp_path, load=None, **host):
    """A RunInfo whose run.json says the given load (over LOAD) and host facts (over HOST)."""
    folder = tmp_path / "run"
    folder.mkdir(parents=True, exist_ok=True)
    record = {"load": {**LOAD, **(load or {})}, **HOST, **host}
    (folder / "run.json").write_text(json.dumps({k: v for k, v in record.items() if v is not None}))
    return fingerprint(RunInfo(folder))


@pytest.mark.parametrize(("load", "host", "why"), [
    ({"users": 20}, {}, "users 20, not 150"),
    ({"ramp_up_s": 30}, {}, "ramp-up (s) 30, not 150"),
    ({"duration_s": 700}, {}, "hold (s) 700, not 300 (not within ×2)"),
    ({"duration_s": 120}, {}, "hold (s) 120, not 300 (not within ×2)"),
    ({"keep_alive": False}, {}, "keep-alive False, not True"),
    ({"model": "open", "rate_per_s": 50}, {}, "load model open, not closed"),
    ({}, {"accelerator": "tcg"}, "accelerator tcg, not kvm"),
    ({}, {"provider": "hosts"}, "provider hosts, not libvirt"),
    ({}, {"host": {"cpus": 8}}, "host CPUs 8, not 2"),
    ({"ramp_up_s": None}, {}, "its run.json does not record the ramp-up (s)"),
    ({}, {"core_swap": {"mode": "swap", "at_s": 240, "swapped_at": 1.8e9}}, "host cores swapped, not fixed"),
    ({}, {"service": {"name": "shop", "plan": "/x/shop.jmx"}}, "service shop (shop.jmx), not sample (the lab's plan)"),
])
def test_an_aa_of_another_load_or_host_does_not_match(tmp_path, load, host, why):
    mine = run_with(tmp_path / "a")
    assert mismatch(mine, run_with(tmp_path / "b", load, **host)) == why


def test_an_aa_of_one_service_calibrates_only_that_service_and_plan(tmp_path):
    shop = {"name": "shop", "plan": "/services/shop.jmx"}
    mine = run_with(tmp_path / "a", service=shop)
    assert mismatch(mine, run_with(tmp_path / "b", service={**shop, "plan": "/elsewhere/shop.jmx"})) is None
    assert mismatch(mine, run_with(tmp_path / "c", service={**shop, "plan": "/services/other.jmx"})) == \
        "service shop (other.jmx), not shop (shop.jmx)"
    assert mismatch(run_with(tmp_path / "d"), run_with(tmp_path / "e", service=None)) is None   # sample app, old
    sample = {"name": "sample", "plan": None, "lab_plan": True}       # its descriptor: an old run's A/A still fits
    assert mismatch(run_with(tmp_path / "f", service=sample), run_with(tmp_path / "g")) is None


def test_the_same_load_matches_with_a_hold_within_a_factor_of_two(tmp_path):
    mine = run_with(tmp_path / "a")
    for hold in (150, 300, 600):
        assert mismatch(mine, run_with(tmp_path / f"h{hold}", {"duration_s": hold})) is None
    steps = {"model": "steps", "step_rates": [10, 20, 40], "step_s": 120}
    assert mismatch(run_with(tmp_path / "s1", steps), run_with(tmp_path / "s2", {**steps, "step_s": 200})) is None
    assert mismatch(run_with(tmp_path / "s1", steps),
                    run_with(tmp_path / "s3", {**steps, "step_rates": [10, 20, 30]})) == \
        "stage rates (req/s) 10, 20, 30, not 10, 20, 40"
    failed_swap = {"mode": "swap", "at_s": 240, "swapped_at": None, "error": "swap: virsh refused"}
    assert mismatch(mine, run_with(tmp_path / "f", core_swap=failed_swap)) is None    # its cores stayed fixed
    hosts = run_with(tmp_path / "r1", provider="hosts", accelerator=None)
    assert "accelerator" not in hosts and mismatch(hosts, run_with(tmp_path / "r2", provider="hosts")) is None


def test_a_run_whose_load_is_not_recorded_matches_nothing(tmp_path):
    folder = tmp_path / "bare"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"load": {"warmup_s": 20}}))
    assert unknown(fingerprint(RunInfo(folder))) == ["load model", "ramp-up (s)", "hold (s)", "provider", "host CPUs",
                                                     "accelerator"]


# three A/A trials' differences (log ratios) and within-run standard errors, and what they give, by hand:
# w = 1/s² = 400, 625, 156.25 (Σ 1181.25); Σ w d = 40 − 31.25 + 31.25 = 40, mean = 40 / 1181.25 = 0.0338624;
# Σ w d² = 4 + 1.5625 + 6.25 = 11.8125; Q = 11.8125 − 40² / 1181.25 = 10.4580026;
# Σ w² / Σ w = 575039.0625 / 1181.25 = 486.8055556, so Σ w − that = 694.4444444;
# DL τ² = (Q − 2) / 694.4444444 = 0.0121795; known-zero τ₀² = (11.8125 − 3) / 1181.25 = 0.0074603
D, S = np.array([0.10, -0.05, 0.20]), np.array([0.05, 0.04, 0.08])


def test_dersimonian_laird_against_a_hand_computed_value():
    mean, tau2 = dersimonian_laird(D, S)
    assert mean == pytest.approx(0.0338624, abs=1e-7)
    assert tau2 == pytest.approx(0.0121795, abs=1e-7)
    assert tau2_known_zero(D, S) == pytest.approx(0.0074603, abs=1e-7)
    # one trial, mean known to be 0: d² − s², never below 0
    assert tau2_known_zero(np.array([0.2]), np.array([0.05])) == pytest.approx(0.04 - 0.0025)
    assert tau2_known_zero(np.array([0.02]), np.array([0.05])) == 0.0
    # trials that agree within their noise: no between-run variance
    assert dersimonian_laird(np.array([0.01, -0.01, 0.0]), S)[1] == 0.0


def test_the_meta_regression_form_reduces_to_dersimonian_laird():
    coef, q, tau2 = dl_regression(D, S ** 2, np.ones((3, 1)))
    assert (coef[0], q, tau2) == pytest.approx((0.0338624, 10.4580026, 0.0121795), abs=1e-7)
    _, _, none = dl_regression(D[:2], S[:2] ** 2, np.column_stack([np.ones(2), [1, -1]]))
    assert math.isnan(none)             # as many fitted terms as trials: τ² cannot be estimated


def test_the_within_run_se_is_recovered_from_an_interval():
    t = stats.t.ppf(0.975, 7)
    assert within_se("ratio", 1.2 * math.exp(-t * 0.05), 1.2 * math.exp(t * 0.05), 7) == pytest.approx(0.05)
    assert within_se("difference", -1.0 - t * 0.3, -1.0 + t * 0.3, 7) == pytest.approx(0.3)
    assert math.isnan(within_se("ratio", None, 1.3, 7))


def test_satterthwaite():
    assert satterthwaite([(1.0, 10), (0.0, 1)]) == 10            # no between-run variance: the run's own df
    assert satterthwaite([(1.0, 10), (1.0, 2)]) == pytest.approx(4.0 / (0.1 + 0.5))


def report(folder):
    done = subprocess.run([sys.executable, "-m", "report", "run", str(folder)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads((folder / "verdict.json").read_text()), (folder / "summary.md").read_text()


def aa_d_s(folder, figure="tps"):
    """An A/A verdict.json's log ratio and within-run se, recomputed here from its interval and df."""
    record = json.loads((folder / "verdict.json").read_text())
    e, df = record["effects"][figure], record["method"]["df"][figure]
    s = (math.log(e["ci_within"]["high"]) - math.log(e["ci_within"]["low"])) / 2 / stats.t.ppf(0.975, df)
    return math.log(e["estimate"]), s


def widened_by_hand(record, tau2, k, figure="tps"):
    e, df = record["effects"][figure], record["method"]["df"][figure]
    lo, hi = math.log(e["ci_within"]["low"]), math.log(e["ci_within"]["high"])
    se = (hi - lo) / 2 / stats.t.ppf(0.975, df)
    total = se ** 2 + tau2
    df_total = total ** 2 / (se ** 4 / df + tau2 ** 2 / k)
    half = stats.t.ppf(0.975, df_total) * math.sqrt(total)
    return e["estimate"] * math.exp(-half), e["estimate"] * math.exp(half)


def test_a_150_user_run_is_calibrated_by_the_150_user_aa_runs_only(tmp_path):
    """A 20-user A/A beside a 150-user A/B run is named and not used; one 150-user A/A gives τ² = d² − s²; a
    second gives the known-zero estimate over both, with DerSimonian–Laird's beside; the interval is widened by
    hand the same way."""
    aa20 = write_run(tmp_path / "20261123T070000Z-aa20", paired_samples(31, seconds=SECONDS, bias=1.3), design=AA,
                     load={"users": 20})
    aa1 = write_run(tmp_path / "20261123T080000Z-aa", paired_samples(32, seconds=SECONDS, bias=1.2), design=AA)
    ab = write_run(tmp_path / "20261123T090000Z-ab", paired_samples(33, seconds=SECONDS, effect=1.1))
    for folder in (aa20, aa1):
        report(folder)
    record, summary = report(ab)
    assert record["calibration"]["trials"] == [aa1.name]
    assert record["calibration"]["unused"] == {aa20.name: "users 20, not 150"}
    assert f"A/A runs here that do not calibrate this one: {aa20.name} (users 20, not 150)." in summary
    assert f"within-run noise + between-run variance from 1 matching A/A trial ({aa1.name})" in record["interval"]
    d, s = aa_d_s(aa1)
    tau2 = max(0.0, d * d - s * s)
    assert tau2 > 0 and record["calibration"]["figures"]["tps"]["tau2"] == pytest.approx(tau2, rel=1e-9)
    tps = record["effects"]["tps"]
    assert (tps["low"], tps["high"]) == pytest.approx(widened_by_hand(record, tau2, 1), rel=1e-9)
    assert tps["low"] < tps["ci_within"]["low"] and tps["high"] > tps["ci_within"]["high"]

    aa2 = write_run(tmp_path / "20261123T100000Z-aa", paired_samples(34, seconds=SECONDS, bias=0.95), design=AA)
    aa_record, aa_summary = report(aa2)  # later than the A/B run: it calibrates it too
    record, summary = report(ab)
    assert record["calibration"]["trials"] == [aa1.name, aa2.name]
    (d1, s1), (d2, s2) = aa_d_s(aa1), aa_d_s(aa2)
    w1, w2 = 1 / s1 ** 2, 1 / s2 ** 2
    tau0 = max(0.0, (w1 * d1 ** 2 + w2 * d2 ** 2 - 2) / (w1 + w2))
    mean = (w1 * d1 + w2 * d2) / (w1 + w2)
    q = w1 * (d1 - mean) ** 2 + w2 * (d2 - mean) ** 2
    tau_dl = max(0.0, (q - 1) / (w1 + w2 - (w1 ** 2 + w2 ** 2) / (w1 + w2)))
    figures = record["calibration"]["figures"]["tps"]
    assert figures["tau2"] == pytest.approx(tau0, rel=1e-9) and figures["aa_mean"] == pytest.approx(mean, rel=1e-9)
    assert figures["tau2_dl"] == pytest.approx(tau_dl, rel=1e-9, abs=1e-15)
    tps = record["effects"]["tps"]
    assert (tps["low"], tps["high"]) == pytest.approx(widened_by_hand(record, tau0, 2), rel=1e-9)
    assert "DerSimonian–Laird's τ" in summary and "from 2 matching A/A trials" in summary

    # an A/A run keeps its within-run interval, and names the matching A/A runs beside it
    assert aa_record["effects"]["tps"]["low"] == aa_record["effects"]["tps"]["ci_within"]["low"]
    assert not aa_record["calibration"]["applied"]
    assert (f"**Intervals:** within-run noise only: an A/A run calibrates the A/B runs of its load (matching A/A "
            f"trials beside it: {aa1.name})") in aa_summary


def test_a_crossover_series_adds_its_own_between_trial_variance():
    """Four trials, two per orientation, one of them 30 % off: τ² by DerSimonian–Laird around the orientation
    groups' weighted means (what a fit of effect + s·bias is with two orientations), computed here per group; the
    combined interval is Hartung–Knapp's: the within-trial variance plus τ²·Σc² (c = 1/4 per trial), scaled by the
    trials' own scatter around the groups' means with the weights 1/(s² + τ²), t with 2 df."""
    from report.stats.combine import combine

    from .test_uncertainty import _trial
    trials = [_trial(2000, False, 1.0, 1.2), _trial(2001, True, 1.0, 1.2), _trial(2002, False, 1.3, 1.2),
              _trial(2003, True, 1.0, 1.2)]
    c = combine(trials)["tps"]
    points = np.array([math.log(t.analysis.effects["tps"].estimate) for t in trials])
    var = np.array([np.var(np.log(t.analysis.replicates["tuned"]["tps"] / t.analysis.replicates["default"]["tps"]),
                           ddof=1) for t in trials])
    w = 1 / var
    q, trace = 0.0, w.sum()
    for group in ([0, 2], [1, 3]):          # straight, swapped
        mean = np.sum(w[group] * points[group]) / np.sum(w[group])
        q += np.sum(w[group] * (points[group] - mean) ** 2)
        trace -= np.sum(w[group] ** 2) / np.sum(w[group])
    tau2 = max(0.0, (q - 2) / trace)
    assert c.q == pytest.approx(q, rel=1e-9) and c.tau2 == pytest.approx(tau2, rel=1e-9) and tau2 > 0
    e = c.effect
    df = sum(t.analysis.df("tps") for t in trials)
    se = math.log(e.within_high / e.within_low) / 2 / stats.t.ppf(0.975, df)
    between = tau2 * 4 * (1 / 4) ** 2
    w = 1 / (var + tau2)
    scatter = sum(np.sum(w[g] * (points[g] - np.sum(w[g] * points[g]) / np.sum(w[g])) ** 2) for g in ([0, 2], [1, 3]))
    within = max(se ** 2, np.mean(var) / 4)        # no quieter than its trials' mean (Σc² = 1/4)
    half = stats.t.ppf(0.975, 2) * math.sqrt(scatter / 2 * (within + between))
    assert (e.low, e.high) == pytest.approx((e.estimate * math.exp(-half), e.estimate * math.exp(half)), rel=1e-9)
    assert e.df == 2 and c.inflated > 1.5
    two = combine(trials[:2])["tps"]       # one trial per orientation: τ² cannot be estimated, nothing added
    assert math.isnan(two.tau2) and math.isnan(two.effect.within_low)


def test_an_aa_calibrates_only_runs_of_its_own_boxes(tmp_path):
    """Issue 41: the trixie box's twins (Java 21) are other twins than bookworm's; runs from before boxes were
    recorded ran bookworm on both machines."""
    trixie = run_with(tmp_path / "t", boxes={"default": "trixie", "tuned": "trixie"})
    assert mismatch(trixie, run_with(tmp_path / "t2", boxes={"default": "trixie", "tuned": "trixie"})) is None
    assert mismatch(trixie, run_with(tmp_path / "old")) == "boxes bookworm, not trixie"
    across = run_with(tmp_path / "x", boxes={"default": "bookworm", "tuned": "trixie"})
    assert mismatch(across, trixie) == "boxes trixie, not bookworm + trixie"
    assert mismatch(run_with(tmp_path / "b", boxes={"default": "bookworm", "tuned": "bookworm"}),
                    run_with(tmp_path / "old2")) is None


def test_a_series_too_short_for_its_own_variance_takes_the_aa_calibrations():
    """Issue 52: one trial per orientation cannot estimate its between-trial variance; the matching A/A trials'
    (DerSimonian–Laird's τ², around their mean: the crossover cancels the twins' bias) join the interval as
    τ²·Σc², c = 1/2 per trial, scaled by the A/A trials' own scatter around their mean (Hartung–Knapp, k − 1
    degrees of freedom); verdict.json says which variance each effect holds."""
    from report.read.calibrations import AALookup
    from report.stats.between import Calibration, FigureCalibration
    from report.stats.combine import combine
    from report.stats.uncertainty import FIGURES

    from .test_uncertainty import _trial
    trials = [_trial(2100, False, 1.1, 1.2), _trial(2101, True, 1.1, 1.2)]
    names = ["aa-1", "aa-2", "aa-3"]
    d, s = [0.05, -0.02, 0.03], [0.01, 0.02, 0.01]
    cal = Calibration(AALookup(), {f: FigureCalibration(f, names, d, s, tau2=0.004, tau2_dl=0.0025) for f in FIGURES})
    alone, calibrated = combine(trials)["tps"], combine(trials, cal)["tps"]
    assert alone.effect.intervals == "within-run" and math.isnan(alone.effect.within_low)
    e = calibrated.effect
    assert e.intervals == "calibrated (A/A runs aa-1, aa-2, aa-3)"
    assert (e.within_low, e.within_high) == (alone.effect.low, alone.effect.high)
    df = sum(t.analysis.df("tps") for t in trials)
    se = math.log(e.within_high / e.within_low) / 2 / stats.t.ppf(0.975, df)
    between = 0.0025 * 2 * (1 / 2) ** 2
    w = 1 / (np.square(s) + 0.0025)
    scatter = np.sum(w * (np.array(d) - np.sum(w * d) / np.sum(w)) ** 2)
    var = [np.var(np.log(t.analysis.replicates["tuned"]["tps"] / t.analysis.replicates["default"]["tps"]), ddof=1)
           for t in trials]
    within = max(se ** 2, np.mean(var + list(np.square(s))) / 2)   # the trials' and the A/A trials' mean (Σc² = 1/2)
    half = stats.t.ppf(0.975, 2) * math.sqrt(scatter / 2 * (within + between))
    assert (e.low, e.high) == pytest.approx((e.estimate * math.exp(-half), e.estimate * math.exp(half)), rel=1e-9)
    four = combine([*trials, _trial(2102, False, 1.1, 1.2), _trial(2103, True, 1.1, 1.2)], cal)["tps"]
    # its own τ² where it can estimate one, pooled with the A/A trials' (test below)
    assert four.effect.intervals == "random-effects (4 trials, pooled with A/A runs aa-1, aa-2, aa-3)"


def test_a_series_calibrated_by_one_aa_run_says_that_more_aa_runs_narrow_it():
    """One A/A run gives a series of two its t with 1 df (12.7): ±30 % around two trials of ±8 %
    (results/20261201T221930Z-s73-series-series). The verdict says what narrows it; three A/A runs (2 df) too,
    four (3 df) no longer."""
    from report.read.calibrations import AALookup
    from report.render.combine import _between_words
    from report.stats.between import Calibration, FigureCalibration
    from report.stats.combine import combine
    from report.stats.uncertainty import FIGURES

    from .test_uncertainty import _trial
    trials = [_trial(2100, False, 1.1, 1.2), _trial(2101, True, 1.1, 1.2)]

    def words(d, s):
        names = [f"aa-{i}" for i in range(len(d))]
        cal = Calibration(AALookup(), {f: FigureCalibration(f, names, d, s, tau2=0.004, tau2_dl=0.0025)
                                       for f in FIGURES})
        c = combine(trials, cal)["tps"]
        return c.effect.df, _between_words(c)
    df, said = words([0.05], [0.02])
    assert df == 1 and "t is 12.7 at 1 df" in said and "more A/A runs of this load narrow it" in said
    df, said = words([0.05, -0.02, 0.03], [0.01, 0.02, 0.01])
    assert df == 2 and "t is 4.3 at 2 df" in said
    df, said = words([0.05, -0.02, 0.03, 0.0], [0.01, 0.02, 0.01, 0.01])
    assert df == 3 and "more A/A runs" not in said


def test_a_series_own_between_trial_variance_is_pooled_with_its_aa_trials_by_their_degrees_of_freedom():
    """Issue 52: four trials estimate τ² from 2 degrees of freedom (89.5 % coverage); the matching A/A trials measured
    the same variance apart, around their mean, from k − 1 = 2 more: τ² = (2·τ²_series + 2·τ²_A/A) / 4, and the
    interval's scale is both scatters pooled (Hartung–Knapp), t with 4 df."""
    from report.read.calibrations import AALookup
    from report.stats.between import Calibration, FigureCalibration
    from report.stats.combine import combine
    from report.stats.uncertainty import FIGURES

    from .test_uncertainty import _trial
    trials = [_trial(2000, False, 1.0, 1.2), _trial(2001, True, 1.0, 1.2), _trial(2002, False, 1.3, 1.2),
              _trial(2003, True, 1.0, 1.2)]
    names = ["aa-1", "aa-2", "aa-3"]
    d, s = [0.05, -0.02, 0.03], [0.01, 0.02, 0.01]
    cal = Calibration(AALookup(), {f: FigureCalibration(f, names, d, s, tau2=0.004, tau2_dl=0.0025) for f in FIGURES})
    alone, pooled = combine(trials)["tps"], combine(trials, cal)["tps"]
    assert pooled.tau2 == alone.tau2 > 0.0025 and pooled.pooled and not alone.pooled
    e = pooled.effect
    assert e.intervals == "random-effects (4 trials, pooled with A/A runs aa-1, aa-2, aa-3)"
    df = sum(t.analysis.df("tps") for t in trials)
    se = math.log(e.within_high / e.within_low) / 2 / stats.t.ppf(0.975, df)
    tau2 = (2 * alone.tau2 + 2 * 0.0025) / 4
    between = tau2 * 4 * (1 / 4) ** 2
    points = np.array([math.log(t.analysis.effects["tps"].estimate) for t in trials])
    var = np.array([np.var(np.log(t.analysis.replicates["tuned"]["tps"] / t.analysis.replicates["default"]["tps"]),
                           ddof=1) for t in trials])
    w, w_aa = 1 / (var + tau2), 1 / (np.square(s) + tau2)
    scatter = sum(np.sum(w[g] * (points[g] - np.sum(w[g] * points[g]) / np.sum(w[g])) ** 2) for g in ([0, 2], [1, 3]))
    scatter += np.sum(w_aa * (np.array(d) - np.sum(w_aa * d) / np.sum(w_aa)) ** 2)
    within = max(se ** 2, np.mean(list(var) + list(np.square(s))) / 4)
    half = stats.t.ppf(0.975, 4) * math.sqrt(scatter / 4 * (within + between))
    assert (e.low, e.high) == pytest.approx((e.estimate * math.exp(-half), e.estimate * math.exp(half)), rel=1e-9)
    one_aa = Calibration(AALookup(), {f: FigureCalibration(f, ["aa-1"], [0.0], [0.01], tau2=0.004) for f in FIGURES})
    assert not combine(trials, one_aa)["tps"].pooled        # one A/A trial: no τ² around its mean to pool


def test_aa_trials_without_errors_count_in_the_error_calibration():
    """Issue 52: an A/A trial with no error on either twin (a difference of exactly 0 pt, no interval width) was
    left out of the errors' τ₀², which then came only from the trials that had errors: biased up."""
    from report.read.calibrations import AALookup, AATrial
    from report.stats.between import calibrate

    def aa(name, estimate, half):
        return AATrial(name, {"error_pct": {"kind": "difference", "estimate": estimate, "low": estimate - half,
                                            "high": estimate + half}}, {"error_pct": 30})
    noisy = [aa("a1", 0.8, 0.3), aa("a2", -0.6, 0.3)]
    alone = calibrate(AALookup(matching=noisy)).figures["error_pct"]
    with_clean = calibrate(AALookup(matching=[*noisy, aa("a3", 0.0, 0.0), aa("a4", 0.0, 0.0)])).figures["error_pct"]
    assert with_clean.k == 4 and with_clean.tau2 < alone.tau2
    s = 0.3 / stats.t.ppf(0.975, 30)
    d, w = np.array([0.8, -0.6, 0.0, 0.0]), np.full(4, 1 / s ** 2)
    assert with_clean.tau2 == pytest.approx(max(0.0, (np.sum(w * d ** 2) - 4) / np.sum(w)))
