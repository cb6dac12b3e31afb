"""sweep.md and its chart: a sweep's or an ablation's report from its trials' verdicts (the rules:
report/stats/sweep.py). Sweep: each verdict figure against the knob's value with the trial's 95 % interval, and the
best value with whether its interval overlaps the runner-up's. Ablation: each tier's share of the full set's gain
in TPS and in errors."""
from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from report.read.sweep import Trial
from report.render.html import Figure
from report.render.verdict import pct, signed
from report.stats.sweep import best, gain_told_apart, overlaps, share


def _ratio_text(e: dict[str, Any]) -> str:
    if e.get("estimate") is None:
        return "—"
    if e.get("low") is None:
        return f"{pct(e['estimate'])} (no interval)"
    return f"{pct(e['estimate'])} ({pct(e['low'])[:-2]} … {pct(e['high'])})"


def _difference_text(e: dict[str, Any]) -> str:
    if e.get("estimate") is None:
        return "—"
    text = f"{signed(e['estimate'], 2)} pt"
    return text if e.get("low") is None else f"{text} ({signed(e['low'], 2)} … {signed(e['high'], 2)} pt)"


def _num(x: float | None, digits: int = 1, unit: str = "") -> str:
    return "—" if x is None else f"{x:,.{digits}f}{unit}"


def _share_text(s: tuple[float, float | None, float | None] | None) -> str:
    if s is None:
        return "—"
    value, low, high = s

    def percent(x: float) -> str:         # the report's minus sign, not a hyphen
        return f"{'−' if round(100 * x) < 0 else ''}{abs(100 * x):.0f}"
    return f"{percent(value)} %" + ("" if low is None else f" ({percent(low)} … {percent(high)} %)")


def render(data: dict[str, Any], trials: list[Trial]) -> str:
    kind = data["kind"]
    title = "sweep" if kind == "sweep" else "ablation"
    done = [t for t in trials if t.reported]
    lines = [f"# Camel Tuning Lab — {title} {data['sweep_id']}", ""]
    load_ = data.get("load") or {}
    svc = data.get("service") or {}
    named = (f"service {svc['name']}'s own plan {Path(str(svc.get('plan'))).name}" if svc.get("plan")
             else load_.get("name", "lab"))
    lines.append(f"Status {data['status']}: {len(done)} of {len(trials)} trials reported. Each trial is one A/B run: "
                 f"the default side unchanged (the control), the tuned side on knob set {data['configuration']} with "
                 f"the trial's values. Load: {named}, {load_.get('model', '?')} model, "
                 f"{load_.get('users', '?')} users, ramp-up {load_.get('ramp_up_s', '?')} s, hold "
                 f"{load_.get('duration_s', '?')} s, warm-up excluded {data.get('warmup_s', '?')} s.")
    lines.append("")
    rule = data.get("rule") or {}
    max_err = rule.get("max_error_pct", 0.1)
    if kind == "sweep":
        winner, second, why = best(trials, max_err)
        if winner is None:
            lines.append(f"**Best value: none** — {why}.")
        else:
            close = ""
            if second is not None and overlaps(winner, second):
                close = (f" Its interval overlaps that of {second.about} ({_ratio_text(second.effect('tps'))}): "
                         "these trials cannot tell the two apart; repeat them (or lengthen the hold) to decide.")
            lines.append(f"**Best value: {winner.about}** — successful TPS {_ratio_text(winner.effect('tps'))} vs the "
                         f"default control, tuned errors {_num(winner.effect('error_pct').get('tuned'), 2, ' %')} "
                         f"(rule: {rule.get('best', '')}).{close}")
    else:
        full = next((t for t in trials if t.tier is None and t.reported), None)
        if full is None:
            lines.append("**No share of the gain**: the full set's trial has no verdict.")
        else:
            errors = full.effect("error_pct")
            lines.append(f"**The full set {data['configuration']}**: successful TPS {_ratio_text(full.effect('tps'))}, "
                         f"errors {_difference_text(errors)} vs default. Each other trial reverts one tier's changes; "
                         "its share is how much of a gain goes away without them (shares need not add up to 100 %: "
                         "tiers interact).")
            unclear = [name for figure, name in (("tps", "TPS gain"), ("error_pct", "error reduction"))
                       if full.effect(figure) and not gain_told_apart(full, figure)]
            if unclear:
                lines.append("")
                lines.append(f"**No share of the {' nor of the '.join(unclear)}**: the full set's own interval holds "
                             "no difference, so a tier's share of it would be noise (lengthen the hold, or load where "
                             "the sets differ).")
    lines.append("")
    shares = "share of the TPS gain (95 % CI) | share of the error reduction (95 % CI) | " if kind == "ablate" else ""
    head = "| trial | values | successful TPS default → tuned | tuned vs default (95 % CI) | tuned errors | " \
           "p99 tuned | p99 tuned vs default | " + shares + "report |"
    lines += [head, "|" + " --- |" * (head.count("|") - 1)]
    full = next((t for t in trials if t.tier is None and t.reported), None)
    for t in trials:
        tps, err, p99 = t.effect("tps"), t.effect("error_pct"), t.effect("p99")
        link = f"[{t.folder.name}](../{t.folder.name}/report.html)" if t.folder else "not run"
        status = "" if t.reported else (" (not run)" if t.folder is None else f" (no verdict; exit {t.exit_code})")
        cells = [f"{t.label}{status}", t.about.replace("|", "\\|"),
                 f"{_num(tps.get('default'))} → {_num(tps.get('tuned'))} req/s" if tps else "—",
                 _ratio_text(tps) if tps else "—", _num(err.get("tuned"), 2, " %") if err else "—",
                 _num(p99.get("tuned"), 0, " ms") if p99 else "—", _ratio_text(p99) if p99 else "—"]
        if kind == "ablate":
            for figure in ("tps", "error_pct"):
                told = full is not None and gain_told_apart(full, figure)
                cells.append("(reference)" if t.tier is None else
                             _share_text(share(full, t, figure)) if told and t.reported else "—")
        cells.append(link)
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Intervals: each trial's own paired block bootstrap (report/README.md, Uncertainty): tuned vs the "
              "default control measured at the same time. Trials ran one after another, so a difference between "
              "trials also holds the host's drift; an A/A run measures how large that is."]
    if kind == "ablate":
        lines += ["", "Share of the TPS gain: (ln r_full − ln r_without) / ln r_full with r the trial's TPS ratio; of "
                  "the error reduction: (d_full − d_without) / d_full with d the trial's tuned − default error points. "
                  "Each interval combines both trials' spreads (independent trials); a share is given only of a gain "
                  "the full set's interval tells apart from none."]
    return "\n".join(lines) + "\n"


