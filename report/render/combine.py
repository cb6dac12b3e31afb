"""python -m report.combine SERIES_FOLDER TRIAL_FOLDER...: one report over the trials of a `--repeat N` run.

Each trial is a run folder whose default/ and tuned/ hold what the default and the tuned configuration did;
run.json `design.machines` says which machine ran which (from the second trial on they alternate:
crossover). Per figure, trial i measured L_i = effect + s_i·bias (logs of ratios; differences for error %),
s_i = +1 when each configuration ran on its namesake machine, −1 when swapped. With both orientations the
effect is the mean of the two orientation means, which cancels a machine bias (Mytkowicz et al. 2009: setup
bias; swap it out), and half their difference estimates that bias. The interval: t × the σ of the same
combination over the trials' independent bootstrap replicates, with the trials' degrees of freedom summed.
Whether the trials agree: Cochran's Q of the trials around the fitted effect and bias (needs more trials than
fitted terms). Writes SERIES_FOLDER/summary.md, report.html and verdict.json.
"""
import argparse
import math
import sys
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy import stats

from .runs import back, load_runs, log_or_raw
from .uncertainty import CI, FIGURES, Effect, interval, kind_of
from .verdict import FIGURE_NAMES, NO_ERRORS, effect_text, pct, write_record

AGREEMENT_P = 0.05


@dataclass
class Combined:
    figure: str
    kind: str
    effect: Effect                      # the combined estimate, its interval
    bias: Effect = None                 # machine tuned vs machine default (both orientations only)
    q: float = math.nan                 # Cochran's Q, its degrees of freedom and p-value
    q_df: int = 0
    q_p: float = math.nan
    inflated: float = 1.0               # the interval's widening for disagreeing trials (Birge ratio)
    per_trial: list = field(default_factory=list)   # the trials' own Effects


def _orientation_means(values, signs):
    """(effect, bias) from one value (or replicate row) per trial; bias nan with one orientation."""
    plus, minus = values[signs > 0], values[signs < 0]
    if len(plus) and len(minus):
        return (plus.mean(axis=0) + minus.mean(axis=0)) / 2.0, (plus.mean(axis=0) - minus.mean(axis=0)) / 2.0
    return values.mean(axis=0), np.full(values.shape[1:], np.nan) if values.ndim > 1 else math.nan


def combine_figure(trials, figure):
    """The crossover combination of one figure over the trials that have an interval for it."""
    usable = [t for t in trials if t.analysis is not None and t.analysis.effects[figure].has_interval]
    kind = kind_of(figure)
    per_trial = [t.analysis.effects[figure] if t.analysis is not None else None for t in trials]
    if not usable:
        e = Effect(figure, kind, math.nan, math.nan)
        e.why_not = "no trial has an interval for it"
        return Combined(figure, kind, e, per_trial=per_trial)
    signs = np.array([-1.0 if t.swapped else 1.0 for t in usable])
    points = np.array([log_or_raw(kind, t.analysis.effects[figure].estimate) for t in usable])
    reps = np.array([log_or_raw(kind, t.analysis.replicates["tuned"][figure] / t.analysis.replicates["default"][figure]
                                if kind == "ratio" else
                                t.analysis.replicates["tuned"][figure] - t.analysis.replicates["default"][figure])
                     for t in usable])
    reps = np.where(np.isfinite(reps), reps, np.nan)
    effect, bias = _orientation_means(points, signs)
    effect_reps, bias_reps = _orientation_means(reps, signs)
    df = sum(t.analysis.df(figure) for t in usable)
    d_mean = float(np.mean([t.analysis.effects[figure].default for t in usable]))
    t_mean = float(np.mean([t.analysis.effects[figure].tuned for t in usable]))
    e = Effect(figure, kind, d_mean, t_mean, estimate=back(kind, effect))
    scale = (lambda x: np.exp(x)) if kind == "ratio" else (lambda x: x)
    e.low, e.high = interval(e.estimate, scale(effect_reps), df, log_scale=kind == "ratio")
    combined = Combined(figure, kind, e, per_trial=per_trial)
    if not math.isnan(bias):
        b = Effect(figure, kind, math.nan, math.nan, estimate=back(kind, bias))
        b.low, b.high = interval(b.estimate, scale(bias_reps), df, log_scale=kind == "ratio")
        combined.bias = b
    # agreement: Cochran's Q of the trials around the weighted least-squares fit of effect + s·bias (weights:
    # each trial's bootstrap variance), χ² with N − fitted terms df; when it says they disagree, the interval
    # is widened by the Birge ratio √(Q/df) (the trials spread more than their own noise explains)
    var = np.nanvar(reps, axis=1, ddof=1)
    both = not math.isnan(bias)
    combined.q_df = len(usable) - (2 if both else 1)
    if combined.q_df >= 1 and np.all(var > 0):
        design = np.column_stack([np.ones(len(usable)), signs])[:, :2 if both else 1]
        w = 1.0 / var
        coef = np.linalg.solve(design.T @ (design * w[:, None]), design.T @ (w * points))
        combined.q = float(np.sum(w * (points - design @ coef) ** 2))
        combined.q_p = float(stats.chi2.sf(combined.q, combined.q_df))
        inflate = math.sqrt(max(1.0, combined.q / combined.q_df))
        if combined.q_p < AGREEMENT_P and e.has_interval:
            centre = log_or_raw(kind, e.estimate)
            lo, hi = log_or_raw(kind, e.low), log_or_raw(kind, e.high)
            e.low = back(kind, centre - (centre - lo) * inflate)
            e.high = back(kind, centre + (hi - centre) * inflate)
            combined.inflated = inflate
    return combined


