"""A tune's folder (results/<stamp>-tune/) and its tune.json: made, or the one resumed (start); rewritten whole after
every change (save; record: every run and candidate from the study, the best that counts, the importances)."""
from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import runfolder
from lab import redact
from lab.experiment import record as run_record
from lab.experiment.tune import aa, confirm, evidence, search


def save(folder: Path, data: dict) -> None:
    """tune.json written whole (a reader never sees half of it)."""
    tmp = folder / "tune.json.tmp"
    tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
    os.replace(tmp, folder / "tune.json")


def failed(data: dict, failure: BaseException) -> dict:
    """tune.json's content marked failed, with the exception's name and message (every finished trial stays kept)."""
    data.update(status="failed", ended=run_record.utc_now(), error=f"{type(failure).__name__}: {failure}")
    return data


def result_row(r: evidence.Result) -> dict:
    return {"number": r.number, "state": r.state, "hold_s": r.hold_s, "values": r.values,
            "outcome": dataclasses.asdict(r.outcome), "ended": r.ended, "replicate_of": r.replicate_of,
            "known": r.known, "past": r.past}


def candidate_row(c: evidence.Candidate, floor: float) -> dict:
    """A candidate as tune.json keeps it: its runs, their combined ratio and whether its gain counts."""
    got = c.combined() or (None, None, None)
    return {"number": c.number, "values": c.values, "runs": [r.number for r in c.runs],
            "orientations": c.orientations, "settled": c.settled, "feasible": c.feasible,
            "counts": c.improves(floor), "ratio": got[0], "low": got[1], "high": got[2], "known": c.known}


def record(folder: Path, data: dict, tuner: search.Tuner) -> dict:
    """tune.json from the study: every run, every candidate, the best that counts, the importances."""
    results, candidates = tuner.results(), tuner.candidates()
    best = tuner.best(candidates)
    data.update(results=[result_row(r) for r in results],
                candidates=[candidate_row(c, tuner.floor) for c in candidates],
                best=candidate_row(best, tuner.floor) if best else None,
                importance=tuner.importance())
    save(folder, data)
    return data


def start(folder: Path | None, opts, plan, resume: bool, log=print) -> tuple[Path, dict]:
    """The tune folder and its tune.json: a new one, or the one resumed (its plan must be this one)."""
    if resume:
        data = json.loads((folder / "tune.json").read_text())
        # the budget is the whole tune's as --resume … --budget gives it (what was spent counts against it)
        data.update(status="running", resumed=[*data.get("resumed", []), run_record.utc_now()],
                    budget_s=plan.budget_s)
        # what this checkout writes from now on is its own format's (the fields a format added are optional)
        return folder, runfolder.stamped("tune.json", data)
    folder = run_record.make_run_dir(f"{opts.label}-tune" if opts.label else "tune")
    data = runfolder.stamped("tune.json", {
        "tune_id": folder.name, "status": "running", "started": run_record.utc_now(), "ended": None,
        "budget_s": plan.budget_s, "holds_s": [plan.hold_s], "floor": plan.floor, "base": plan.base,
        "known": list(plan.known), "between": plan.between, "cold": plan.cold, "around": plan.around,
        "race": plan.race, "aa_runs": plan.aa_runs, "spread": aa.Spread(plan.between).record(),
        "space": [dataclasses.asdict(p) for p in plan.space.params], "objective": plan.objective,
        "constraints": list(plan.constraints),
        "load": dataclasses.asdict(opts.profile), "service": opts.service.name if opts.service else None,
        "until_settled_s": opts.until_settled_s, "control": plan.control,
        "name": plan.name or confirm.default_name(folder.name),
        "study": redact.redacted(plan.study) if plan.study else None,
        "trials": [], "results": [], "candidates": [], "best": None, "importance": {}, "finalist": None,
        "confirmations": [],
        "knob_set": None})
    save(folder, data)
    return folder, data
