"""`./start.sh tune`: the search within a time budget, in its own folder (results/<stamp>-tune/): the study
(study.sqlite, optuna's), tune.json (the plan, every trial's values, outcome and run folder, the best so far, each
knob's importance, the finalist's confirmations and knob set), one ordinary run folder per trial. The plan and an
estimated number of trials are printed first; each trial says k of about n, the best so far and the time left. The
budget keeps room for the confirmations (confirm.py), which follow the search; then the knob set and tune.html.
Ctrl-C keeps every finished trial and confirmation; `./start.sh tune --resume FOLDER` goes on with the same study,
space and holds.

Several workers (each a controller with its own twins, `--hosts`) may work one study (`--study URL`: a storage
optuna shares between processes, PostgreSQL across controllers): each keeps its own folder, runs and budget, sees
every worker's trials, and confirms the study's finalist on its own twins.
"""
from __future__ import annotations

import contextlib
import dataclasses
import time
from pathlib import Path
from typing import Protocol

from lab.experiment import finish, reporting, run, trial
from lab.experiment import record as run_record
from lab.experiment.options import Options
from lab.experiment.tune import aa, confirm, evidence, overlap, race, search, trials, warm
from lab.experiment.tune import folder as tune_folder
from lab.experiment.tune.plan import OVERHEAD_S, Plan  # noqa: F401 (command.Plan, command.OVERHEAD_S: its callers')
from lab.provision import catalog
from runfolder import read_json

STUDY = "tune"


def ran(tuner: search.Tuner) -> int:
    """The runs the study has made (candidates the knob rules refused cost nothing, past runs were made before: neither
    is counted)."""
    return sum(r.state != "refused" and not r.past for r in tuner.results())


def progress(k: int, expected: int, tuner: search.Tuner, left_s: float) -> str:
    best = tuner.best()
    got = best.combined() if best else None
    said = (f"best so far trial {best.number}: {got[0]:.2f}× ({got[1]:.2f} … {got[2]:.2f}, {len(best.runs)} runs)"
            if got else "no gain beyond the floor yet")
    return f"tune: run {k} of about {expected}; {said}; {max(0.0, left_s) / 60:.0f} min left"


class Lab(Protocol):
    """Where a tune's trials run: the machines (MACHINES), or the tests' stand-in (standin.Runs)."""

    def run_trial(self, opts: Options, t, s, label: str) -> tuple[int, Path]: ...

    def run_series(self, opts: Options, s) -> tuple[int, Path]: ...

    def combine(self, label: str, series: list[Path]) -> Path: ...

    def validate(self, opts: Options, s) -> None: ...

    def report_later(self, run_dir: Path) -> None: ...


class _Machines:
    """The lab's own: one A/B run (trial.run_trial), a --repeat series (run.run_series), several series' trials
    combined (run.combine_series), the knobs' validation."""
    run_trial = staticmethod(trial.run_trial)
    run_series = staticmethod(run.run_series)
    combine = staticmethod(run.combine_series)
    validate = staticmethod(run.validate)
    report_later = staticmethod(finish.report_later)


MACHINES: Lab = _Machines()


def machines(opts: Options, s, plan: Plan) -> dict:
    """The machines a study's runs measure: their kind, memory and cores (real hosts: as the lab reached them)."""
    reached = (opts.reached or {}) if plan.kind == "hosts" else {}
    return {"kind": plan.kind,
            "memory_mb": reached.get("memory_mb") if plan.kind == "hosts" else getattr(s, "memory_mb", None),
            "cpus": reached.get("cpus") if plan.kind == "hosts" else getattr(s, "cpus", None)}


def sides(opts: Options, plan: Plan) -> tuple[dict, dict]:
    """(the control's knobs, the base's knobs), every one as the lab resolves them for the service."""
    trial = trials.options(opts, {}, plan.hold_s, "warm", plan.control, base=plan.base)
    return (trial.configurations[trials.CONTROL].knobs(opts.service),
            trial.configurations[trials.SIDE].knobs(opts.service))


def question(opts: Options, s, plan: Plan) -> dict:
    """What, beside the space and holds, makes a study one question: every worker on it must ask the same. The
    machines (their kind, memory and cores) and the control and base as the knobs they resolve to: a set's name
    says nothing of what a later edit of it changed, nor a study of which machines' answer it holds."""
    control, base = sides(opts, plan)
    return {"load": dataclasses.asdict(opts.profile), "service": opts.service.name if opts.service else None,
            "objective": plan.objective, "constraints": list(plan.constraints), "control": plan.control,
            "base": plan.base, "between": plan.between, "until_settled_s": opts.until_settled_s,
            "machines": machines(opts, s, plan), "control_knobs": control, "base_knobs": base}