def agreement_words(c):
    if c.q_df >= 1 and not math.isnan(c.q_p):
        if c.q_p >= AGREEMENT_P:
            return f"the trials agree (Cochran's Q = {c.q:.1f}, {c.q_df} df, p = {c.q_p:.2f})"
        return (f"the trials DISAGREE beyond their own noise (Q = {c.q:.1f}, {c.q_df} df, p = {c.q_p:.3f}): something "
                f"changed between trials; the interval is widened ×{c.inflated:.1f} for it")
    if c.q_df >= 1:
        return "agreement not tested (a trial's resampled figure does not vary)"
    if c.bias is not None:
        return ("one trial per orientation: agreement cannot be tested beyond the machine bias it estimates "
                "(--repeat 4 or more tests it)")
    return "one trial: agreement is not tested"


def agreement_cell(c):
    """agreement_words in a few words, for the table."""
    if c.q_df >= 1 and not math.isnan(c.q_p):
        return (f"agree (p = {c.q_p:.2f})" if c.q_p >= AGREEMENT_P
                else f"DISAGREE (p = {c.q_p:.3f}); interval ×{c.inflated:.1f}")
    return "not testable" + (" (one trial per orientation)" if c.bias is not None and c.q_df < 1 else "")


def combine(trials):
    return {figure: combine_figure(trials, figure) for figure in FIGURES}


def verdict_sentence(results, trials):
    tps = results["tps"]
    used = sum(1 for t in trials if t.analysis is not None and t.analysis.effects["tps"].has_interval)
    counted = f"{used} trial{'s' if used != 1 else ''}" + (f" (of {len(trials)})" if used != len(trials) else "")
    if not tps.effect.has_interval:
        return f"{len(trials)} trials: no combined interval for successful TPS ({tps.effect.why_not})."
    ci = effect_text(tps.effect, with_estimate=False)
    if all(t.design["kind"] == "aa" for t in trials):
        config = trials[0].design["configurations"]["default"]
        same = "interchangeable" if not tps.effect.detectable else "NOT interchangeable"
        return (f"A/A over {counted}, both machines running the {config} configuration: the twins are {same}: "
                f"machine tuned {pct(tps.effect.estimate)} successful TPS vs machine default ({ci}); "
                f"{agreement_words(tps)}.")
    orientations = "both orientations" if tps.bias is not None else "one orientation only (machine bias NOT removed)"
    if tps.effect.detectable:
        head = f"tuned: {pct(tps.effect.estimate)} successful TPS ({ci})"
    else:
        head = f"no difference in successful TPS detectable ({ci})"
    text = f"{head}, combined over {counted} in {orientations}; {agreement_words(tps)}"
    if tps.bias is not None and tps.bias.has_interval:
        text += (f"; machine tuned vs machine default: {pct(tps.bias.estimate)} "
                 f"({effect_text(tps.bias, with_estimate=False)}), cancelled by the swap")
    return text + "."


