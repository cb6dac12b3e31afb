"""The report over the trials of a `--repeat N` run (the series folder's summary.md, report.html's forest plot and
verdict.json): the combined effect and machine bias per figure, whether the trials agree, each trial's own
figures (the combination: report/stats/combine.py)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from report.render.html import Figure
from report.render.lines import line_lines
from report.render.verdict import FIGURE_NAMES, NO_ERRORS, effect_text, pct, power_words, spread_text
from report.stats import between
from report.stats.between import Calibration
from report.stats.combine import AGREEMENT_P, Combined
from report.stats.runs import LoadedRun
from report.stats.uncertainty import CI, FIGURES, Effect, t_quantile

FEW_AA_DF = 3          # fewer A/A degrees of freedom: a calibrated series' t is 4.3 (2 df) or 12.7 (1); 3.2 at 3


def _between_words(c: Combined) -> str:
    """'; between trials beyond their own noise: τ = ±6.0 %, DerSimonian–Laird; the interval scaled by the trials'
    own scatter (Hartung–Knapp, t with 2 df, ×1.4)', the A/A calibration used instead, or that there is none."""
    if math.isnan(c.tau2):
        if c.effect.intervals.startswith("calibrated"):
            return (f"; too few trials for their own between-trial variance: {c.effect.intervals}, the interval "
                    f"scaled by their scatter (Hartung–Knapp, t with {c.effect.df:g} df)" + _more_aa(c.effect.df))
        return "; within-trial noise only (too few trials for a between-trial variance, no matching A/A runs)"
    whose = "trials and A/A runs" if c.pooled else "trials"
    scale = (f"the interval scaled by the {whose}' own scatter (Hartung–Knapp, t with {c.effect.df:g} df, "
             f"×{c.inflated:.1f})")
    pooled = f", pooled with the matching A/A runs' by their degrees of freedom ({c.effect.intervals})" \
        if c.pooled else ""
    tau = ("DerSimonian–Laird τ = 0" if c.tau2 == 0
           else f"τ = {spread_text(c.figure, math.sqrt(c.tau2))}, DerSimonian–Laird")
    return f"; between trials beyond their own noise: {tau}{pooled}; {scale}"


def _more_aa(df: float) -> str:
    """What narrows a series calibrated by few A/A runs: its t has their degrees of freedom, not its own trials'
    (one A/A run: t 12.7, as wide as ±30 % around two trials of ±8 %, results/20261201T221930Z-s73-series-series)."""
    if not df < FEW_AA_DF:
        return ""
    return (f": t is {t_quantile(df):.1f} at {df:g} df, {t_quantile(FEW_AA_DF):.1f} at {FEW_AA_DF} (four A/A runs); "
            "more A/A runs of this load narrow it (./start.sh --aa --repeat 4 with the same load options)")


def agreement_words(c: Combined) -> str:
    if c.q_df >= 1 and not math.isnan(c.q_p):
        if c.q_p >= AGREEMENT_P:
            return f"the trials agree (Cochran's Q = {c.q:.1f}, {c.q_df} df, p = {c.q_p:.2f}){_between_words(c)}"
        return (f"the trials DISAGREE beyond their own noise (Q = {c.q:.1f}, {c.q_df} df, p = {c.q_p:.3f}): something "
                f"changed between trials{_between_words(c)}")
    if c.q_df >= 1:
        return "agreement not tested (a trial's resampled figure does not vary)"
    if c.bias is not None:
        return ("one trial per orientation: agreement cannot be tested beyond the machine bias it estimates, nor "
                f"the between-trial variance estimated (--repeat 4 or more tests both){_between_words(c)}")
    return f"one trial: agreement is not tested, the between-trial variance not estimated{_between_words(c)}"


def agreement_cell(c: Combined) -> str:
    """agreement_words in a few words, for the table."""
    if c.q_df >= 1 and not math.isnan(c.q_p):
        widened = f"; interval ×{c.inflated:.1f} for τ" if c.tau2 > 0 or c.pooled else ""
        widened += " (pooled with A/A runs)" if c.pooled else ""
        return (f"agree (p = {c.q_p:.2f}){widened}" if c.q_p >= AGREEMENT_P
                else f"DISAGREE (p = {c.q_p:.3f}){widened}")
    calibrated = "; A/A's τ in the interval" if c.effect.intervals.startswith("calibrated") else ""
    return "not testable" + (" (one trial per orientation)" if c.bias is not None and c.q_df < 1 else "") + calibrated


