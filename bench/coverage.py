"""Coverage and width of the report's intervals on synthetic paired runs with a known truth (issue 52; a benchmark,
not a CI stage: ~10 min for the default 200 runs a row on 2 cores).

    .venv/bin/python -m bench.coverage [--runs 200] [--first-seed 0] [--seconds 180] [--row stationary --row ...]
                                       [--label L]

Each row simulates `--runs` seeded runs (report/tests/synthetic.py: both machines' rates share an AR(1)
slowdown, each has its own AR(1) noise, Poisson counts, lognormal latencies whose level drifts, error bursts;
a row adds a shared warm-up, a shared drift, a machine bias or a between-run effect) and analyses each as
`report run` does (report/stats/uncertainty.py, 500 resamples a run). Per figure it prints how often the 95 %
interval held the truth (coverage: the target is 95 %), the median half-width (ratios: % on the log scale,
errors: points) beside 1.96 × the standard deviation of the runs' estimates (the half-width an interval of
known spread would have: the narrowest that covers), and the median block length and degrees of freedom.
Series rows combine trials as `report combine` does (crossover, report/stats/combine.py). Rows named `lab: …`
use the noise measured on native containers (LAB below). The gate rows: how often `errors<=0.1%` passes a run
whose tuned machine truly fails 0.2 % (or 0.05 %) of ~1,800 requests, judged on the level (as before issue 52)
and on its interval's upper bound, and how often that interval holds the true rate; the series gate rows, the same
on a crossover series' tuned level (report combine's, what a series' --gate and a tune's confirmation judge); the
level rows, how often a run's or a series' TPS and p99 level intervals hold the true level, their median
half-width, and how often a gate set at the truth passes on the bound.
Results: results/<stamp>-bench-coverage/coverage.json.
"""
from __future__ import annotations

import argparse
import json
import math
import multiprocessing
import statistics
import sys

from lab import paths
from lab.experiment import record as run_record
from report.read.calibrations import AALookup
from report.stats import between
from report.stats.between import Calibration
from report.stats.combine import combine, tuned_level
from report.stats.uncertainty import FIGURES, analyse
from report.stats.windows import attach_cpu, paired_windows
from report.tests.synthetic import (
    LATENCY_LEVEL_SD,
    LATENCY_SD,
    as_aa_trial,
    as_trial,
    jvm_cpu,
    paired_samples,
)

RESAMPLES = 500
WARM_UP = dict(warmup_s=60.0, warmup_depth=0.6)
EFFECT = dict(effect=1.1, latency_factor=0.8, error_tuned=0.05, cpu_factor=1.2)
BETWEEN = dict(run_sd_tps=0.05, run_sd_latency=0.05, run_sd_error_pt=0.5, run_sd_cpu=0.05)
# the noise of native containers at 150 users (report/tests/synthetic.py): the host's slowdown slow and shared, each
# machine's own noise larger, quicker and leaning against the other's
LAB = dict(phi=0.8, common_sigma=0.15, own_phi=0.3, own_sigma=0.25, rivalry=-0.3)
# row → (trials per run: 1 a single run, 2 or 4 a crossover series; the truth's parameters)
ROWS = {
    "stationary": (1, {}),
    "warm-up": (1, WARM_UP),
    "drift": (1, dict(drift=0.4)),
    "effect + warm-up": (1, {**EFFECT, **WARM_UP}),
    "machine bias +10 %": (1, dict(bias=1.1)),
    "between-run effect": (1, BETWEEN),
    "series of 2 (bias + between)": (2, dict(bias=1.1, **BETWEEN)),
    "series of 4 (bias + between)": (4, dict(bias=1.1, **BETWEEN)),
    "lab: stationary": (1, LAB),
    "lab: warm-up": (1, {**LAB, **WARM_UP}),
    "lab: drift": (1, {**LAB, "drift": 0.4}),
    "lab: effect + warm-up": (1, {**LAB, **EFFECT, **WARM_UP}),
    "lab: between-run effect": (1, {**LAB, **BETWEEN}),
    "lab: series of 2": (2, {**LAB, "bias": 1.1, **BETWEEN}),
    "lab: series of 4": (4, {**LAB, "bias": 1.1, **BETWEEN}),
    "series of 4 (bias, no between)": (4, dict(bias=1.1)),     # τ² = 0: an estimator that is never 0 overcovers
    # the same, calibrated by CALIBRATING A/A runs of the same machines and load (report/stats/between.py)
    "between-run effect (A/A-calibrated)": (1, BETWEEN),
    "series of 2 (bias + between; A/A-calibrated)": (2, dict(bias=1.1, **BETWEEN)),
    "lab: between-run effect (A/A-calibrated)": (1, {**LAB, **BETWEEN}),
    "lab: series of 2 (A/A-calibrated)": (2, {**LAB, "bias": 1.1, **BETWEEN}),
    "series of 2 (bias, no between; A/A-calibrated)": (2, dict(bias=1.1)),
    # a series' own τ² pooled with its A/A runs' (combine.py)
    "series of 4 (bias + between; A/A-calibrated)": (4, dict(bias=1.1, **BETWEEN)),
    "lab: series of 4 (A/A-calibrated)": (4, {**LAB, "bias": 1.1, **BETWEEN}),
    "series of 4 (bias, no between; A/A-calibrated)": (4, dict(bias=1.1)),
}
CALIBRATING = 4             # A/A runs behind a calibrated row


