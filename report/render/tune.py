"""tune.md and its chart: a tune's report from its tune.json (report/read/tune.py): the answer (the finalist, its
confirmations, its knob set), what the search says matters (each knob's importance), every candidate (its runs
combined, whether its gain counts), every run (values, ratio with its interval, its machines' orientation, where
its steady window began, constraints, run link) and the best-so-far against time. A tune.json of format 2 (the
tuner of successive halving) is shown as it was written: its trials' holds, no candidates."""
from __future__ import annotations

import io
from datetime import datetime
from typing import Any

from report.fmt import typed
from report.render.html import Figure
from report.render.verdict import pct

WHY_CHARS = 160             # of a constraint broken or a refusal, in the trials table


def _ratio(estimate: float | None, low: float | None, high: float | None) -> str:
    if estimate is None:
        return "—"
    return pct(estimate) if low is None or high is None else f"{pct(estimate)} ({pct(low)} … {pct(high)})"


def _counts(row: dict[str, Any], floor: float) -> bool:
    """A format-2 trial's gain counted (a format-3 run's counts only with its candidate: `counts` there)."""
    o = row["outcome"]
    return not o.get("violations") and o.get("low") is not None and o["low"] > 1 + floor


def _candidate_counts(data: dict[str, Any]) -> dict[int, bool]:
    """run number → whether its candidate's gain counts (format 3)."""
    return {n: bool(c.get("counts")) for c in data.get("candidates") or [] for n in c.get("runs") or []}


def _link(run: str | None, page: str = "report.html") -> str:
    return f"[{run}](../{run}/{page})" if run else "—"


def _objective(data: dict[str, Any]) -> str:
    return ("p99 latency, control ÷ candidate (higher is better)" if data.get("objective") == "p99" else
            "successful TPS, candidate ÷ control")


def _header(data: dict[str, Any]) -> list[str]:
    load = data.get("load") or {}
    results = data["results"]
    spent = data.get("spent_s")
    if "candidates" in data:        # format 3: one hold, replicates
        runs = [r for r in results if r["state"] != "refused"]
        said = (f"{len(data['candidates'])} candidates in {len(runs)} runs "
                f"({sum(1 for r in runs if r.get('replicate_of') is not None)} of them a leader run again with the "
                f"machines' roles swapped), {sum(r['state'] == 'refused' for r in results)} refused by the knob rules "
                "before any run")
        past = sum(bool(r.get("past")) for r in runs)
        if past:
            said += f"; {past} of the runs are past runs of the same question found in results/ (a warm start)"
        holds = f"**hold:** {data['holds_s'][-1]:g} s, judged from where both machines settled"
        start = (f"from the {data.get('base') or 'default'} set"
                 + (f", the known sets {', '.join(data.get('known') or [])} first" if data.get("known") else ""))
        counts = (f"a gain counts when the candidate ran in both orientations at steady state and its combined "
                  f"interval (with a between-run spread of {data.get('between', 0):.0%} where A/A runs do not "
                  f"calibrate it) clears the floor ({data['floor']:.0%}): lower bound above {1 + data['floor']:.2f}×")
    else:
        states = {s: sum(r["state"] == s for r in results) for s in ("complete", "pruned", "refused")}
        said = (f"{len(results)} candidates: {states['complete']} run to their last hold, {states['pruned']} stopped "
                f"at a shorter one (successive halving), {states['refused']} refused by the knob rules before any run")
        holds = "**holds:** " + ", ".join(f"{h:g} s" for h in data["holds_s"])
        start = "from the catalog"
        counts = (f"a gain counts when its whole interval clears the noise floor ({data['floor']:.0%}): lower bound "
                  f"above {1 + data['floor']:.2f}×")
    return [f"# Tune {data['tune_id']}", "",
            f"- **Status:** {data['status']}; {said}",
            f"- **Service:** {data.get('service') or 'sample'}; **load:** {load.get('model', '?')} model, "
            f"{load.get('users', '?')} users per machine, ramp-up {load.get('ramp_up_s', '?')} s; {holds}",
            f"- **Candidates** {start}, **against** the {data.get('control') or 'default'} set, on the twins at "
            f"once, each run an ordinary A/B run; **objective:** {_objective(data)}; **constraints:** "
            + (", ".join(f"`{c}`" for c in data.get("constraints") or ["errors<=0.1%"])) + f"; {counts}",
            f"- **Budget:** {(data.get('budget_s') or 0) / 3600:.2f} h"
            + (f", spent {spent / 3600:.2f} h" if spent is not None else "")
            + f" (started {data.get('started', '?')}, ended {data.get('ended') or '—'})", ""]


