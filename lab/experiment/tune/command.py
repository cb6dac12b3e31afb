"""`./start.sh tune`: the search within a time budget, in its own folder (results/<stamp>-tune/): the study
(study.sqlite, optuna's), tune.json (the plan, every trial's values, outcome and run folder, the best so far, each
knob's importance), one ordinary run folder per trial. The plan and an estimated number of trials are printed
first; each trial says k of about n, the best so far and the time left. Ctrl-C keeps every finished trial;
`./start.sh tune --resume FOLDER` goes on with the same study, space and holds.
"""
from __future__ import annotations

import dataclasses
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path

from lab.experiment import record as run_record
from lab.experiment.tune import search, trials
from lab.experiment.tune.space import Space

STUDY = "tune"
# A trial's cost beside its hold under emulation (the sweep's figures: re-provisioning the tuned machine, the equal
# start and check, collection and the report), and its ramp-up.
OVERHEAD_S = 240 + 240 + 150


@dataclass
class Plan:
    space: Space
    holds_s: tuple[int, ...]
    floor: float
    budget_s: int
    p99_target_ms: float | None = None

    def trial_s(self, hold_s: int, ramp_up_s: int) -> int:
        return OVERHEAD_S + ramp_up_s + hold_s

    def expected_trials(self, ramp_up_s: int) -> int:
        """About how many candidates fit the budget with successive halving (a third go on to each longer hold)."""
        per = sum(self.trial_s(h, ramp_up_s) / search.REDUCTION ** i for i, h in enumerate(self.holds_s))
        return max(1, int(self.budget_s // per))

    def describe(self, ramp_up_s: int) -> str:
        lines = [f"tune: {len(self.space.params)} knobs on the tuned side, the default side the control; holds "
                 f"{', '.join(f'{h} s' for h in self.holds_s)} (a third of each hold's candidates go on to the next); "
                 f"a gain counts when its interval clears the noise floor ({self.floor:.0%}); budget "
                 f"{self.budget_s / 3600:.1f} h, about {self.expected_trials(ramp_up_s)} candidates "
                 f"(~{self.trial_s(self.holds_s[0], ramp_up_s) / 60:.0f} min for the shortest trial)"]
        lines += [f"  {p.knob:34} {p.describe()}" for p in self.space.params]
        return "\n".join(lines)


def _save(folder: Path, data: dict) -> None:
    tmp = folder / "tune.json.tmp"
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(tmp, folder / "tune.json")


def _row(r: search.Result) -> dict:
    return {"number": r.number, "state": r.state, "hold_s": r.hold_s, "values": r.values,
            "outcome": dataclasses.asdict(r.outcome)}


def record(folder: Path, data: dict, tuner: search.Tuner) -> dict:
    """tune.json from the study: every trial, the best that counts, the importances."""
    results = tuner.results()
    best = tuner.best()
    data.update(results=[_row(r) for r in results], best=_row(best) if best else None,
                importance=tuner.importance() if len(results) >= 4 else {})
    _save(folder, data)
    return data


def progress(k: int, expected: int, tuner: search.Tuner, left_s: float) -> str:
    best = tuner.best()
    said = (f"best so far trial {best.number}: {best.outcome.ratio:.2f}× ({best.outcome.low:.2f} … "
            f"{best.outcome.high:.2f})" if best else "no gain beyond the noise floor yet")
    return f"tune: trial {k} of about {expected}; {said}; {max(0.0, left_s) / 60:.0f} min left"


def start(folder: Path | None, opts, plan: Plan, resume: bool, log=print) -> tuple[Path, dict]:
    """The tune folder and its tune.json: a new one, or the one resumed (its plan must be this one)."""
    if resume:
        data = json.loads((folder / "tune.json").read_text())
        data.update(status="running", resumed=[*data.get("resumed", []), run_record.utc_now()])
        return folder, data
    folder = run_record.make_run_dir(f"{opts.label}-tune" if opts.label else "tune")
    data = {"tune_id": folder.name, "status": "running", "started": run_record.utc_now(), "ended": None,
            "budget_s": plan.budget_s, "holds_s": list(plan.holds_s), "floor": plan.floor,
            "space": [dataclasses.asdict(p) for p in plan.space.params], "p99_target_ms": plan.p99_target_ms,
            "load": dataclasses.asdict(opts.profile), "service": opts.service.name if opts.service else None,
            "trials": [], "results": [], "best": None, "importance": {}}
    _save(folder, data)
    return folder, data


def execute(opts, s, plan: Plan, run_trial, validate, resume_folder: Path | None = None, log=print,
            clock=time.monotonic) -> tuple[int, Path]:
    """Runs trials while the budget has room for another whole one; (exit code, tune folder)."""
    folder, data = start(resume_folder, opts, plan, resume_folder is not None, log)
    tuner = search.Tuner(plan.space, f"sqlite:///{folder / 'study.sqlite'}", STUDY, plan.holds_s, plan.floor,
                         rules=trials.rules(opts, s, validate))
    evaluate = trials.evaluator(opts, s, run_trial, folder.name, plan.p99_target_ms,
                                on_run=lambda run_dir: (data["trials"].append(run_dir.name), _save(folder, data)),
                                done=len(data["trials"]))
    log(plan.describe(opts.profile.ramp_up_s))
    began, spent, code = clock(), data.get("spent_s", 0), 0     # a resumed tune has spent part of its budget
    expected = plan.expected_trials(opts.profile.ramp_up_s)
    # a trial starts only when it fits whole: successive halving may take it through every hold
    whole = sum(plan.trial_s(h, opts.profile.ramp_up_s) for h in plan.holds_s)

    def left() -> float:
        return plan.budget_s - spent - (clock() - began)
    try:
        k = len(tuner.results())
        while left() >= whole:
            k += 1
            log(f"\n==== {progress(k, expected, tuner, left())}")
            tuner.step(evaluate)
            data["spent_s"] = round(spent + clock() - began)
            record(folder, data, tuner)
    except KeyboardInterrupt:
        code = 130
        log("start.sh: tune interrupted; every finished trial is kept (./start.sh tune --resume " + str(folder) + ")")
    data.update(status="interrupted" if code else "complete", ended=run_record.utc_now(),
                spent_s=round(spent + clock() - began))
    record(folder, data, tuner)
    log(progress(len(tuner.results()), expected, tuner, left()))
    return code, folder