# level gates: `errors<=0.1%` on runs of ~1,800 requests whose tuned machine truly fails 0.2 % (or 0.05 %) of them
GATES = {"errors<=0.1%, true 0.2 %": dict(rate=10.0, error_tuned=0.002),
         "errors<=0.1%, true 0.05 %": dict(rate=10.0, error_tuned=0.0005)}
GATE_LIMIT = 0.1
# the same gate on a crossover series' tuned level (report combine's tuned_level: what a tune's confirmation and a
# series' --gate judge): trials, and a between-run spread of the error rate (points) beside the gate rows' own
SERIES_GATES = {"series of 4: errors<=0.1%, true 0.2 %": (4, dict(rate=10.0, error_tuned=0.002)),
                "series of 4: errors<=0.1%, true 0.05 %": (4, dict(rate=10.0, error_tuned=0.0005)),
                "series of 4: errors<=0.1%, true 0.2 %, between 0.05 pt": (4, dict(rate=10.0, error_tuned=0.002,
                                                                                  run_sd_error_pt=0.05)),
                "series of 2: errors<=0.1%, true 0.2 %": (2, dict(rate=10.0, error_tuned=0.002))}


# the tuned configuration's TPS and p99 levels (what `tps>=30/s` and `p99<=2s` judge, on the bound): a single run's
# (its block bootstrap) and a crossover series' (tuned_level: the trials' levels with their between-run variance);
# row → (trials, the truth's parameters, figure)
LEVELS = {"run: tps level": (1, {}, "tps"),
          "run: p99 level": (1, {}, "p99"),
          "lab: run: tps level": (1, LAB, "tps"),
          "lab: run: p99 level": (1, LAB, "p99"),
          "series of 4: tps level, between 5 %": (4, dict(run_sd_tps=0.05), "tps"),
          "series of 4: p99 level, between 5 %": (4, dict(run_sd_latency=0.05), "p99"),
          "series of 2: tps level, between 5 %": (2, dict(run_sd_tps=0.05), "tps"),
          "series of 2: p99 level, between 5 %": (2, dict(run_sd_latency=0.05), "p99")}