def _answer(data: dict[str, Any]) -> list[str]:
    final = data.get("finalist")
    lines = ["## The answer", ""]
    if not final:
        best = data.get("best")
        said = "No finalist yet: the search has not ended" if data["status"] != "complete" else "No finalist"
        none = (f"{data['no_finalist'][0].upper()}{data['no_finalist'][1:]}." if data.get("no_finalist") else
                "No candidate ran within its constraints." if "candidates" in data else
                "No candidate ran whole at the longest hold within its constraints.")
        return lines + [f"{said}. " + (f"Best that counts so far: trial {best['number']}." if best else none), ""]
    if "outcome" in final:          # format 2: the finalist's run at the longest hold
        o = final["outcome"]
        ratio, where = (_ratio(o.get("ratio"), o.get("low"), o.get("high")),
                        f"at a {final['hold_s']:g} s hold ({_link(o.get('run'))})")
    else:
        ratio = _ratio(final.get("ratio"), final.get("low"), final.get("high"))
        where = f"over {len(final.get('runs') or [])} runs (trials {', '.join(map(str, final.get('runs') or []))})"
    lines += [f"Trial {final['number']}" + (f" (the known set {final['known']})" if final.get("known") else "")
              + ", " + ("its gain counted in the search" if final.get("counted") else
                        f"**no candidate's gain cleared the {'noise floor' if 'outcome' in final else 'floor'}**: the "
                        "top feasible one, proven by its confirmation alone")
              + f": {ratio} ({_objective(data)}) {where}.", "",
              "| knob | value |", "| --- | --- |"]
    lines += [f"| {k} | {typed(v)} |" for k, v in final["values"].items()]
    confirmations = data.get("confirmations") or []
    if confirmations:
        repeat = 2 if "outcome" in final else 4
        looked = any("look" in c for c in confirmations)
        lines += ["", f"Confirmed by `--repeat {repeat}` (crossover: the machines swap roles on every second trial)"
                  + (", block after block while undecided (a look after each, all its trials combined; each look's "
                     "interval of the objective, higher better, at its own level so that all looks together keep "
                     "95 %: lab/experiment/tune/sequential.py):" if looked else ":"), "",
                  "| against | successful TPS (95 % CI) | at the last look's level | decides | p99 (95 % CI) | "
                  "combined | blocks | verdict |", "| --- | --- | --- | --- | --- | --- | --- | --- |"]
        for c in confirmations:
            tps, p99, at = c.get("tps") or {}, c.get("p99") or {}, c.get("at_look") or {}
            looked = ("–" if "look" not in c else f"look {c['look']} ({100 * c['level']:.2f} %): "
                      + (f"{pct(at['low'])} … {pct(at['high'])}" if at else "no interval to re-level"))
            lines.append(f"| {c['against']} | {_ratio(tps.get('estimate'), tps.get('low'), tps.get('high'))} | "
                         f"{looked} | {c.get('decision') or '–'}{_steady(c)} | "
                         f"{_ratio(p99.get('estimate'), p99.get('low'), p99.get('high'))} | "
                         f"{_link(c.get('combined') or c['series'])} | {_blocks(c)} | "
                         f"{c.get('verdict', '').replace('|', '/')} |")
    lines += [f"Not confirmed against {name}: {why}." for name, why in (data.get("itself") or {}).items()]
    if data.get("knob_set"):
        lines += ["", f"Written as the knob set `{data['knob_set']}`, each value commented with its evidence: "
                  f"`./start.sh --knob-set tuned={data.get('name')}`."]
    return lines + [""]


def _blocks(c: dict[str, Any]) -> str:
    """A confirmation's blocks: each linked where there were several (the combined folder is linked beside), "one"
    where the one block is that folder."""
    blocks = c.get("looks") or [c["series"]]
    return ", ".join(_link(x) for x in blocks) if len(blocks) > 1 else "one"


def _steady(c: dict[str, Any]) -> str:
    """How many of a confirmation's trials had both machines at steady state (tune.json format 6)."""
    settled = c.get("settled") or {}
    if not settled.get("trials"):
        return ""
    why = ", ".join(w for w in (f"**{settled['unsettled']} still warming up**" if settled.get("unsettled") else "",
                                f"**a JIT still compiling through {settled['compiling']}**"
                                if settled.get("compiling") else "") if w)
    return f"; settled in {settled['settled']} of {settled['trials']} trials" + (f" ({why})" if why else "")


def _importance(data: dict[str, Any]) -> list[str]:
    found = data.get("importance") or {}
    if not found:
        return ["## What matters", "", "Not estimated: too few trials, or every knob explained the same.", ""]
    lines = ["## What matters", "", "Each knob's share of what explains the outcome across the trials "
             "(optuna's default importance evaluator, fANOVA):", "", "| knob | importance |", "| --- | ---: |"]
    lines += [f"| {k} | {v:.2f} |" for k, v in sorted(found.items(), key=lambda kv: -kv[1])]
    return lines + [""]


def _candidates(data: dict[str, Any]) -> list[str]:
    if "candidates" not in data:
        return []
    lines = ["## Candidates", "", "Each candidate's runs combined (the log ratios weighted by the inverse of their "
             "variance):", "",
             "| # | known set | its runs (#) | orientations | settled | objective (95 % CI) | counts |",
             "| ---: | --- | --- | ---: | --- | --- | --- |"]
    for c in data["candidates"]:
        lines.append(f"| {c['number']} | {c.get('known') or '—'} | {', '.join(map(str, c.get('runs') or []))} | "
                     f"{c.get('orientations', '?')} | {'yes' if c.get('settled') else 'no'} | "
                     f"{_ratio(c.get('ratio'), c.get('low'), c.get('high'))} | {'yes' if c.get('counts') else 'no'} |")
    return lines + [""]