def _trial_row(t, figure):
    e = t.analysis.effects[figure] if t.analysis is not None else None
    return effect_text(e) if e is not None else "— (no paired window)"


def render(series_folder, trials, results):
    name = Path(series_folder).name
    lines = [f"# Camel Tuning Lab — {len(trials)} trials with swapped roles ({name})", "",
             f"**Verdict:** {verdict_sentence(results, trials)}", "",
             "Results are labelled by configuration (default, tuned), never by machine. Each trial restarted both "
             "machines' services together before its load; from the second trial on, the configurations "
             "alternate between the two machines (crossover), so a difference that belongs to a machine cancels "
             "out of the combined figure (A/A series are not swapped: their columns are the machines). The "
             "trials' intervals here are drawn with seeds of their own (independent resamples), so their last "
             "digits can differ from each trial's own report. Method: report/README.md (Uncertainty, Crossover).",
             "",
             "## Combined", "",
             f"| figure | tuned vs default ({CI}) | machine tuned vs machine default | agreement |",
             "| --- | ---: | ---: | --- |"]
    for figure, c in results.items():
        effect = effect_text(c.effect)
        bias = "—" if effect == NO_ERRORS else effect_text(c.bias) if c.bias is not None else "— (one orientation)"
        lines.append(f"| {FIGURE_NAMES[figure]} | {effect} | {bias} | {agreement_cell(c)} |")
    lines += ["", f"Agreement: {agreement_words(results['tps'])} (successful TPS).", ""]
    lines += ["", "## Trials", "",
              "| trial | run | default config on | tuned config on | " + " | ".join(FIGURE_NAMES[f] for f in FIGURES)
              + " |", "| ---: | --- | --- | --- | " + " | ".join("---:" for _ in FIGURES) + " |"]
    for i, t in enumerate(trials, 1):
        run_name = Path(t.folder).name
        link = f"[{run_name}](../{run_name}/report.html)"
        machines = t.design["machines"]
        lines.append(f"| {i} | {link} | machine {machines['default']} | machine {machines['tuned']} | "
                     + " | ".join(_trial_row(t, f) for f in FIGURES) + " |")
    statuses = [f"{Path(t.folder).name}: {t.run.status}" for t in trials if t.run.status != "complete"]
    if statuses:
        lines += ["", "> Trials that did not complete: " + "; ".join(statuses)]
    return "\n".join(lines) + "\n"


def record(series_folder, trials, results, sentence):
    def eff(e):
        if e is None:
            return None
        return {"kind": e.kind, "estimate": None if math.isnan(e.estimate) else e.estimate,
                "low": e.low if e.has_interval else None, "high": e.high if e.has_interval else None,
                "detectable": e.detectable, "why_not": e.why_not or None}
    kind = "aa-series" if all(t.design["kind"] == "aa" for t in trials) else "crossover"
    return {"run_id": Path(series_folder).name, "design": {"kind": kind, "trials": len(trials)},
            "verdict": sentence, "trials": [Path(t.folder).name for t in trials],
            "swapped": [t.swapped for t in trials],
            "effects": {f: eff(c.effect) for f, c in results.items()},
            "machine_bias": {f: eff(c.bias) for f, c in results.items()},
            "agreement": {f: {"q": None if math.isnan(c.q) else c.q, "df": c.q_df,
                              "p": None if math.isnan(c.q_p) else c.q_p} for f, c in results.items()}}


FOREST_FIGURES = ("tps", "p50", "p95", "p99")      # ratios, on one log axis


