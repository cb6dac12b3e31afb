"""The verdict in words a tuner can quote: tuned vs default with 95 % intervals (report/stats/uncertainty.py, widened by
the matching A/A trials' between-run variance: report/stats/between.py), each machine that stopped, a machine that
never settled, the line saying what the intervals include; and verdict.json for machines (combined trials, run
comparisons, the A/A calibration of other runs).

Results are labelled by configuration: a run folder's default/ and tuned/ hold what ran the default and the
tuned configuration, whichever machine that was (run.json `design.machines` says which).
"""
from __future__ import annotations

import json
import math
from typing import Any

import runfolder
from report.fmt import utc_clock
from report.read.runinfo import RunInfo, design
from report.stats.between import Calibration
from report.stats.between import record as calibration_record
from report.stats.machine import Machine
from report.stats.steady import STILL_COMPILING_CPU, compiling_cpu
from report.stats.uncertainty import CI, FIGURES, POWER, Analysis, Effect, kind_of
from report.stats.windows import WINDOW_S

FIGURE_NAMES = {"tps": "successful TPS", "error_pct": "errors", "p50": "latency p50", "p95": "latency p95",
                "p99": "latency p99", "cpu": "JVM CPU per request"}
NO_ERRORS = "no errors on either machine"


def signed(x: float, digits: int) -> str:
    return f"{'+' if x >= 0 else '−'}{abs(x):,.{digits}f}"


def pct(ratio: float) -> str:
    """A ratio as a signed percentage change: 1.42 → '+42 %', 0.931 → '−6.9 %'."""
    change = 100.0 * (ratio - 1.0)
    return f"{signed(change, 0 if abs(change) >= 10 else 1)} %"


def effect_text(effect: Effect, with_estimate: bool = True) -> str:
    """'+42 % (95 % CI +30 … +55 %)', '+3.1 pt (95 % CI +1.0 … +5.2 pt)', or why there is no interval."""
    if math.isnan(effect.estimate):
        return f"— ({effect.why_not})" if effect.why_not else "—"
    if effect.kind == "difference" and effect.default == 0 and effect.tuned == 0:
        return NO_ERRORS
    if effect.kind == "ratio":
        est, lo, hi = pct(effect.estimate), pct(effect.low), pct(effect.high)
        ci = f"{CI} {lo[:-2]} … {hi}"
    else:
        est = f"{signed(effect.estimate, 2)} pt"
        ci = f"{CI} {signed(effect.low, 2)} … {signed(effect.high, 2)} pt"
    if not effect.has_interval:
        return f"{est} (no interval: {effect.why_not})" if with_estimate else f"no interval: {effect.why_not}"
    return f"{est} ({ci})" if with_estimate else ci


def stop_phrase(machine: Machine) -> str:
    """'default stopped answering at 22:01:45 UTC (+99 s): 100 % java.net.SocketTimeoutException: …'."""
    stop = machine.stop
    rel = stop.at - machine.t0
    if stop.ever_answered:
        text = f"{machine.name} stopped answering at {utc_clock(stop.at)} UTC (+{rel:.0f} s)"
    else:
        text = f"{machine.name} never answered successfully (from {utc_clock(stop.at)} UTC, +{rel:.0f} s)"
    failed = sum(stop.errors.values())
    if failed:
        error, n = stop.errors.most_common(1)[0]
        text += f": {100.0 * n / stop.attempts:.0f} % {error}"
    return text


def _tps_words(effect: Effect, subject: str) -> str:
    """'tuned: +42 % successful TPS (95 % CI …)' or 'no difference … detectable (95 % CI …)'."""
    if not effect.has_interval:
        return f"{subject}: successful TPS {effect_text(effect)}"
    if effect.detectable:
        return f"{subject}: {pct(effect.estimate)} successful TPS ({effect_text(effect, with_estimate=False)})"
    interval = effect_text(effect, with_estimate=False)
    return f"no difference in successful TPS detectable ({interval}{power_words(effect)})"


def power_words(effect: Effect) -> str:
    """'; none larger than ±9 % at 80 % power': what 'no difference' can say at this interval's width."""
    size = effect.min_detectable
    if math.isnan(size):
        return ""
    shown = f"±{100 * (size - 1):.0f} %" if effect.kind == "ratio" else f"±{size:.2f} pt"
    return f"; none larger than {shown} at {100 * POWER:.0f} % power"