def chart(data: dict[str, Any], trials: list[Trial]) -> tuple[Figure, bytes] | None:
    """Each verdict figure against the value (or trial): TPS ratio and p99 ratio with intervals, tuned errors."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    shown = [t for t in trials if t.reported]
    if not shown:
        return None
    axes = data.get("axes") or []
    numeric = len(axes) == 1 and all(isinstance(v, int | float) and not isinstance(v, bool) for v in axes[0]["values"])
    xs = [t.values[axes[0]["knob"]] for t in shown] if numeric else list(range(len(shown)))
    fig, panels = plt.subplots(1, 3, figsize=(15, 4.2))
    for ax, figure, label in ((panels[0], "tps", "successful TPS, tuned / default"),
                              (panels[1], "p99", "p99 latency, tuned / default")):
        ys, lows, highs = [], [], []
        for t in shown:
            e = t.effect(figure)
            y = e.get("estimate")
            ys.append(float("nan") if y is None else y)
            lows.append(0 if y is None or e.get("low") is None else y - e["low"])
            highs.append(0 if y is None or e.get("high") is None else e["high"] - y)
        ax.errorbar(xs, ys, yerr=[lows, highs], fmt="o-", capsize=4)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_title(label + " (95 % CI)")
    errs = [t.effect("error_pct").get("tuned") for t in shown]
    panels[2].plot(xs, [float("nan") if e is None else e for e in errs], "o-", color="tab:red")
    panels[2].axhline((data.get("rule") or {}).get("max_error_pct", 0.1), color="grey", lw=0.8, ls="--")
    panels[2].set_title("tuned errors (%)")
    for ax in panels:
        if numeric:
            ax.set_xlabel(axes[0]["knob"])
        else:
            ax.set_xticks(xs, [t.label for t in shown], rotation=30, ha="right")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    about = ("x: " + (axes[0]["knob"] if numeric else "the trials, labelled as in the table") +
             ". Dashed: no difference (ratios) and the rule's error limit.")
    return Figure("sweep", "The verdict figures against the value", about), buf.getvalue()
