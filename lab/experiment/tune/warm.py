"""A tune starts warm (issue 54, item 1): the A/B runs already in results/ that asked this tune's question are added
to its study as runs it made (optuna's add_trial), so that the sampler models them before its first proposal and a
leader among them is run again with the roles swapped instead of from the start. A past run asked the same question
where it is a finished single A/B run on the same machines' kind and memory, of the same service, at the same load
(the profile a trial runs: users, ramp-up, the hold as its length, mix, rates…), with the control's configuration on
its `default` side and on its `tuned` side the base set changed only in knobs the space searches, to values it holds
(the machines' own record of what they ran, config/knobs.json, against the lab's resolution of both sets). Its
outcome is read as a trial's is (trials.outcome: the verdict's paired ratio and its steady state), its constraints
from the gates.xml a tune's run keeps (a run whose gates.xml did not judge exactly the tune's constraints is left
out), and only where its report measured the steady state (both machines settled no later than the warm-up the
report cut: a tune's runs are rendered again from there; another run's ratio may hold a warm-up, and is left out),
judged where the JIT had gone quiet (verdict.json format 6 or later: an earlier report called a flat throughput
steady while a C2 compiler still took a CPU, report/stats/steady.py):
nothing is re-rendered or written, a past folder is the user's and stays as it was. The study's own runs and a run
of another question are left out; a folder that cannot be read is skipped.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lab.experiment.tune import trials
from lab.experiment.tune.evidence import Outcome
from lab.experiment.tune.space import Space
from lab.provision.configuration import same
from runfolder import gates as runfolder_gates
from runfolder import read_json

JIT_AWARE_FORMAT = 6      # verdict.json's first format whose steady state starts where the JIT went quiet
# Of a run's load, what a trial of the tune fixes (lab/experiment/load/profile.py Profile); not the scheme or the
# excluded warm-up: the outcome is the steady state's whatever the warm-up the report cut
LOAD_KEYS = ("name", "model", "users", "ramp_up_s", "duration_s", "rate_per_s", "keep_alive", "step_rates", "step_s",
             "p99_target_ms", "connect_timeout_ms", "response_timeout_ms", "mix", "id_min", "id_max",
             "customers_path")


@dataclass(frozen=True)
class Question:
    """What a past run must have asked to count as a run of this tune."""
    load: dict                      # the trial's profile (duration_s = the hold)
    service: str                    # the service's name
    kind: str                       # the machines' kind (provider)
    memory_mb: int | dict | None    # the machines' memory (real hosts: each one's, as run.json holds it)
    control: dict                   # every knob of the control's configuration, as the lab resolves it
    base: dict                      # every knob of the base set, as the lab resolves it
    own_series: str                 # the tune's folder name: its own runs are in its study already


def values_of(space: Space, ran: dict, base: dict, specs: dict) -> dict | None:
    """The candidate a side's knobs are, as the space holds it: None where they differ from the base outside the
    space or hold a value it does not."""
    searched = set(space.knobs)
    if any(knob not in searched and not same(ran.get(knob), value) for knob, value in base.items() if knob in ran):
        return None
    values: dict = {}
    for p in space.params:              # in the space's order: what bounds or conditions a knob comes first
        if p.searched(values) and p.knob in ran:
            values[p.knob] = trials.as_searched(p, ran[p.knob], specs.get(p.knob) or {})
        elif not p.searched(values) and p.knob in ran and not same(ran[p.knob], base.get(p.knob)):
            return None                 # left out by its `when`, so it must be the base's
    return values if space.contains(values) else None


def matches(run: dict, question: Question) -> bool:
    """Whether a run.json asked the question (its sides' knobs aside)."""
    design, load = run.get("design") or {}, run.get("load") or {}
    return (run.get("status") == "complete" and design.get("kind") == "ab" and not design.get("trials")
            and design.get("series") != question.own_series
            and ((run.get("service") or {}).get("name") or "sample") == question.service
            and run.get("provider") == question.kind and same(run.get("machine_memory_mb"), question.memory_mb)
            and all(same(load.get(k), question.load.get(k)) for k in LOAD_KEYS))


def outcome(folder: Path, run: dict, swapped: bool, objective: str, constraints: tuple[str, ...]) -> Outcome | None:
    """A past run's outcome as a trial's; None where its gates.xml did not judge exactly these constraints, or its
    report did not measure from where both machines settled."""
    judged = runfolder_gates.judged(folder) if constraints else []
    if judged is None or sorted(judged) != sorted(constraints):
        return None
    got = trials.outcome(folder, 0, objective, lambda f: tuple(runfolder_gates.failures(f) or ()), swapped)
    verdict = read_json(folder / "verdict.json") or {}
    if not isinstance(verdict.get("format_version"), int) or verdict["format_version"] < JIT_AWARE_FORMAT:
        return None
    cut = (verdict.get("method") or {}).get("warmup_s")            # verdict.json's since issue 54's warm start
    cut = (run.get("load") or {}).get("warmup_s") if cut is None else cut
    if got.settled is not True or got.steady_from_s is None or not isinstance(cut, (int, float)) \
            or got.steady_from_s > cut:
        return None
    return got


def past_runs(results: Path, space: Space, question: Question, specs: dict, objective: str = "tps",
              constraints: tuple[str, ...] = trials.CONSTRAINTS) -> list[tuple[dict, Outcome, str | None]]:
    """(values, outcome, when it ended) of every past run in results/ that asked the question, oldest first (specs:
    the catalog's, for an unset knob's searched value)."""
    found = []
    for path in sorted(p for p in results.glob("*/run.json") if p.is_file()):
        run = read_json(path)
        if run is None or not matches(run, question):
            continue
        machines = run.get("machines") or {}
        control = (machines.get("default") or {}).get("knobs")
        candidate = (machines.get("tuned") or {}).get("knobs")
        if not isinstance(control, dict) or not isinstance(candidate, dict):
            continue
        if any(not same(control.get(k), v) for k, v in question.control.items() if k in control):
            continue
        values = values_of(space, candidate, question.base, specs)
        if values is None:
            continue
        swapped = ((run.get("design") or {}).get("machines") or {}).get("default") not in (None, "default")
        got = outcome(path.parent, run, swapped, objective, constraints)
        if got is not None and got.ratio is not None:
            found.append((values, got, run.get("ended")))
    return found
