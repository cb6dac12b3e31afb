"""python -m report.sweep SWEEP_FOLDER: a sweep's or an ablation's report (sweep.md, sweep.html) from its
sweep.json and each trial's verdict.json (each trial is an ordinary run folder with its own report).

Sweep: each verdict figure against the knob's value with the trial's 95 % interval (tuned vs the default
control, paired within the trial), and the best value by the rule in sweep.json (highest successful-TPS ratio
with tuned errors ≤ 0.1 %), with whether its interval overlaps the runner-up's. Ablation: each tier's share of
the full set's TPS gain: share = (ln r_full − ln r_without) / ln r_full, where r is a trial's tuned/default
successful TPS ratio; its interval propagates both trials' intervals on the log scale (σ from each 95 % interval's
half-width / 1.96, independent trials, r_full's own uncertainty in the denominator left out). The same for the
error reduction, on the difference in error points (d_full − d_without) / d_full: under overload the tuned set's
gain may be in errors, not in TPS. A share is given only of a gain the full set's trial tells apart from none
(its interval excludes no difference); of a gain within the noise every share would be noise too.
"""
import argparse
import io
import json
import math
import sys
from dataclasses import dataclass
from pathlib import Path

from .html import Figure
from .verdict import pct, read_record, signed

Z95 = 1.959964


@dataclass
class Trial:
    label: str
    about: str
    values: dict
    tier: str | None
    folder: Path | None
    exit_code: int | None
    record: dict | None

    def effect(self, figure):
        return ((self.record or {}).get("effects") or {}).get(figure) or {}

    @property
    def reported(self):
        return bool(self.effect("tps"))


def load(folder):
    folder = Path(folder)
    data = json.loads((folder / "sweep.json").read_text(encoding="utf-8"))
    trials = []
    for p in data["points"]:
        run_dir = Path(p["run_dir"]) if p.get("run_dir") else None
        if run_dir is not None and not run_dir.is_absolute():
            run_dir = folder.parent / run_dir
        trials.append(Trial(p["label"], p["about"], p.get("values") or {}, p.get("tier"), run_dir,
                            p.get("exit_code"), read_record(run_dir) if run_dir else None))
    return data, trials


def _ratio_text(e):
    if e.get("estimate") is None:
        return "—"
    if e.get("low") is None:
        return f"{pct(e['estimate'])} (no interval)"
    return f"{pct(e['estimate'])} ({pct(e['low'])[:-2]} … {pct(e['high'])})"


def _difference_text(e):
    if e.get("estimate") is None:
        return "—"
    text = f"{signed(e['estimate'], 2)} pt"
    return text if e.get("low") is None else f"{text} ({signed(e['low'], 2)} … {signed(e['high'], 2)} pt)"


def _num(x, digits=1, unit=""):
    return "—" if x is None else f"{x:,.{digits}f}{unit}"


def best(trials, max_error_pct):
    """(best trial, runner-up or None, why) by the rule: highest TPS ratio among trials with tuned errors ≤ max."""
    ok = [t for t in trials if t.reported and t.effect("tps").get("estimate") is not None
          and (t.effect("error_pct").get("tuned") or 0) <= max_error_pct]
    if not ok:
        return None, None, f"no trial kept the tuned side's errors at or below {max_error_pct} %"
    ranked = sorted(ok, key=lambda t: t.effect("tps")["estimate"], reverse=True)
    return ranked[0], (ranked[1] if len(ranked) > 1 else None), ""


def overlaps(a, b):
    ea, eb = a.effect("tps"), b.effect("tps")
    if None in (ea.get("low"), ea.get("high"), eb.get("low"), eb.get("high")):
        return True
    return ea["low"] <= eb["high"] and eb["low"] <= ea["high"]


def _kind(e, figure):
    return e.get("kind") or ("difference" if figure == "error_pct" else "ratio")