def level_truth(figure: str, params: dict) -> float:
    """The tuned configuration's true level (synthetic.paired_samples' law): successful TPS, the rate × effect (a
    series' both orientations cancel a bias; none is planted here); p99, the lognormal latency's 99th percentile,
    median × factor × exp(z₀.₉₉ · √(σ_level² + σ²))."""
    if figure == "tps":
        return params.get("rate", 20.0) * params.get("effect", 1.0)
    sd = math.hypot(LATENCY_LEVEL_SD, LATENCY_SD)
    return params.get("median_ms", 200.0) * params.get("latency_factor", 1.0) * math.exp(
        statistics.NormalDist().inv_cdf(0.99) * sd)


def level_run(job: tuple[str, int, int]) -> dict:
    """One run or series of a level row: does the level's interval hold the truth, its half-width (log scale), and
    does a gate set at the truth pass on the bound (tps>=truth on the lower, p99<=truth on the upper: a 95 %
    interval lets that happen 2.5 % of the time)?"""
    row, seed, seconds = job
    trials, params, figure = LEVELS[row]
    if trials == 1:
        e = one_run(seed, seconds, params).effects[figure]
        low, high = e.tuned_low, e.tuned_high
    else:
        runs = [as_trial(f"trial-{seed * 10 + k}", k % 2 == 1, one_run(seed * 10 + k, seconds, params))
                for k in range(trials)]
        level = tuned_level(runs, figure)
        low, high = (math.nan, math.nan) if level is None else (level.low, level.high)
    truth = level_truth(figure, params)
    if math.isnan(low) or math.isnan(high) or low <= 0:
        return {"covered": False, "half": math.nan, "passes_at_truth": False}
    return {"covered": low <= truth <= high, "half": math.log(high / low) / 2,
            "passes_at_truth": low >= truth if figure == "tps" else high <= truth}


def gate_run(job: tuple[str, int, int]) -> dict:
    """One run of a gate row: does the level pass judged on the point (before issue 52) and on the bound?"""
    row, seed, seconds = job
    e = one_run(seed, seconds, GATES[row]).effects["error_pct"]
    return {"point": e.tuned <= GATE_LIMIT, "bound": not math.isnan(e.tuned_high) and e.tuned_high <= GATE_LIMIT,
            "covered": not math.isnan(e.tuned_high) and e.tuned_low <= 100 * GATES[row]["error_tuned"] <= e.tuned_high}


def series_gate_run(job: tuple[str, int, int]) -> dict:
    """One series of a series gate row: does its tuned level pass on the bound, and does its interval hold the rate?"""
    row, seed, seconds = job
    trials, params = SERIES_GATES[row]
    runs = [as_trial(f"trial-{seed * 10 + k}", k % 2 == 1, one_run(seed * 10 + k, seconds, params))
            for k in range(trials)]
    level = tuned_level(runs, "error_pct")
    if level is None or math.isnan(level.high):
        return {"point": False, "bound": False, "covered": False}
    return {"point": level.tuned <= GATE_LIMIT, "bound": level.high <= GATE_LIMIT,
            "covered": level.low <= 100 * params["error_tuned"] <= level.high}


def truth_of(params: dict) -> dict[str, float]:
    """What the interval should hold: the configuration's effect (with a bias, on one run: effect × bias; a
    crossover series removes the bias)."""
    latency = params.get("latency_factor", 1.0)
    return {"tps": params.get("effect", 1.0), "error_pct": 100.0 * (params.get("error_tuned", 0.02)
                                                                    - params.get("error_default", 0.02)),
            "p50": latency, "p95": latency, "p99": latency, "cpu": params.get("cpu_factor", 1.0)}


def calibration_of(seed: int, seconds: int, params: dict) -> Calibration:
    """CALIBRATING simulated A/A runs of the row's machines and load (no configuration effect; the same twin bias and
    between-run effects), as the report's calibration reads them from their verdict.json."""
    same = {k: v for k, v in params.items() if k not in ("effect", "latency_factor", "error_tuned", "cpu_factor")}
    runs = []
    for k in range(CALIBRATING):
        runs.append(as_aa_trial(f"aa-{k}", one_run(seed * 100 + 90 + k, seconds, same)))
    return between.calibrate(AALookup(matching=runs))


