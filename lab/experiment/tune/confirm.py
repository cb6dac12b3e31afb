"""The answer, proven: the tune's finalist run again by `--repeat 4` (a crossover with two trials in each
orientation: the machines' bias cancels, and the series has its own between-trial variance, pooled with the A/A runs
of its load where there are some: report/stats/combine.py) against the control and against the lab's hand-made
`tuned` set, each an ordinary series folder with its combined report; then written as a knob set
(ansible/knob_sets/<name>.yml), each value commented with its evidence, ready for `--knob-set`.

Each confirmation is sequential (sequential.py): after its first block of 4 trials it goes on by further blocks, all
its trials combined again in a folder of their own, while its interval at the look's level is not decisive against
1 ± the floor, the budget has room for a block and LOOKS blocks have not run. The answer is "confirmed" only where
the look against the control says a gain beyond the floor, as the search asked, with both machines at steady state in
every trial (proven()).

The finalist is the best candidate whose gain counts (search.Tuner.best); when none clears the floor, the one with
the highest combined ratio among the feasible (settled ones that beat the control first), confirmed the same way and
said to be uncounted: its confirmation alone can prove it.
"""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from lab.experiment import design
from lab.experiment.tune import evidence, search, sequential, trials
from lab.provision import catalog, knob_sets
from lab.provision.configuration import Configuration, same
from runfolder import verdict as runfolder_verdict

REPEAT = 4                          # the crossover: each machine runs each side twice (issue 54: ≥ 2 a side)
TUNED = "tuned"                     # the lab's hand-made set, the second confirmation's control
NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,39}")
SERIES_S = 60                       # the combined report of a series
STEM = 36                           # a confirmation's label before "-l3", "-looks3", "-series", "-t4"


def against(control: str) -> list[str]:
    """The controls a finalist is confirmed against: the tune's own, then the lab's tuned set."""
    return [control] + ([TUNED] if control != TUNED else [])


def itself(values: dict, control: str, service, base: str = knob_sets.DEFAULT) -> dict[str, str]:
    """{control: why it is left out}: the lab's tuned set where the finalist is its configuration on this service,
    knob for knob (a tune --base tuned whose finalist is the known set tuned itself: its confirmation against tuned
    would be four runs of an A/A, which say nothing of the finalist). Not where only the searched knobs agree: the
    known set tuned from the catalog keeps the catalog's other knobs (on petclinic-rest 11 of them differ from the
    tuned set's). The tune's own control is never left out: the answer is proven against it."""
    mine = trials.candidate(values, control, service, base=base).knobs(service)
    out = {}
    for name in against(control)[1:]:
        theirs = Configuration(name).knobs(service)
        if mine.keys() == theirs.keys() and all(same(mine[k], theirs[k]) for k in mine):
            out[name] = f"the finalist is the {name} set's configuration on this service: not run against itself"
    return out


def block_s(trial_s: int) -> int:
    """One look's cost: a block of REPEAT runs (trial_s: one run at the longest hold) and its combined report."""
    return REPEAT * trial_s + SERIES_S


def reserve_s(control: str, trial_s: int) -> int:
    """The budget kept for the confirmations: the first look against each control (later looks run only while the
    budget still holds a block: confirm())."""
    return len(against(control)) * block_s(trial_s)


def shown_worse(c: evidence.Candidate) -> bool:
    """Its combined interval lies wholly below the control's 1: nothing a confirmation could prove (the petclinic tune
    of 20261202T053312Z went on to confirm the known tuned set at 0.33x, 95 % CI 0.27 ... 0.39, C1 only at steady
    state; a confirmation costs a block of runs per control)."""
    combined = c.combined()
    return combined is not None and combined[2] < 1


def nothing_to_confirm(tuner: search.Tuner, control: str) -> str:
    """Why a tune has no finalist."""
    worse = [c for c in tuner.candidates() if c.feasible and shown_worse(c)]
    top = max(worse, key=lambda c: c.combined()[0], default=None)
    if top is None:
        return "no candidate ran within its constraints: nothing to confirm"
    ratio, low, high = top.combined()
    return (f"every candidate that ran within its constraints was shown worse than the {control} set (the best, trial "
            f"{top.number}: {ratio:.2f}x, 95 % CI {low:.2f} ... {high:.2f}): nothing to confirm, the {control} set "
            "stays the answer")