def past(opts: Options, s, plan: Plan, folder: Path) -> list[tuple[dict, evidence.Outcome, str | None]]:
    """The past runs beside the tune's folder (results/) that asked its question (warm.py), [] for a --cold tune."""
    if plan.cold:
        return []
    control, base = sides(opts, plan)
    question = warm.Question(    # the load a trial runs: the tune's, its hold as its length (trials.options)
        load=dataclasses.asdict(dataclasses.replace(opts.profile, duration_s=plan.hold_s)),
        service=opts.service.name if opts.service else "sample", kind=plan.kind,
        memory_mb=machines(opts, s, plan)["memory_mb"], control=control, base=base, own_series=folder.name)
    return warm.past_runs(folder.parent, plan.space, question, catalog.specs(), plan.objective, plan.constraints)


def execute(opts: Options, s, plan: Plan, lab: Lab = MACHINES, proves: bool = True,
            resume_folder: Path | None = None, log=print, clock=time.monotonic, judge=None) -> tuple[int, Path]:
    """Runs trials on the lab while the budget has room for another whole one and the confirmations, then (proves)
    confirms the finalist and writes its knob set and tune.html; (exit code, folder). judge: run folder → the
    constraints it broke (default: the plan's gates judged by the report)."""
    folder, data = tune_folder.start(resume_folder, opts, plan, resume_folder is not None, log)
    known = trials.known_sets(plan.space, list(plan.known), plan.base, opts.service, plan.control)
    try:        # a study of another question is refused here: tune.json says so rather than "running"
        tuner = search.Tuner(plan.space, plan.storage(folder), STUDY, plan.hold_s, plan.floor,
                             rules=trials.rules(opts, s, lab.validate, plan.control, plan.base),
                             question=question(opts, s, plan), between=plan.between, known=known,
                             past=past(opts, s, plan, folder), sampler=search.sampler_of(plan.sampler, plan.seed),
                             alone=plan.study is None)
    except BaseException as failure:
        tune_folder.save(folder, tune_folder.failed(data, failure))
        raise
    evaluate = trials.Evaluator(opts, s, lab.run_trial, folder.name, plan.objective,
                                judge or trials.gate_judge(plan.constraints),
                                on_run=lambda run_dir: (data["trials"].append(run_dir.name),
                                                        tune_folder.save(folder, data)),
                                done=len(data["trials"]), control=plan.control, base=plan.base,
                                report_later=lab.report_later,
                                race=(lambda swapped: race.of(tuner.leader_low(), plan.floor, spread.tau, swapped))
                                if plan.race else None)
    spread = aa.Spread.kept(data.get("spread"), plan.between)
    tuner.between = spread.tau

    def told(result: evidence.Result) -> None:
        """A run's outcome told: its report's τ, where A/A runs calibrated it, is the tune's from now on."""
        tau = result.outcome.tau
        if tau is not None and spread.measured(result.outcome.run, tau):
            log(f"tune: the between-run spread τ is {spread.tau:.1%}, {spread.source} (it was {plan.between:.1%} "
                "assumed)")
        tuner.between = spread.tau
        data["spread"] = spread.record()
        tune_folder.record(folder, data, tuner)
    runs = overlap.Overlapped(tuner, evaluate, told=told)
    ramp = opts.profile.ramp_up_s
    log(plan.describe(ramp, known))
    capped = opts.until_settled_s is not None or plan.race
    if opts.until_settled_s is not None:
        log(f"  --until-settled {opts.until_settled_s} s: every hold is a cap; the budget expects the median run so "
            "far of the runs and blocks after it, and starts a run only where it fits at its cap")
    if capped:
        plan = dataclasses.replace(plan, ran_s=_median(data.get("runs_s")),
                                   measuring_s=_measuring(plan, ramp, data))
    began, spent, code = clock(), data.get("spent_s", 0), 0     # a resumed tune has spent part of its budget
    expected = plan.expected_trials(ramp)
    # a run starts only when it fits whole with the confirmations after it; while no candidate is worth confirming
    # (none ran within its constraints, or every one that did was shown worse than the control) the confirmations'
    # share goes to the search (the tune of 20261130T111421Z stopped after 23 of its 55 minutes with nothing feasible
    # and 32 minutes kept unused; 20261202T053312Z searched one run, then confirmed a 0.33x)
    def found() -> bool:
        return proves and confirm.finalist(tuner)[0] is not None

    def whole() -> int:
        return plan.cap_s(ramp) + (plan.reserve_s(ramp) if found() else 0)

    def left() -> float:
        return plan.budget_s - spent - (clock() - began)

    def fits() -> bool:
        if runs.pending is not None and waits_for_pending(found(), left(), plan.cap_s(ramp), plan.reserve_s(ramp)):
            runs.settle()
        return left() >= whole()
    # a resumed tune whose finalist's confirmations have begun finishes them (its search ended when they began)
    confirming = resume_folder is not None and confirm.under_way(data, confirm.finalist(tuner)[0], plan.control)
    if confirming:
        log("tune: the finalist's confirmations are under way: this run finishes them and searches no more")
    try:
        k = ran(tuner)
        while not confirming and fits():
            k += 1
            log(f"\n==== {progress(k, expected, tuner, left())}")
            before = clock()
            run_dir = runs.step()
            if capped:
                took, record = round(clock() - before), read_json(run_dir / "run.json") or {}
                data["runs_s"] = [*data.get("runs_s", []), took]
                if race.raced(record):      # a run whose load never ran says nothing of how long one measures
                    said = "cut_s" if race.on_value(race.ended(record)) else "measuring_s"
                    data[said] = [*data.get(said, []), took]
                plan = dataclasses.replace(plan, ran_s=_median(data["runs_s"]),
                                           measuring_s=_measuring(plan, ramp, data))
                # "run 3 of about 1" said the estimate made on the cap: the runs the budget holds as they now last
                expected = k + max(0, int((left() - plan.reserve_s(ramp)) // plan.trial_s(ramp)))
            if plan.aa_runs and not spread.tried and not spread.is_measured:
                last = runs.settle()        # its report says whether A/A runs of the load calibrated it
                if last is not None and last.outcome.ratio is not None and not spread.is_measured:
                    measure_spread(opts, s, plan, lab, folder, data, spread, left() - whole(), log)
            data["spent_s"] = round(spent + clock() - began)
            tune_folder.record(folder, data, tuner)
        runs.close()
        if proves:
            prove(opts, s, plan, tuner, folder, data, lab, log,
                  confirms=confirming or left() >= confirm.block_s(plan.confirm_s(ramp)), left=left)
    except KeyboardInterrupt:
        code = 130
        runs.close()        # the report under way finished and its outcome kept
        log("start.sh: tune interrupted; every finished trial is kept (./start.sh tune --resume " + str(folder) + ")")
    except BaseException as failure:        # named or not, tune.json says the tune failed and why, then it goes on up
        with contextlib.suppress(Exception):
            runs.close()
        data["spent_s"] = round(spent + clock() - began)
        tune_folder.record(folder, tune_folder.failed(data, failure), tuner)
        raise
    finally:
        tuner.close()       # an interrupted run's trial stops saying it is alive: the next opening fails it
    data.update(status="interrupted" if code else "complete", ended=run_record.utc_now(),
                spent_s=round(spent + clock() - began))
    tune_folder.record(folder, data, tuner)
    reporting.report_command("tune", folder, log=log, what="tune report")
    log(progress(ran(tuner), expected, tuner, left()))
    return code, folder


def measure_spread(opts, s, plan: Plan, lab: Lab, folder: Path, data: dict, spread: aa.Spread, room_s: float,
                   log=print) -> None:
    """No A/A runs of the load calibrated the first run that measured a ratio: an A/A block of the control (aa.py),
    so that every later run's report is calibrated, where the budget has room for it beside the next run."""
    cost = plan.aa_runs * plan.confirm_s(opts.profile.ramp_up_s) + confirm.SERIES_S     # raced as a confirmation
    spread.tried = True
    if room_s < cost:
        log(f"tune: no A/A runs of this load calibrate its runs, and no room for an A/A block (~{cost / 60:.0f} min): "
            f"τ stays {spread.tau:.1%}, assumed")
        return
    log(f"\n==== tune: no A/A runs of this load calibrate its runs: an A/A block of {plan.aa_runs} runs of "
        f"{plan.control} on both machines first (~{cost / 60:.0f} min), which every later run's report reads")
    _, series = lab.run_series(aa.block(opts, plan.control, plan.hold_s, f"{folder.name.split('-', 1)[-1]}-aa",
                                        plan.aa_runs, race.measuring(spread.tau, plan.floor) if plan.race else None), s)
    spread.block = series.name
    data["spread"] = spread.record()
    tune_folder.save(folder, data)


def waits_for_pending(found: bool, left_s: float, cap_s: int, reserve_s: int) -> bool:
    """Whether the next run waits for the outcome of the one whose report is under way before it is provisioned:
    only while no candidate is worth confirming yet and less than a run and the confirmations' reserve is left, where
    that outcome may make the first finalist, whose confirmations then take the reserve. Once one exists, the
    reserve is kept whatever that outcome, and the overlap goes on to the budget's end."""
    return not found and left_s < cap_s + reserve_s


def _measuring(plan: Plan, ramp_up_s: int, data: dict) -> int | None:
    """A confirmation's run as the budget keeps it (race.budgeted_s): from the search's runs' lengths, all its
    confirmations' first looks within their reserve 95 % of the time."""
    return race.budgeted_s(data.get("measuring_s"), data.get("cut_s"), plan.cap_s(ramp_up_s),
                           confirm.REPEAT * len(confirm.against(plan.control)))


def _median(runs_s: list[int] | None) -> int | None:
    """The median of the runs' lengths (the upper one of an even count), None without any."""
    return sorted(runs_s)[len(runs_s) // 2] if runs_s else None


def prove(opts, s, plan: Plan, tuner: search.Tuner, folder: Path, data: dict, lab: Lab, log=print,
          confirms: bool = True, left=lambda: float("inf")) -> None:
    """The finalist confirmed against the control and the tuned set unless it is that set (confirm.itself; those a
    resumed tune has kept; later looks while left() holds a block), then written as a knob set; confirms False (a
    first feasible candidate found with no budget left for its confirmations): written unconfirmed, and said so."""
    final, counted = confirm.finalist(tuner)
    if final is None:       # tune.json says why (a resumed tune's earlier finalist may no longer be worth it)
        data.update(finalist=None, no_finalist=confirm.nothing_to_confirm(tuner, plan.control))
        tune_folder.save(folder, data)
        log(f"tune: {data['no_finalist']}")
        return
    row = {**tune_folder.candidate_row(final, tuner.floor), "counted": counted}
    same = (data.get("finalist") or {}).get("number") == final.number     # a resumed tune's, for this finalist
    kept = (data.get("confirmations") or []) if same else []
    data.update(finalist=row, confirmations=kept)
    tune_folder.save(folder, data)
    why = ("its gain counts" if counted else
           "no gain cleared the floor in the search: the top feasible candidate, proven by its confirmation alone")
    label = f"{folder.name.split('-', 1)[-1]}-confirm"

    def keep(confirmations: list[dict]) -> None:
        data.update(confirmations=confirmations, spent_s=round(plan.budget_s - left()))
        tune_folder.save(folder, data)
    block = confirm.block_s(plan.confirm_s(opts.profile.ramp_up_s))
    left_out = confirm.itself(final.values, plan.control, opts.service, plan.base)
    controls = [n for n in confirm.against(plan.control) if n not in left_out]
    data.update(confirm_against=controls, itself=left_out)
    for why_not in left_out.values():
        log(f"tune: {why_not}")
    if confirms:
        log(f"\n==== tune: confirming trial {final.number} ({why}) by --repeat {confirm.REPEAT} against "
            + " and ".join(controls))
        confirm.confirm(opts, s, lab, final.values, plan.hold_s, plan.control, label, kept, keep, plan.base,
                        plan.floor, left, block, plan.objective, controls,
                        race.measuring(tuner.between, plan.floor) if plan.race else None)
    else:
        log(f"tune: no budget left to confirm trial {final.number} (a block of --repeat {confirm.REPEAT} takes "
            f"~{block / 60:.0f} min, {max(0.0, left()) / 60:.0f} min left: the first candidate within its constraints "
            "came late, or the runs took longer than planned): written unconfirmed; ./start.sh tune "
            f"--resume {folder} --budget TIME confirms it")
    tune_folder.record(folder, data, tuner)             # the importances its comments give, as of now
    file = confirm.write_knob_set(data["name"], data)
    data["knob_set"] = f"ansible/knob_sets/{file.name}"
    tune_folder.save(folder, data)
    log(f"tune: knob set {data['name']} written ({data['knob_set']}): ./start.sh --knob-set tuned={data['name']}")