def steady_words(machines: dict[str, Machine]) -> str:
    """A clause for machines that never settled, or settled only after the excluded warm-up (empty when
    neither applies or the question does not arise)."""
    unsettled = [m for m in machines.values() if m.steady is not None and not m.steady.settled and not m.steady.why]
    clauses = []
    if unsettled:
        drifts = ", ".join(f"{m.name}'s JIT never quiet" if m.steady.compiling else
                           f"{m.name}'s TPS {signed(100 * m.steady.drift, 0)} % across the window"
                           for m in unsettled if m.steady.compiling or not math.isnan(m.steady.drift))
        who = "neither machine" if len(unsettled) == len(machines) else " and ".join(m.name for m in unsettled)
        verb = "reached" if who == "neither machine" else "never reached"
        rising = all(m.steady.compiling or m.steady.drift > 0 for m in unsettled if not math.isnan(m.steady.drift))
        clauses.append(f"{who} {verb} a steady state{f' ({drifts})' if drifts else ''}: the figures describe "
                       + ("machines still warming up" if rising else "machines whose throughput was still changing"))
    late = [m for m in machines.values() if m.steady is not None and m.steady.settled and m.window is not None
            and m.steady.start_s > m.window.warmup_s]
    if late:
        clauses.append(" and ".join(f"{m.name} settled only at +{m.steady.start_s:.0f} s" for m in late)
                       + f", after the excluded warm-up of {late[0].window.warmup_s:.0f} s "
                         "(--warmup auto measures from there)")
    return "; ".join(clauses)


AA_HINT = "run ./start.sh --aa with the same load"


def spread_text(figure: str, tau: float) -> str:
    """A between-run standard deviation in the figure's words: '±12 %' (a ratio's, from the log scale), '±1.50 pt'."""
    if kind_of(figure) == "ratio":
        change = 100.0 * (math.exp(tau) - 1.0)
        return f"±{change:.{0 if change >= 10 else 1}f} %"
    return f"±{tau:.2f} pt"


def interval_basis(calibration: Calibration, kind: str) -> str:
    """What the run's intervals include, in verdict.json's words (`interval`) and the summary's."""
    names = calibration.trials
    if kind == "aa":
        others = f" (matching A/A trials beside it: {', '.join(names)})" if names else ""
        return f"within-run noise only: an A/A run calibrates the A/B runs of its load{others}"
    if calibration.applied:
        return (f"within-run noise + between-run variance from {len(names)} matching A/A "
                f"trial{'s' if len(names) != 1 else ''} ({', '.join(names)})")
    if names:
        return f"within-run noise only: {len(names)} matching A/A trials ({', '.join(names)}), but no interval to widen"
    why = f"; {calibration.lookup.why_none}" if calibration.lookup.why_none else ""
    return f"within-run noise only: no A/A calibration of this load ({AA_HINT}){why}"


def _spreads(calibration: Calibration) -> str:
    """'±12 % in successful TPS, ±0.40 pt in errors, …': τ₀ of each figure some A/A trial measured."""
    return ", ".join(f"{spread_text(f, math.sqrt(c.tau2))} in {FIGURE_NAMES[f]}"
                     for f, c in calibration.figures.items() if c.k)


def _dl_words(calibration: Calibration) -> str:
    """'; around their mean of −3.9 % TPS, DerSimonian–Laird's τ = ±18 %' (two A/A trials or more)."""
    c = calibration.figures["tps"]
    if c.k < 2:
        return ""
    return (f"; around their mean of {pct(math.exp(c.aa_mean))} successful TPS, DerSimonian–Laird's τ = "
            f"{spread_text('tps', math.sqrt(c.tau2_dl))}")


def calibration_words(calibration: Calibration, kind: str) -> str:
    """The summary's line under the verdict: what the intervals include, from which A/A trials, how much the
    twins differed between runs beyond their own noise, which A/A runs of this folder did not count and why."""
    text = f"**Intervals:** {interval_basis(calibration, kind)}."
    if kind != "aa" and calibration.applied:
        text += (f" Beyond their own noise, the A/A trials' differences spread by τ = {_spreads(calibration)} "
                 f"(around no difference, so a steady twin bias counts in{_dl_words(calibration)}). Each interval: "
                 "estimate ± t·√(se² + τ²), t with Satterthwaite's degrees of freedom (few A/A trials: wide).")
        if min((c.k for c in calibration.figures.values() if c.k), default=0) == 1:
            text += (" One A/A trial gives a very uncertain τ (used rather than none): repeat the A/A "
                     "(./start.sh --aa --repeat 3).")
        text += " The within-run intervals alone: verdict.json `ci_within`."
    elif kind != "aa" and not calibration.trials:
        text += (" A single run's interval does not include how much the twins differ from one run to the next "
                 "(report/README.md, Uncertainty).")
    if calibration.lookup.unused:
        text += " A/A runs here that do not calibrate this one: " + "; ".join(
            f"{name} ({why})" for name, why in calibration.lookup.unused.items()) + "."
    return text


