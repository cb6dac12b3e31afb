"""history.md and its charts: each history (runs of one fingerprint), its runs in order with their figures and
intervals, and the change points of each track with what changed between the runs around them
(report/history/)."""
from __future__ import annotations

import io
import json
import math

from report.history.changes import HISTORY_ALPHA, PERMUTATIONS, Change
from report.history.histories import History, Track
from report.history.index import Entry, as_change
from report.render.html import Figure
from report.render.verdict import signed


def _num(x: float, unit: str) -> str:
    if math.isnan(x):
        return "–"
    return f"{signed(x, 1)} {unit}" if unit in ("%", "pt") else f"{x:.1f} {unit}"


def _interval(t: Track, i: int) -> str:
    if math.isnan(t.lows[i]) or math.isnan(t.highs[i]):
        return _num(t.values[i], t.unit)
    return f"{_num(t.values[i], t.unit)} ({signed(t.lows[i], 1)} … {signed(t.highs[i], 1)})"


def _fingerprint_text(parts: dict) -> str:
    load = parts.get("load") or {}
    shown = {k: load[k] for k in ("name", "model", "users", "rate_per_s", "ramp_up_s", "duration_s") if k in load}
    knobs = parts.get("knobs") or {}
    return (f"design {parts.get('design', '*')}, service {parts.get('service', '*')}, load "
            f"{json.dumps(shown) if 'load' in parts else '*'}, cores {parts.get('cores', '*') or '?'}, machines "
            f"{json.dumps(parts.get('machine_kind', '*'))}, knobs of {', '.join(sorted(knobs)) or 'none'} "
            f"({sum(len(k) for k in knobs.values())} values)")


def change_text(t: Track, c) -> str:
    """How big a change is: in points for a figure that is itself a change (an effect in % or pt, which may cross
    zero), else in % of the mean before."""
    if t.what == "effect":
        return f"{signed(c.mean_after - c.mean_before, 1)} points"
    return f"{signed(c.change_pct, 1)} % of the mean"


def pvalue_text(c: Change) -> str:
    """'permutation p = 0.004, 0.036 after Holm over the history's figures'."""
    return f"permutation p = {c.pvalue:.3f}, {c.adjusted:.3f} after Holm over the history's figures"


def render(histories: list[History], skipped: dict[str, str], filters_text: str) -> str:
    lines = ["# Run history", "", f"Runs: {filters_text}. A history is the complete runs whose fingerprint agrees "
             "(design, load, service, machine kind, host cores, every configuration's knobs; `--ignore` widens it, "
             f"`--also` narrows it). Change points: Apache Otava's e-divisive with its permutation test "
             f"({PERMUTATIONS} shuffles of each segment), kept where Holm's step-down over all of a history's "
             f"figures together leaves p ≤ {HISTORY_ALPHA} (the chance of any false alarm in a flat history).", ""]
    if skipped:
        lines += ["Folders skipped (unreadable): " + "; ".join(f"`{k}` ({v})" for k, v in sorted(skipped.items())), ""]
    if not histories:
        lines += ["No history: no two complete runs share a fingerprint under these filters."]
    for n, h in enumerate(histories, 1):
        lines += [f"## History {n}: `{h.key}`, {len(h.entries)} runs", "", _fingerprint_text(h.parts), ""]
        effects = [t for t in h.tracks if t.what == "effect"]
        lines += ["| # | run | started | " + " | ".join(t.title for t in effects) + " |",
                  "| --- | --- | --- | " + " | ".join("---" for _ in effects) + " |"]
        for i, e in enumerate(h.entries):
            lines.append(f"| {i + 1} | `{e.id}` | {e.started} | " + " | ".join(_interval(t, i) for t in effects) + " |")
        found = [(t, c, why) for t in h.tracks for c, why in zip(t.changes, t.why, strict=True)]
        lines += ["", "**Change points**" + (":" if found else ": none found."), ""]
        for t, c, why in found:
            run = h.entries[c.index]
            lines.append(f"- {t.title}: at run {c.index + 1} (`{run.id}`), {_num(c.mean_before, t.unit)} → "
                         f"{_num(c.mean_after, t.unit)} ({change_text(t, c)}, {pvalue_text(c)}); "
                         f"changed from the run before: {'; '.join(why) or 'nothing recorded (noise, or the host)'}")
        lines.append("")
    return "\n".join(lines) + "\n"


def charts(histories: list[History]) -> list[tuple[Figure, bytes]]:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    out = []
    for n, h in enumerate(histories, 1):
        shown = [t for t in h.tracks if not all(math.isnan(v) for v in t.values)]
        fig, axes = plt.subplots(len(shown), 1, figsize=(13, 2.2 * len(shown)), squeeze=False)
        xs = list(range(1, len(h.entries) + 1))
        for ax, t in zip(axes[:, 0], shown, strict=True):
            if t.what == "effect":
                pairs = list(zip(t.values, t.lows, t.highs, strict=True))
                lo = [0 if math.isnan(v) or math.isnan(low) else v - low for v, low, _ in pairs]
                hi = [0 if math.isnan(v) or math.isnan(high) else high - v for v, _, high in pairs]
                ax.errorbar(xs, t.values, yerr=[lo, hi], fmt="o-", capsize=3)
                ax.axhline(0, color="grey", lw=0.8, ls="--")
            else:
                ax.plot(xs, t.values, "o-")
            for c in t.changes:
                ax.axvline(c.index + 0.5, color="tab:red", lw=1.2)
            ax.set_title(f"{t.title} ({t.unit})", fontsize=9, loc="left")
            ax.set_xticks(xs)
        axes[-1, 0].set_xlabel("run, oldest first (the table's #)")
        fig.tight_layout()
        buf = io.BytesIO()
        fig.savefig(buf, format="png", dpi=80)
        plt.close(fig)
        out.append((Figure(f"history-{n}", f"History {n} ({h.key})",
                           "Each figure per run, the verdict's with its 95 % interval; red: a change point."),
                    buf.getvalue()))
    return out


def runs_table(entries: list[Entry]) -> str:
    """`./start.sh runs`: one line per indexed folder."""
    head = f"{'folder':<48} {'kind':<6} {'status':<9} {'design':<10} {'service':<14} {'users':>5} {'TPS effect':>22}"
    rows = [head, "-" * len(head)]
    for e in entries:
        est, low, high, unit = as_change(e.figures.get("tps") or {})
        effect = "" if math.isnan(est) else f"{signed(est, 1)} {unit}"
        if not (math.isnan(low) or math.isnan(high)):
            effect += f" ({signed(low, 0)}…{signed(high, 0)})"
        users = e.load.get("users", "") if e.load.get("model", "closed") == "closed" else e.load.get("rate_per_s", "")
        rows.append(f"{e.id:<48} {e.kind:<6} {e.status:<9} {e.design:<10} {e.service:<14} {users!s:>5} {effect:>22}")
    return "\n".join(rows)