CPU_PARAMETERS = ("cpu_factor", "cpu_sigma", "cpu_step_s", "run_sd_cpu")     # jvm_cpu's alone


def one_run(seed: int, seconds: int, params: dict):
    sides = paired_samples(seed, seconds=seconds, **{k: v for k, v in params.items() if k not in CPU_PARAMETERS})
    t0 = 1_795_000_000.0            # paired_samples' start on both machines
    paired = paired_windows(sides, t0, t0 + seconds - 1)
    attach_cpu(paired, jvm_cpu(seed, sides, seconds, t0=t0, **params), params.get("cpu_step_s", 30))
    return analyse(paired, resamples=RESAMPLES, seed=seed)


def simulate(job: tuple[str, int, int]) -> dict[str, dict]:
    """One run (or series) of a row → {figure: {low, high, estimate, block, df}}."""
    row, seed, seconds = job
    trials, params = ROWS[row]
    calibration = calibration_of(seed, seconds, params) if row.endswith("A/A-calibrated)") else None
    if trials == 1:
        a = one_run(seed, seconds, {**params, "bias": params.get("bias", 1.0)})
        if calibration is not None:
            between.apply(a, calibration)
        return {f: {"low": a.effects[f].low, "high": a.effects[f].high, "estimate": a.effects[f].estimate,
                    "block": a.block(f), "df": a.df(f)} for f in FIGURES}
    runs = []
    for k in range(trials):
        swapped = k % 2 == 1
        bias = params.get("bias", 1.0)
        p = {**params, "bias": 1.0 / bias if swapped else bias}
        runs.append(as_trial(f"trial-{seed * 10 + k}", swapped, one_run(seed * 10 + k, seconds, p)))
    combined = combine(runs, calibration)
    return {f: {"low": c.effect.low, "high": c.effect.high, "estimate": c.effect.estimate, "block": None,
                "df": c.effect.df} for f, c in combined.items()}


def summarise(row: str, results: list[dict]) -> dict[str, dict]:
    trials, params = ROWS[row]
    # one run carries the twins' bias unless an A/A calibration takes it in; a crossover series cancels it
    calibrated = row.endswith("A/A-calibrated)")
    bias = params.get("bias", 1.0)
    truth = truth_of(params if trials > 1 or calibrated else {**params, "effect": params.get("effect", 1.0) * bias,
                                                               "cpu_factor": params.get("cpu_factor", 1.0) / bias})
    out = {}
    for f in FIGURES:
        held = [r[f] for r in results if r[f]["low"] is not None and not math.isnan(r[f]["low"])]
        if not held:
            out[f] = {"n": 0}
            continue
        ratio = f != "error_pct"
        halves = [(math.log(h["high"] / h["low"]) / 2 if ratio else (h["high"] - h["low"]) / 2) for h in held]
        scale = [math.log(h["estimate"]) if ratio else h["estimate"] for h in held]
        out[f] = {"n": len(held), "truth": truth[f],
                  "ideal_half_width": 1.96 * statistics.stdev(scale) if len(scale) > 1 else math.nan,
                  "coverage": sum(h["low"] <= truth[f] <= h["high"] for h in held) / len(held),
                  "half_width": statistics.median(halves),
                  "block": statistics.median(h["block"] for h in held) if held[0]["block"] else None,
                  "df": statistics.median(h["df"] for h in held if h["df"] is not None and not math.isnan(h["df"]))
                  if any(h["df"] is not None and not math.isnan(h["df"]) for h in held) else None}
    return out


