"""The verdict per request label (JMeter's sampler label, e.g. `GET /api/customers/{id}`): each label's requests on
both machines, paired over the run's own window and analysed as the whole run is (stats/uncertainty.py), so a
change that helps one request and hurts another shows (issue 38: a service's own plan has its own labels).

Labels are taken in order of requests; a label with fewer than MIN_REQUESTS requests on either machine in the
window is named with its counts and not analysed; beyond MAX_LABELS the rest are named as left out. A run of one
label has no breakdown (the run's own figures are that label's). Each label's resamples come from a seed of its
own (SEED + 1 + its rank), so its interval does not lean on the run's."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from report import MACHINES
from report.read.jtl import Samples
from report.stats.machine import Machine
from report.stats.uncertainty import SEED, Analysis, analyse
from report.stats.windows import WINDOW_S, paired_windows

MIN_REQUESTS = 100          # per machine, in the window: fewer give intervals too wide to read
MAX_LABELS = 12             # each one is a whole analysis (~0.5 s per 3 minutes of windows)


@dataclass
class LabelResult:
    label: str
    requests: dict[str, int]            # machine → requests of this label in the window
    analysis: Analysis | None = None
    why_not: str = ""                   # why it has no analysis


def only(samples: Samples, label: str) -> Samples:
    keep = samples.label == label
    return Samples(start=samples.start[keep], elapsed_ms=samples.elapsed_ms[keep], ok=samples.ok[keep],
                   label=samples.label[keep], error=samples.error[keep])


def by_label(machines: dict[str, Machine], analysis: Analysis | None) -> tuple[list[LabelResult], list[str]]:
    """([LabelResult] in order of requests, [labels left out beyond MAX_LABELS]); ([], []) for a run of one label
    or without a paired window."""
    if analysis is None or any(machines[m].samples is None for m in MACHINES):
        return [], []
    start = analysis.paired.start
    end = start + analysis.paired.n * WINDOW_S
    inside = {m: (machines[m].samples.start >= start) & (machines[m].samples.start < end) for m in MACHINES}
    counts: dict[str, dict[str, int]] = {}
    for m in MACHINES:
        labels, n = np.unique(machines[m].samples.label[inside[m]], return_counts=True)
        for label, count in zip(labels.tolist(), n.tolist(), strict=True):
            counts.setdefault(label, dict.fromkeys(MACHINES, 0))[m] = count
    if len(counts) < 2:
        return [], []
    ranked = sorted(counts, key=lambda label: (-sum(counts[label].values()), label))
    results = []
    for rank, label in enumerate(ranked[:MAX_LABELS]):
        result = LabelResult(label, counts[label])
        fewest = min(counts[label].values())
        if fewest < MIN_REQUESTS:
            result.why_not = f"{fewest} requests on one machine (need {MIN_REQUESTS})"
        else:
            paired = paired_windows({m: only(machines[m].samples, label) for m in MACHINES}, start, end)
            result.analysis = analyse(paired, seed=SEED + 1 + rank) if paired is not None else None
            result.why_not = "" if result.analysis is not None else "no paired window"
        results.append(result)
    return results, ranked[MAX_LABELS:]