def _trials(data: dict[str, Any]) -> list[str]:
    knobs = [p.get("knob") for p in data["space"]]
    v3 = "candidates" in data
    counting = _candidate_counts(data)
    lines = ["## Runs" if v3 else "## Trials", "", f"Objective: {_objective(data)}.", "",
             "| # | state | " + ("of | machines | steady from | " if v3 else "hold | ") + " | ".join(knobs)
             + " | objective (95 % CI) | counts | constraints, or why it did not run | run |",
             "| ---: | --- | " + ("--- | --- | ---: | " if v3 else "---: | ") + " | ".join("---" for _ in knobs)
             + " | --- | --- | --- | --- |"]
    for r in data["results"]:
        o = r["outcome"]
        why = " ".join("; ".join(o.get("violations") or []).replace("|", "/").split())    # one table line
        if len(why) > WHY_CHARS:        # a refusal's whole reasoning (the memory estimate's) stays in tune.json
            why = why[:WHY_CHARS].rsplit(" ", 1)[0] + " … (whole in tune.json)"
        if v3:
            of = (f"replicate of {r['replicate_of']}" if r.get("replicate_of") is not None else
                  f"known {r['known']}" if r.get("known") else "a past run" if r.get("past") else "proposed")
            steady = ("—" if r["state"] == "refused" else "not settled" if o.get("settled") is False else
                      f"+{o['steady_from_s']:g} s" if o.get("steady_from_s") is not None else "?")
            machines = "—" if r["state"] == "refused" else "swapped" if o.get("swapped") else "as named"
            middle = f"{of} | {machines} | {steady} | "
            counts = counting.get(r["number"], False)
        else:
            middle = (f"{r['hold_s']:g} s" if r["state"] != "refused" else "—") + " | "
            counts = _counts(r, data["floor"])
        lines.append(f"| {r['number']} | {r['state']} | {middle}"
                     + " | ".join(typed(r["values"].get(k)) for k in knobs)
                     + f" | {_ratio(o.get('ratio'), o.get('low'), o.get('high'))} | "
                     f"{'yes' if counts else 'no'} | {why or '—'} | {_link(o.get('run'))} |")
    return lines + [""]


def render(data: dict[str, Any]) -> str:
    return "\n".join(_header(data) + _answer(data) + _importance(data) + _candidates(data) + _trials(data))


def _hours(stamp: str, start: str) -> float:
    t = datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    return (t - datetime.fromisoformat(start.replace("Z", "+00:00"))).total_seconds() / 3600


def chart(data: dict[str, Any]) -> tuple[Figure, bytes] | None:
    """Every run trial's ratio against the time it ended, and the best that counts so far as a step."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    start = data.get("started")
    ran = [r for r in data["results"] if r["state"] != "refused" and r.get("ended") and r["outcome"].get("ratio")]
    if not start or not ran:
        return None
    fig, ax = plt.subplots(figsize=(10, 4.2))
    for r in ran:
        o, x = r["outcome"], _hours(r["ended"], start)
        ok = not o.get("violations")
        if o.get("low") is not None:
            ax.errorbar([x], [o["ratio"]], yerr=[[o["ratio"] - o["low"]], [o["high"] - o["ratio"]]], capsize=3,
                        fmt="o" if ok else "x", color="tab:blue" if ok else "tab:red", alpha=0.8)
        ax.annotate(str(r["number"]), (x, o["ratio"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    xs, ys, best = [], [], None
    combined = {n: c for c in data.get("candidates") or [] for n in c.get("runs") or []}
    for r in sorted(ran, key=lambda r: r["ended"]):
        if "candidates" in data:        # a candidate counts from its last run on, at its combined ratio
            c = combined.get(r["number"])
            if c and c.get("counts") and r["number"] == max(c["runs"]):
                best = max(best or 0.0, c["ratio"])
        elif _counts(r, data["floor"]) and r["hold_s"] == data["holds_s"][-1] and r["state"] == "complete":
            best = max(best or 0.0, r["outcome"]["ratio"])
        if best is not None:
            xs.append(_hours(r["ended"], start))
            ys.append(best)
    if xs:
        ax.step(xs, ys, where="post", color="tab:green", label="best that counts so far")
    ax.axhline(1.0, color="grey", lw=0.8, ls="--")
    ax.axhline(1 + data["floor"], color="tab:orange", lw=0.8, ls=":", label="noise floor")
    ax.set_xlabel("hours since the tune began")
    ax.set_ylabel("p99, control / candidate" if data.get("objective") == "p99" else
                  "successful TPS, candidate / control")
    ax.legend(loc="lower right")
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    about = ("Each run candidate at the time its trial ended, with its 95 % interval (numbers: the trials table; "
             "red ×: broke a constraint). Green: the best candidate whose gain counts (its runs combined). Orange: "
             "where the noise floor puts a gain that counts (its lower bound must clear it).")
    return Figure("tune", "Best so far against time", about), buf.getvalue()