def _on_scale(x, kind):
    """A figure on the scale where gains add up: ln of a ratio, a difference as it is (None when undefined)."""
    if x is None:
        return None
    if kind == "ratio":
        return math.log(x) if x > 0 else None
    return x


def _sigma(e, kind):
    low, high = _on_scale(e.get("low"), kind), _on_scale(e.get("high"), kind)
    return None if low is None or high is None else (high - low) / (2 * Z95)


def gain_told_apart(full, figure="tps"):
    """Whether the full set's trial tells its gain in figure apart from none: what its verdict.json recorded
    (report/uncertainty.py Effect.detectable: the interval excludes no difference; no interval, not told)."""
    return bool(full.effect(figure).get("detectable"))


def share(full, without, figure="tps"):
    """(share, low, high) of the full set's gain in figure (tps: the TPS ratio; error_pct: the error difference)
    that the reverted tier carried; None when not computable."""
    ef, ew = full.effect(figure), without.effect(figure)
    kind = _kind(ef, figure)
    gain, rest = _on_scale(ef.get("estimate"), kind), _on_scale(ew.get("estimate"), kind)
    if gain is None or rest is None or abs(gain) < 1e-9:
        return None
    part = gain - rest
    sf, sw = _sigma(ef, kind), _sigma(ew, kind)
    if sf is None or sw is None:
        return part / gain, None, None
    half = Z95 * math.hypot(sf, sw)
    low, high = sorted(((part - half) / gain, (part + half) / gain))
    return part / gain, low, high


def _share_text(s):
    if s is None:
        return "—"
    value, low, high = s

    def percent(x):         # the report's minus sign, not a hyphen
        return f"{'−' if round(100 * x) < 0 else ''}{abs(100 * x):.0f}"
    return f"{percent(value)} %" + ("" if low is None else f" ({percent(low)} … {percent(high)} %)")


def render(data, trials):
    kind = data["kind"]
    title = "sweep" if kind == "sweep" else "ablation"
    done = [t for t in trials if t.reported]
    lines = [f"# Camel Tuning Lab — {title} {data['sweep_id']}", ""]
    load_ = data.get("load") or {}
    lines.append(f"Status {data['status']}: {len(done)} of {len(trials)} trials reported. Each trial is one A/B run: "
                 f"the default side unchanged (the control), the tuned side on knob set {data['configuration']} with "
                 f"the trial's values. Load: {load_.get('name', 'lab')}, {load_.get('model', '?')} model, "
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
    head = "| trial | values | successful TPS default → tuned | tuned vs default (95 % CI) | tuned errors | " \
           "p99 tuned | p99 tuned vs default | " + ("share of the TPS gain (95 % CI) | share of the error reduction (95 % CI) | " if kind == "ablate" else "") + \
           "report |"
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


def chart(data, trials):
    """Each verdict figure against the value (or trial): TPS ratio and p99 ratio with intervals, tuned errors."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    shown = [t for t in trials if t.reported]
    if not shown:
        return None
    axes = data.get("axes") or []
    numeric = len(axes) == 1 and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in axes[0]["values"])
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


def write(folder):
    from .html import render_html
    folder = Path(folder)
    data, trials = load(folder)
    text = render(data, trials)
    (folder / "sweep.md").write_text(text, encoding="utf-8")
    figure = chart(data, trials)
    html = render_html(f"Camel Tuning Lab — {folder.name}", text, [figure] if figure else [], {},
                       charts_title="Chart")
    (folder / "sweep.html").write_text(html, encoding="utf-8")
    return folder / "sweep.html", folder / "sweep.md"


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m report.sweep", description=__doc__.split("\n\n")[0])
    parser.add_argument("folder", help="the sweep's folder (holds sweep.json)")
    args = parser.parse_args(argv)
    if not (Path(args.folder) / "sweep.json").is_file():
        parser.error(f"{args.folder} is not a sweep folder (no sweep.json)")
    html_path, md_path = write(args.folder)
    print(f"sweep: {html_path}, {md_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
