"""The answer, proven: the tune's finalist run again by `--repeat 4` (a crossover with two trials in each
orientation: the machines' bias cancels, and the series has its own between-trial variance, pooled with the A/A runs
of its load where there are some: report/stats/combine.py) against the control and against the lab's hand-made
`tuned` set, each an ordinary series folder with its combined report; then written as a knob set
(ansible/knob_sets/<name>.yml), each value commented with its evidence, ready for `--knob-set`. The answer is
"confirmed" only where the series against the control clears 1 + the floor, as the search asked.

The finalist is the best candidate whose gain counts (search.Tuner.best); when none clears the floor, the one with
the highest combined ratio among the feasible (settled ones first), confirmed the same way and said to be unproven.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

from lab.experiment import design
from lab.experiment.tune import search, trials
from lab.provision import catalog, knob_sets
from runfolder import verdict as runfolder_verdict

REPEAT = 4                          # the crossover: each machine runs each side twice (issue 54: ≥ 2 a side)
TUNED = "tuned"                     # the lab's hand-made set, the second confirmation's control
NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]{0,39}")
SERIES_S = 60                       # the combined report of a series


def against(control: str) -> list[str]:
    """The controls a finalist is confirmed against: the tune's own, then the lab's tuned set."""
    return [control] + ([TUNED] if control != TUNED else [])


def reserve_s(control: str, trial_s: int) -> int:
    """The budget kept for the confirmations (trial_s: one run at the longest hold)."""
    return len(against(control)) * (REPEAT * trial_s + SERIES_S)


def finalist(tuner: search.Tuner) -> tuple[search.Candidate | None, bool]:
    """(the candidate to confirm, whether its gain counted in the search); (None, False) when none ran feasibly."""
    best = tuner.best()
    if best is not None:
        return best, True
    ran = [c for c in tuner.candidates() if c.feasible and c.combined() is not None]
    return max(ran, key=lambda c: (c.settled, c.combined()[0]), default=None), False


def _effect(verdict: runfolder_verdict.Verdict | None, name: str) -> dict | None:
    e = verdict.effects.get(name) if verdict else None
    return {k: e.get(k) for k in ("estimate", "low", "high")} if isinstance(e, dict) and e else None


def read(series_dir: Path, control: str, code: int) -> dict:
    """One confirmation as tune.json keeps it: the series, its combined verdict (successful TPS and p99 ratios)."""
    verdict = runfolder_verdict.read(series_dir)
    return {"against": control, "series": series_dir.name, "exit": code, "tps": _effect(verdict, "tps"),
            "p99": _effect(verdict, "p99"),
            "verdict": (verdict.sentence if verdict else None) or f"no combined verdict (exit {code})"}


def confirm(opts, s, run_series, values: dict, hold_s: int, control: str, label: str, done: list[dict],
            on_done=lambda confirmations: None, base: str = knob_sets.DEFAULT) -> list[dict]:
    """The confirmations still to run (done: those a resumed tune has), each kept as soon as it ends."""
    out = list(done)
    for name in against(control):
        if any(c["against"] == name for c in out):
            continue
        o = trials.options(opts, values, hold_s, f"{label}-vs-{name}"[:40], name, repeat=REPEAT, base=base)
        code, series_dir = run_series(o, s)
        out.append(read(series_dir, name, code))
        on_done(out)
        if code == 130:
            raise KeyboardInterrupt
    return out


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


def _evidence(c: dict) -> str:
    tps = c.get("tps") or {}
    return (f"vs {c['against']}: {_num(tps.get('estimate'))}× successful TPS (95 % CI {_num(tps.get('low'))} … "
            f"{_num(tps.get('high'))}), series {c['series']}")


def write_knob_set(name: str, data: dict) -> Path:
    """ansible/knob_sets/<name>.yml from tune.json's finalist and confirmations, each value commented with its
    evidence (the candidate's runs and their combined ratio, the confirmations, the knob's importance in the study).
    A tune from another base set writes `base:` first: the answer is that set and these values."""
    final, tune_id = data["finalist"], data["tune_id"]
    file = check_name(name, tune_id)
    base = data.get("base") or knob_sets.DEFAULT
    out_of_the_box = {**catalog.defaults(), **({} if base == knob_sets.DEFAULT else knob_sets.values(base))}
    confirmed = [c for c in data.get("confirmations") or [] if c.get("tps")]
    proven = final["counted"] and any(c["against"] == data.get("control", knob_sets.DEFAULT)
                                      and (c["tps"].get("low") or 0) > 1 + data["floor"] for c in confirmed)
    lines = [f"# Found by tune {tune_id} (./start.sh tune): trial {final['number']} of its study, "
             + ("its gain confirmed" if proven else "NOT a confirmed gain: read the evidence below"),
             f"# load: {data['load'].get('users')} users per machine, ramp-up {data['load'].get('ramp_up_s')} s, "
             f"hold {data['holds_s'][-1]} s; floor {data['floor']:.0%}",
             f"# search: {_num(final.get('ratio'))}× the control (95 % CI {_num(final.get('low'))} … "
             f"{_num(final.get('high'))}) over {len(final.get('runs') or [])} runs, trials "
             + ", ".join(str(n) for n in final.get("runs") or [])]
    lines += [f"# confirmed by --repeat {REPEAT} (crossover) {_evidence(c)}" for c in confirmed]
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
