"""The per-label table of summary.md and report.html, and verdict.json's `labels` (report/stats/labels.py)."""
from __future__ import annotations

from typing import Any

from report import fmt
from report.render.sections import table
from report.render.verdict import effect_text, json_number
from report.stats.labels import MIN_REQUESTS, LabelResult
from report.stats.uncertainty import CI

FIGURES = ("tps", "error_pct", "p99")


def label_lines(results: list[LabelResult], left_out: list[str]) -> list[str]:
    """'## Per request label': each label's successful TPS, errors and p99, tuned vs default with the interval."""
    if not results:
        return []
    rows = []
    for r in results:
        counts = f"{fmt.count(r.requests['default'])} / {fmt.count(r.requests['tuned'])}"
        if r.analysis is None:
            rows.append([f"`{r.label}`", counts, f"— ({r.why_not})", "", ""])
            continue
        e = r.analysis.effects
        rows.append([f"`{r.label}`", counts, effect_text(e["tps"]), effect_text(e["error_pct"]), effect_text(e["p99"])])
    lines = ["## Per request label", "",
             f"Each label's requests paired over the run's measured window and analysed as the whole run is "
             f"(tuned vs default, {CI}, within-run noise; a label needs {MIN_REQUESTS} requests on each machine).",
             ""]
    lines += table(["label", "requests default / tuned", "successful TPS", "errors", "latency p99"], rows)
    if left_out:
        lines += ["", f"Left out (fewer requests): {', '.join(f'`{label}`' for label in left_out)}."]
    return lines + [""]


def label_record(results: list[LabelResult]) -> dict[str, Any]:
    """verdict.json's labels: {label: {requests, why_not, effects: {figure: {estimate, low, high}}}}."""
    out = {}
    for r in results:
        effects = {}
        if r.analysis is not None:
            for figure in FIGURES:
                e = r.analysis.effects[figure]
                effects[figure] = {"kind": e.kind, "estimate": json_number(e.estimate),
                                   "low": json_number(e.low) if e.has_interval else None,
                                   "high": json_number(e.high) if e.has_interval else None,
                                   "why_not": e.why_not or None}
        out[r.label] = {"requests": dict(r.requests), "why_not": r.why_not or None, "effects": effects}
    return out