def verdict_sentence(results: dict[str, Combined], trials: list[LoadedRun]) -> str:
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
        head = f"no difference in successful TPS detectable ({ci}{power_words(tps.effect)})"
    text = f"{head}, combined over {counted} in {orientations}; {agreement_words(tps)}"
    if tps.bias is not None and tps.bias.has_interval:
        text += (f"; machine tuned vs machine default: {pct(tps.bias.estimate)} "
                 f"({effect_text(tps.bias, with_estimate=False)}), cancelled by the swap")
    return text + "."


def _trial_row(t: LoadedRun, figure: str) -> str:
    e = t.analysis.effects[figure] if t.analysis is not None else None
    return effect_text(e) if e is not None else "— (no paired window)"


def render(series_folder: str | Path, trials: list[LoadedRun], results: dict[str, Combined]) -> str:
    name = Path(series_folder).name
    lines = [f"# Camel Tuning Lab — {len(trials)} trials with swapped roles ({name})", "",
             f"**Verdict:** {verdict_sentence(results, trials)}", "",
             *(line_lines(trials[0].run) if trials else []),      # a side's box and line follow its configuration
             "Results are labelled by configuration (default, tuned), never by machine. Each trial restarted both "
             "machines' services together before its load; from the second trial on, the configurations "
             "alternate between the two machines (crossover), so a difference that belongs to a machine cancels "
             "out of the combined figure (A/A series are not swapped: their columns are the machines). The "
             "trials' intervals here are drawn with seeds of their own (independent resamples), so their last "
             "digits can differ from each trial's own report. With more trials than fitted terms, the combined "
             "intervals also hold the variance between trials (random effects, DerSimonian–Laird); with fewer, "
             "that of the matching A/A runs beside the trials where there are some (as a single run's report "
             "does); which, per figure: the agreement column and verdict.json `intervals`. The "
             "within-trial ones alone: verdict.json `ci_within`. Method: report/README.md (Uncertainty, Crossover).",
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


def record(series_folder: str | Path, trials: list[LoadedRun], results: dict[str, Combined],
           sentence: str, calibration: Calibration | None = None) -> dict[str, Any]:
    """The series' verdict.json (calibration: the matching A/A runs looked up for it, None for an A/A series)."""
    def eff(e: Effect | None) -> dict[str, Any] | None:
        if e is None:
            return None
        within = dict(zip(("low", "high"), e.within, strict=True)) if e.has_interval else None
        return {"kind": e.kind, "estimate": None if math.isnan(e.estimate) else e.estimate,
                "low": e.low if e.has_interval else None, "high": e.high if e.has_interval else None,
                "detectable": e.detectable, "why_not": e.why_not or None, "ci_within": within,
                # the t quantile's degrees of freedom behind low … high: the tuner re-levels it (tune/sequential.py)
                "df": e.df if e.has_interval and not math.isnan(e.df) else None,
                "intervals": e.intervals if e.has_interval else None,
                "min_detectable": None if math.isnan(e.min_detectable) else e.min_detectable}
    def level(c: Combined) -> dict[str, Any]:
        """The tuned configuration's level over the trials and its interval (level gates)."""
        shown = c.level is not None and not math.isnan(c.level.low)
        return {"tuned": None if c.level is None else c.level.tuned,
                "tuned_ci": {"low": c.level.low, "high": c.level.high} if shown else None}
    kind = "aa-series" if all(t.design["kind"] == "aa" for t in trials) else "crossover"
    return {"run_id": Path(series_folder).name, "design": {"kind": kind, "trials": len(trials)},
            "verdict": sentence, "trials": [Path(t.folder).name for t in trials],
            "swapped": [t.swapped for t in trials],
            "effects": {f: {**eff(c.effect), **level(c)} for f, c in results.items()},
            "machine_bias": {f: eff(c.bias) for f, c in results.items()},
            "calibration": between.record(calibration) if calibration is not None else None,
            "agreement": {f: {"q": None if math.isnan(c.q) else c.q, "df": c.q_df,
                              "p": None if math.isnan(c.q_p) else c.q_p,
                              "tau2": None if math.isnan(c.tau2) else c.tau2} for f, c in results.items()}}


FOREST_FIGURES = ("tps", "p50", "p95", "p99")      # ratios, on one log axis


def forest_png(trials: list[LoadedRun], results: dict[str, Combined]) -> bytes:
    """Each trial's tuned/default ratio with its interval (circles: straight, squares: swapped) and the
    combined one (black diamond), one row per figure, on a log axis; PNG bytes."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from report.render.charts import DPI, small_png
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
    return small_png(fig)


FOREST = Figure("forest", "Each trial and the combination",
                "Blue circles: trials with each configuration on its namesake machine; orange squares: roles swapped; "
                "black diamond: the combined estimate. Bars: 95 % intervals.")