def finalist(tuner: search.Tuner) -> tuple[evidence.Candidate | None, bool]:
    """(the candidate to confirm, whether its gain counted in the search); (None, False) when none ran feasibly, or
    every one that did was shown worse than the control."""
    candidates = tuner.candidates()         # read once: best() and the checks below would each read the study
    best = tuner.best(candidates)
    if best is not None:
        # a candidate the budget left one run (its replicate never fitted) whose lower bound, with a run's own draw,
        # lies above the counted best's upper bound: the better bet; its confirmation is its proof (the stand-in's
        # seed 2 confirmed a 1.23× counted over a 1.38× (1.32 … 1.44) run last, truly the optimum)
        high = best.combined()[2]
        ahead = [c for c in candidates if c.feasible and c.settled and c.combined() is not None
                 and c.combined()[1] > high]
        if ahead:
            return max(ahead, key=lambda c: c.combined()[1]), False
        return best, True
    ran = [c for c in candidates if c.feasible and c.combined() is not None and not shown_worse(c)]
    # a settled candidate no better than the control is not worth a proof before an unsettled one that ran ahead
    # (the petclinic tune of 20261201T053203Z confirmed article-2018's 0.96, settled, over tuned's 1.97, whose
    # control was still compiling at 2 minutes)
    return max(ran, key=lambda c: (c.settled and c.combined()[0] > 1, c.combined()[0]), default=None), False


def _effect(verdict: runfolder_verdict.Verdict | None, name: str) -> dict | None:
    e = verdict.effects.get(name) if verdict else None
    return {k: e.get(k) for k in ("estimate", "low", "high")} if isinstance(e, dict) and e else None


def read(combined: Path, looks: list[str], control: str, code: int, floor: float, objective: str = "tps",
         planned: int = sequential.LOOKS) -> dict:
    """One confirmation as tune.json keeps it: its blocks' series (looks), the folder combining all their trials,
    its combined verdict (successful TPS and p99 ratios at 95 %), the objective's ratio (higher better: p99 turned,
    trials.objective_of) at the look's level (planned: the looks its spending was planned for) and what it decides
    (sequential.decision)."""
    verdict = runfolder_verdict.read(combined)
    look = len(looks)
    confidence = sequential.level(look, planned)
    effects = verdict.effects if verdict else {}
    turned = dict(zip(("estimate", "low", "high"), trials.objective_of(effects, objective), strict=True))
    at = sequential.relevelled({**turned, "df": (effects.get(objective) or {}).get("df")}, confidence)
    return {"against": control, "series": looks[0], "looks": looks, "combined": combined.name, "look": look,
            "exit": code, "tps": _effect(verdict, "tps"), "p99": _effect(verdict, "p99"), "objective": objective,
            "level": confidence, "at_look": dict(zip(("low", "high"), at, strict=True)) if at else None,
            "decision": sequential.decision(at, floor), "settled": _settled(combined, verdict), "planned": planned,
            "verdict": (verdict.sentence if verdict else None) or f"no combined verdict (exit {code})"}


def _settled(combined: Path, verdict: runfolder_verdict.Verdict | None) -> dict | None:
    """How many of the combined trials had both machines at steady state (trials.steady_state; a trial whose
    verdict judged none is counted in neither); None without the trials' names."""
    names = verdict.written.get("trials") if verdict else None
    if not isinstance(names, list) or not names:
        return None
    states, compiling = [], 0
    for name in names:
        trial = runfolder_verdict.read(combined.parent / str(name))
        states.append(trials.steady_state(trial)[0] if trial else None)
        compiling += bool(trial and trials.still_compiling(trial))
    return {"trials": len(states), "settled": states.count(True), "unsettled": states.count(False),
            **({"compiling": compiling} if compiling else {})}


def decided(c: dict, floor: float) -> str:
    """What a confirmation says (sequential.SAID): its look's decision, or, for one block written before the looks
    (tune.json format 4), what its 95 % interval said then."""
    if "decision" in c:
        return c["decision"]
    tps = c.get("tps") or {}
    return sequential.decision((tps["low"], tps["high"]) if tps.get("low") and tps.get("high") else None, floor)


def finished(c: dict, floor: float) -> bool:
    """No further look: decided, its planned looks run (LOOKS before they were planned), or its last block failed."""
    return (decided(c, floor) in sequential.DECIDED or c.get("look", 1) >= c.get("planned", sequential.LOOKS)
            or c.get("exit") != 0)