def verdict_sentence(run: RunInfo, machines: dict[str, Machine], analysis: Analysis | None) -> str:
    d = design(run)
    parts = []
    if analysis is not None:
        tps = analysis.effects["tps"]
        if d["kind"] == "aa":
            config = d["configurations"]["default"]
            if tps.has_interval:
                same = not tps.detectable
                parts.append(f"A/A (both machines ran the {config} configuration): "
                             + ("the twins are interchangeable at this run's resolution: "
                                if same else "the twins are NOT interchangeable: ")
                             + f"machine tuned {pct(tps.estimate)} successful TPS vs machine default "
                             f"({effect_text(tps, with_estimate=False)})")
            else:
                parts.append(f"A/A (both machines ran the {config} configuration): {effect_text(tps)}")
        else:
            parts.append(_tps_words(tps, "tuned"))
    for m in machines.values():
        if m.samples is None:
            parts.append(f"{m.name} has no load results (jmeter.jtl missing or unreadable)")
        elif m.stop is not None:
            parts.append(stop_phrase(m))
    d_tps, t_tps = machines["default"].load.tps, machines["tuned"].load.tps
    if analysis is None and not any(map(math.isnan, (d_tps, t_tps))) and d_tps > 0:
        parts.insert(0, f"tuned served {t_tps / d_tps:.2f}× the successful TPS of default ({t_tps:,.1f} vs "
                        f"{d_tps:,.1f} req/s) — one observation without an interval: the machines' measured "
                        "windows do not overlap, so nothing pairs")
    steady = steady_words(machines)
    if steady:
        parts.append(steady)
    return "; ".join(parts) + "." if parts else "No load results in this run folder."


def json_number(x: Any) -> Any:
    """A figure as verdict.json holds it: None for a missing (None or NaN) one."""
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else x


def verdict_record(run: RunInfo, machines: dict[str, Machine], analysis: Analysis | None, sentence: str,
                   calibration: Calibration) -> dict[str, Any]:
    """verdict.json: the design, the paired window, each effect with its interval (and the within-run one), what the
    intervals include and the A/A calibration behind them, steady states."""
    kind, num = design(run)["kind"], json_number
    record = {"run_id": run.run_id, "status": run.status, "design": design(run), "verdict": sentence,
              "interval": interval_basis(calibration, kind), "calibration": calibration_record(calibration),
              "effects": {}, "steady": {}, "stopped": {}}
    if analysis is not None:
        record["method"] = {"window_s": WINDOW_S, "windows": analysis.paired.n, "start": analysis.paired.start,
                            # what the report cut from each machine's first sample (--warmup, auto or run.json's)
                            "warmup_s": json_number(max(m.window.warmup_s for m in machines.values())),
                            "block_windows": dict(analysis.blocks),
                            "level_block_windows": dict(analysis.level_blocks), "resamples": analysis.resamples,
                            "seed": analysis.seed, "df": {f: analysis.df(f) for f in FIGURES}}
        for figure in FIGURES:
            e = analysis.effects[figure]
            record["effects"][figure] = {
                "kind": e.kind, "default": num(e.default), "tuned": num(e.tuned), "estimate": num(e.estimate),
                "low": num(e.low) if e.has_interval else None, "high": num(e.high) if e.has_interval else None,
                "detectable": e.detectable, "why_not": e.why_not or None, "df": num(e.df) if e.has_interval else None,
                "ci_within": dict(zip(("low", "high"), map(num, e.within), strict=True)) if e.has_interval else None,
                "intervals": e.intervals if e.has_interval else None, "min_detectable": num(e.min_detectable),
                "tuned_ci": level_interval(e)}
    for m in machines.values():
        if m.steady is not None:
            cpu = json_number(compiling_cpu(m))
            record["steady"][m.name] = {"settled": m.steady.settled, "start_s": json_number(m.steady.start_s),
                                        "drift": json_number(m.steady.drift), "why": m.steady.why or None,
                                        "compiling_cpu": cpu,
                                        "still_compiling": None if cpu is None else cpu >= STILL_COMPILING_CPU,
                                        "jit_quiet_s": json_number(m.steady.quiet_s),
                                        "jit_never_quiet": m.steady.compiling}
        record["stopped"][m.name] = None if m.stop is None else m.stop.at - m.t0
    return record


def level_interval(e) -> dict[str, float] | None:
    """The tuned configuration's own level's interval (what a level gate judges), or None without one."""
    if math.isnan(e.tuned_low) or math.isnan(e.tuned_high):
        return None
    return {"low": e.tuned_low, "high": e.tuned_high}


def verdict_json(record: dict[str, Any]) -> str:
    """A verdict.json's text, of the contract's current format (runfolder); numpy scalars (bool_, float64) as plain
    JSON values."""
    return json.dumps(runfolder.stamped("verdict.json", record), indent=2, ensure_ascii=False,
                      default=lambda o: o.item()) + "\n"