def table(summary: dict[str, dict]) -> str:
    lines = ["| row | figure | runs | coverage | median half-width | 1.96 σ of the estimates | block | df |",
             "|---|---|---|---|---|---|---|---|"]
    for row, figures in summary.items():
        if row.startswith(("gate ", "level ")):
            continue
        for f, s in figures.items():
            if not s.get("n"):
                continue
            width, ideal = (f"±{100 * s[k]:.1f} %" if f != "error_pct" else f"±{s[k]:.2f} pt"
                            for k in ("half_width", "ideal_half_width"))
            block = "" if s["block"] is None else f"{s['block']:g}"
            df = "" if s["df"] is None else f"{s['df']:.0f}"
            lines.append(f"| {row} | {f} | {s['n']} | {100 * s['coverage']:.1f} % | {width} | {ideal} | {block} "
                         f"| {df} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--first-seed", type=int, default=0,
                        help="the seeds are FIRST … FIRST + RUNS − 1: another sample of the same rows")
    parser.add_argument("--seconds", type=int, default=180)
    parser.add_argument("--row", action="append", dest="rows", metavar="ROW",
                        help="a row to run (repeatable; row names hold commas); default: every row")
    parser.add_argument("--label", default="")
    parser.add_argument("--no-gates", action="store_true", help="leave out the level gates' rows")
    parser.add_argument("--only-gates", action="store_true", help="only the level gates' rows")
    args = parser.parse_args(argv)
    if args.only_gates and (args.no_gates or args.rows):
        parser.error("--only-gates runs the gates' rows alone: without --no-gates or --row")
    rows = [] if args.only_gates else args.rows or list(ROWS)
    unknown = [r for r in rows if r not in ROWS]
    if unknown:
        parser.error(f"unknown rows {', '.join(unknown)} (known: {', '.join(ROWS)})")
    summary = {}
    seeds = range(args.first_seed, args.first_seed + args.runs)
    with multiprocessing.Pool(2) as pool:
        for row in rows:
            results = pool.map(simulate, [(row, seed, args.seconds) for seed in seeds], chunksize=4)
            summary[row] = summarise(row, results)
            print(table({row: summary[row]}).split("\n", 2)[-1], flush=True)
        gate_rows = [] if args.no_gates else [(row, gate_run) for row in GATES] + [(row, series_gate_run)
                                                                                   for row in SERIES_GATES]
        for row, run_of in gate_rows:
            results = pool.map(run_of, [(row, seed, args.seconds) for seed in seeds], chunksize=4)
            summary[f"gate {row}"] = {key: sum(r[key] for r in results) / len(results)
                                      for key in ("point", "bound", "covered")}
            print(f"gate {row}: passes on the point {100 * summary[f'gate {row}']['point']:.1f} %, on the bound "
                  f"{100 * summary[f'gate {row}']['bound']:.1f} %; the level's interval covers the truth "
                  f"{100 * summary[f'gate {row}']['covered']:.1f} %", flush=True)
        for row in [] if args.no_gates else LEVELS:
            results = pool.map(level_run, [(row, seed, args.seconds) for seed in seeds], chunksize=4)
            halves = [r["half"] for r in results if not math.isnan(r["half"])]
            found = {"covered": sum(r["covered"] for r in results) / len(results),
                     "passes_at_truth": sum(r["passes_at_truth"] for r in results) / len(results),
                     "half_width": statistics.median(halves) if halves else None, "n": len(halves)}
            summary[f"level {row}"] = found
            print(f"level {row}: the interval covers the truth {100 * found['covered']:.1f} % (median half-width "
                  + (f"±{100 * found['half_width']:.1f} %" if halves else "none")
                  + f"); a gate at the truth passes on the bound {100 * found['passes_at_truth']:.1f} %", flush=True)
    folder = run_record.make_run_dir(f"bench-coverage{'-' + args.label if args.label else ''}", paths.RESULTS)
    (folder / "coverage.json").write_text(json.dumps({"runs": args.runs, "first_seed": args.first_seed,
                                                      "seconds": args.seconds,
                                                      "resamples": RESAMPLES, "rows": summary}, indent=1))
    print(f"\n{table(summary)}\n\n{folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