def planned_looks(left_s: float, block_s: float, controls: int) -> int:
    """The looks a confirmation's spending is planned for, fixed before its first look: as many blocks as the budget
    holds for each control, 1 to LOOKS. Planned for three where the budget held one, the only look was judged at
    99.26 % (t = 6.49 at Hartung–Knapp's 3 df): on the honest stand-in a finalist at the optimum (+30 %) with a 95 %
    lower bound of +13.6 % went unconfirmed (results/20261207T111546Z-bench-tuner-honest-before, seed 1)."""
    if block_s <= 0 or left_s == float("inf"):
        return sequential.LOOKS
    return max(1, min(sequential.LOOKS, int(left_s // (block_s * max(1, controls)))))


def under_way(data: dict, final: evidence.Candidate | None, control: str) -> bool:
    """tune.json's finalist is this one and its confirmations have begun but not all ended: a resumed tune finishes
    them instead of searching on (the search ended when they began)."""
    kept = data.get("confirmations") or []
    controls = data.get("confirm_against") or against(control)
    return (bool(kept) and final is not None and (data.get("finalist") or {}).get("number") == final.number
            and (len(kept) < len(controls) or not all(finished(c, data["floor"]) for c in kept)))


def confirm(opts, s, lab, values: dict, hold_s: int, control: str, label: str, done: list[dict],
            on_done=lambda confirmations: None, base: str = knob_sets.DEFAULT, floor: float = 0.05,
            left=lambda: float("inf"), block: float = 0.0, objective: str = "tps",
            controls: list[str] | None = None, race=None) -> list[dict]:
    """The confirmations still to run (done: those a resumed tune has), each look kept as soon as it ends: first
    look 1 against every control (controls: against(control) less what itself() leaves out), the control's first (the
    proof), each after it only where the budget still holds its block, then one more look against each undecided control
    in turn while left() (the budget's seconds) holds a block, so that a later look never takes another control's
    first. Ctrl-C during a block keeps the confirmation as it was before that block (the block runs again on
    --resume). race: its runs' (race.measuring: each ends once its own error is far below τ or the floor), None:
    whole holds."""
    out = {c["against"]: c for c in done}
    controls = controls if controls is not None else against(control)
    # the looks of a confirmation begun here, planned before its first: the blocks the budget holds for each control
    planned_here = planned_looks(left(), block, len([n for n in controls if n not in out]))

    def look_at(name: str) -> None:
        c = out.get(name)
        stem = f"{label[:max(1, STEM - len(name) - 4)]}-vs-{name}"     # the control's name kept whole
        look = 1 if c is None else c.get("look", 1) + 1
        o = dataclasses.replace(trials.options(opts, values, hold_s, stem if look == 1 else f"{stem}-l{look}", name,
                                               repeat=REPEAT, base=base), race=race)
        planned = planned_here if c is None else c.get("planned", sequential.LOOKS)
        code, series_dir = lab.run_series(o, s)
        if code == 130:
            raise KeyboardInterrupt
        looks = ([] if c is None else c.get("looks") or [c["series"]]) + [series_dir.name]
        combined = series_dir if look == 1 else lab.combine(f"{stem}-looks{look}",
                                                            [series_dir.parent / x for x in looks])
        out[name] = read(combined, looks, name, code, floor, objective, planned)
        on_done([out[n] for n in controls if n in out])
    for name in controls:   # the control's first (the proof: its caller saw a block fit), the others' where one does
        if name not in out and left() > 0 and (name == controls[0] or left() >= block):
            look_at(name)
    while True:
        open_ = [n for n in controls if n in out and not finished(out[n], floor)]
        if not open_ or left() < block:
            break
        for name in open_:
            if left() >= block:
                look_at(name)
    return [out[n] for n in controls if n in out]


def default_name(tune_id: str) -> str:
    """tune-<date>-<hhmm> of the tune's folder (20261128T093000Z-tune → tune-20261128-0930)."""
    return f"tune-{tune_id[:8]}-{tune_id[9:13]}"


def check_name(name: str, tune_id: str) -> Path:
    """The knob set's file; ValueError when the name is not one or the file is another tune's or the lab's
    (tune_id "": a new tune, which no file may have yet)."""
    if not NAME_RE.fullmatch(name) or name == knob_sets.DEFAULT:
        raise ValueError(f"--name {name!r}: 1–40 lower-case letters, digits, '.', '_' or '-', not 'default'")
    file = knob_sets.DIR / f"{name}.yml"
    if file.exists() and (not tune_id or f"tune {tune_id}" not in file.read_text()):
        raise ValueError(f"--name {name}: ansible/knob_sets/{file.name} exists and is not this tune's: choose "
                         "another name")
    return file


def _num(x: float | None) -> str:
    return "?" if x is None else f"{x:.3f}"


def gained(c: dict, floor: float) -> bool:
    """A confirmation that shows a gain beyond the floor."""
    return decided(c, floor) == sequential.GAIN


def proven(c: dict | None, floor: float) -> bool:
    """The answer is a confirmed gain: its confirmation against the control (c) shows a gain beyond the floor with no
    trial still warming up, whether or not its gain counted in the search: the confirmation's own trials, fresh and
    judged at its looks' spent levels, are the proof (a finalist the search could not count yet was never called
    confirmed, however decisive its confirmation). A control still compiling through the window measures
    warm-up, which the search does not count either (the petclinic tune of 20261201T072331Z: default's JIT at 1.1
    CPUs through a 6-minute hold); so does one whose throughput settled while its JIT still compiled through the
    window (20261202T022034Z-s74-petclinic-tune-confir-vs-default: settled in 2 minutes, compiling at 1.1 CPUs)."""
    settled = (c or {}).get("settled") or {}
    return bool(c and gained(c, floor) and not settled.get("unsettled") and not settled.get("compiling"))


def _evidence(c: dict) -> str:
    tps, at = c.get("tps") or {}, c.get("at_look") or {}
    said = (f"; at look {c['look']}'s level {100 * c['level']:.2f} %, {c.get('objective', 'tps')} turned so that "
            f"higher is better: {_num(at.get('low'))} … {_num(at.get('high'))}, {sequential.SAID[c['decision']]}"
            if "decision" in c else "")
    settled = c.get("settled") or {}
    steady = (f"; both machines settled in {settled['settled']} of {settled['trials']} trials"
              + (f", a JIT still compiling through {settled['compiling']}" if settled.get("compiling") else "")
              if settled.get("trials") else "")
    return (f"vs {c['against']}: {_num(tps.get('estimate'))}× successful TPS (95 % CI {_num(tps.get('low'))} … "
            f"{_num(tps.get('high'))}{said}{steady}), {c.get('combined') or c['series']}")


def write_knob_set(name: str, data: dict) -> Path:
    """ansible/knob_sets/<name>.yml from tune.json's finalist and confirmations, each value commented with its
    evidence (the candidate's runs and their combined ratio, the confirmations, the knob's importance in the study).
    A tune from another base set writes `base:` first: the answer is that set and these values."""
    final, tune_id = data["finalist"], data["tune_id"]
    file = check_name(name, tune_id)
    base = data.get("base") or knob_sets.DEFAULT
    out_of_the_box = {**catalog.defaults(), **({} if base == knob_sets.DEFAULT else knob_sets.values(base))}
    confirmed = [c for c in data.get("confirmations") or [] if c.get("tps")]
    control = next((c for c in confirmed if c["against"] == data.get("control", knob_sets.DEFAULT)), None)
    confirmed_gain = proven(control, data["floor"])
    lines = [f"# Found by tune {tune_id} (./start.sh tune): trial {final['number']} of its study, "
             + ("its gain confirmed" if confirmed_gain else "NOT a confirmed gain: read the evidence below"),
             f"# load: {data['load'].get('users')} users per machine, ramp-up {data['load'].get('ramp_up_s')} s, "
             f"hold {data['holds_s'][-1]} s; floor {data['floor']:.0%}",
             f"# search: {_num(final.get('ratio'))}× the control (95 % CI {_num(final.get('low'))} … "
             f"{_num(final.get('high'))}) over {len(final.get('runs') or [])} runs, trials "
             + ", ".join(str(n) for n in final.get("runs") or [])]
    lines += [f"# confirmed by {c.get('look', 1)} look(s) of --repeat {REPEAT} (crossover) {_evidence(c)}"
              for c in confirmed]
    lines += [f"# not confirmed against {name}: {why}" for name, why in (data.get("itself") or {}).items()]
    lines += [f"# Every other knob is the {base} set's" + (" (ansible/knobs.yml)." if base == knob_sets.DEFAULT else
                                                            f" (ansible/knob_sets/{base}.yml)."), "---"]
    if base != knob_sets.DEFAULT:
        lines.append(f"base: {base}")
    importance = data.get("importance") or {}
    for knob, value in final["values"].items():
        said = [f"importance {importance[knob]:.2f}" if knob in importance else "importance not estimated"]
        if design.same(out_of_the_box.get(knob), value):
            said.append("the base set's own value")
        lines.append(f"{knob}: {json.dumps(value)}        # {'; '.join(said)}")
    tmp = file.with_suffix(".yml.tmp")
    tmp.write_text("\n".join(lines) + "\n")
    tmp.replace(file)
    return file