def forest_png(trials, results):
    """Each trial's tuned/default ratio with its interval (circles: straight, squares: swapped) and the
    combined one (black diamond), one row per figure, on a log axis; PNG bytes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from .charts import DPI, _small_png
    fig, ax = plt.subplots(figsize=(13.5, 0.55 + 0.75 * len(FOREST_FIGURES)), dpi=DPI)
    rows = []
    for k, figure in enumerate(FOREST_FIGURES):
        y = len(FOREST_FIGURES) - k
        rows.append((y, FIGURE_NAMES[figure]))
        for i, t in enumerate(trials):
            e = t.analysis.effects[figure] if t.analysis is not None else None
            if e is None or not e.has_interval:
                continue
            dy = 0.28 - 0.56 * i / max(1, len(trials) - 1)
            ax.errorbar(e.estimate, y + dy, xerr=[[e.estimate - e.low], [e.high - e.estimate]], fmt="s" if t.swapped
                        else "o", color="tab:orange" if t.swapped else "tab:blue", markersize=4, capsize=2, lw=1)
        c = results[figure].effect
        if c.has_interval:
            ax.errorbar(c.estimate, y - 0.4, xerr=[[c.estimate - c.low], [c.high - c.estimate]], fmt="D",
                        color="black", markersize=5, capsize=3, lw=1.5)
    ax.axvline(1.0, color="0.5", linestyle=":", lw=1)
    ax.set_xscale("log")
    lo, hi = ax.get_xlim()
    ticks = [r for r in (0.25, 0.33, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0) if lo <= r <= hi]
    ax.set_xticks(ticks, [pct(r) if r != 1.0 else "0 %" for r in ticks])
    ax.minorticks_off()
    ax.set_yticks([y for y, _ in rows], [name for _, name in rows], fontsize=8)
    ax.set_ylim(0.3, len(FOREST_FIGURES) + 0.7)
    ax.tick_params(labelsize=8)
    ax.set_xlabel("tuned vs default (log scale)", fontsize=8)
    ax.grid(axis="x", alpha=0.3, which="both", lw=0.5)
    fig.subplots_adjust(left=0.09, right=0.995, bottom=0.2, top=0.97)
    import io
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=DPI)
    plt.close(fig)
    return _small_png(buf.getvalue())


@dataclass
class _Figure:      # what render_html needs of a chart
    key: str
    title: str
    about: str


def write(series_folder, trial_folders):
    """Writes the series report; returns (summary path, verdict sentence)."""
    from .html import render_html
    series_folder = Path(series_folder)
    series_folder.mkdir(parents=True, exist_ok=True)
    trials = load_runs(trial_folders)
    results = combine(trials)
    sentence = verdict_sentence(results, trials)
    summary = render(series_folder, trials, results)
    (series_folder / "summary.md").write_text(summary, encoding="utf-8")
    forest = _Figure("forest", "Each trial and the combination",
                     "Blue circles: trials with each configuration on its namesake machine; orange squares: roles "
                     "swapped; black diamond: the combined estimate. Bars: 95 % intervals.")
    (series_folder / "report.html").write_text(
        render_html(f"Camel Tuning Lab — {series_folder.name}", summary, [(forest, forest_png(trials, results))], {},
                    charts_title="At a glance"),
        encoding="utf-8")
    write_record(series_folder, record(series_folder, trials, results, sentence))
    return series_folder / "summary.md", sentence


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m report.combine", description=__doc__.split("\n\n")[0])
    parser.add_argument("series_folder", help="where the combined report goes, e.g. results/<stamp>-x-series")
    parser.add_argument("trials", nargs="+", help="the trials' run folders, in the order they ran")
    args = parser.parse_args(argv)
    missing = [t for t in args.trials if not (Path(t) / "run.json").is_file()]
    if missing:
        parser.error(f"not run folders (no run.json): {', '.join(missing)}")
    summary, sentence = write(args.series_folder, args.trials)
    print(f"report: {summary.parent / 'report.html'}, {summary}\n{sentence}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
