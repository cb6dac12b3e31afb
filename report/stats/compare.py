"""Several runs side by side (the document: report/render/compare.py): a configuration's change in a verdict
figure from the first run named to another ("tuned before and after a knob change", "three A/A runs: how far does
the lab drift"). Runs are not paired in time with each other, so a change across runs is the ratio (or difference)
of two independent estimates: its interval takes t × the σ of the difference of their independent bootstrap
replicates (log scale for ratios), with their degrees of freedom summed."""
from __future__ import annotations

import numpy as np

from report.stats.runs import LoadedRun
from report.stats.uncertainty import Effect, interval, kind_of, log_or_raw


def across_runs(first: LoadedRun, other: LoadedRun, side: str, figure: str) -> Effect:
    """other's figure of one side vs first's: an Effect (ratio, or difference for error %)."""
    kind = kind_of(figure)
    if first.analysis is None or other.analysis is None:
        e = Effect(figure, kind, float("nan"), float("nan"))
        e.why_not = "a run without a paired window"
        return e
    a, b = first.analysis.effects[figure], other.analysis.effects[figure]
    base, value = getattr(a, side), getattr(b, side)
    e = Effect(figure, kind, base, value)
    if np.isnan(base) or np.isnan(value) or (kind == "ratio" and (base <= 0 or value <= 0)):
        e.why_not = "not measured in both runs"
        return e
    # the runs' own rules first: too few windows, or too few successes for a percentile, in either run
    refused = [f"{run}: {eff.why_not}" for run, eff in (("first run", a), ("this run", b))
               if eff.why_not and "figure is 0" not in eff.why_not]
    if refused or not first.analysis.replicates or not other.analysis.replicates:
        e.why_not = "; ".join(refused) or "a run without resamples"
        return e
    ra, rb = first.analysis.replicates[side][figure], other.analysis.replicates[side][figure]
    df = first.analysis.df(figure) + other.analysis.df(figure)
    if kind == "ratio":
        e.estimate = value / base
        e.low, e.high = interval(e.estimate, np.exp(log_or_raw(kind, rb) - log_or_raw(kind, ra)), df, log_scale=True)
    else:
        e.estimate = value - base
        e.low, e.high = interval(e.estimate, rb - ra, df, log_scale=False)
    return e
