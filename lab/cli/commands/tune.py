"""`./start.sh tune`: the tune's plan from the command line, checked before anything starts (the space, the hold,
the floor, the base and known sets, the budget; a resumed tune's own from its tune.json), then the search
(lab/experiment/tune/command.py), the tune folder indexed, the machines taken down when asked."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import runfolder
from lab import redact
from lab.experiment import load, preflight, reporting, run
from lab.experiment.options import Options, seconds
from lab.experiment.tune import aa, region, space
from lab.machines import lifecycle
from lab.provision import catalog, knob_sets
from runfolder import schema

HELP = "search the knob space within a budget (optuna TPE from the known sets, judged at steady state)"
NEEDS_ROOT = True
TAKES_LOCK = True
RUN_OPTIONS = "all"


def add_arguments(parser) -> None:
    add = parser.add_argument
    add("--budget", type=seconds, default=None, metavar="TIME",
        help="how long the search and the best's confirmations may take, e.g. 2h (a resumed tune: what is left of "
             "its own)")
    add("--space", type=Path, default=None, metavar="FILE",
        help="knob: range (YAML) to search instead of the catalog's tune: ranges (ansible/knobs.yml)")
    add("--hold", type=seconds, default=360, metavar="TIME",
        help="every run's hold (default 6m: long enough for both machines to settle at native speed, whose steady "
             "window is what is judged)")
    add("--floor", type=float, default=0.05, metavar="FRACTION",
        help="the smallest gain worth a change: a gain counts when its interval's lower bound clears 1 + FRACTION "
             "(default 0.05)")
    add("--between", type=float, default=None, metavar="FRACTION",
        help="what a run's ratio spreads by between runs of the load where no A/A runs calibrate its verdict (log "
             "scale; default 0.05)")
    add("--base", default=None, metavar="SET",
        help="the knob set a candidate starts from: the candidate is SET and its values (default: the catalog)")
    add("--around", default=None, metavar="SET",
        help="search a trust region: each numeric range narrowed to a quarter of its span each way of SET's value "
             "(lab/experiment/tune/region.py)")
    add("--known", dest="known", action="append", default=None, metavar="SET",
        help="a knob set to run first, beside default, tuned and article-2018 (repeatable)")
    add("--objective", default=None, metavar="tps|p99",
        help="what a candidate improves: the paired successful-TPS ratio (tps, default), or p99 latency (p99)")
    add("--constraint", dest="constraints", action="append", default=None, metavar="GATE",
        help="a gate every candidate's verdict must pass, as --gate reads it, e.g. 'p99<=2s' (repeatable; default "
             "'errors<=0.1%%'; giving any replaces the default)")
    add("--control", default=None, metavar="SET",
        help="the knob set the candidates run against (default: default, the catalog); the finalist is confirmed "
             "against it and against tuned")
    add("--name", default=None, metavar="NAME",
        help="the knob set the answer is written as, ansible/knob_sets/NAME.yml (default tune-DATE-HHMM)")
    add("--study", default=None, metavar="URL",
        help="work a study shared with other workers (each its own twins, --hosts): sqlite:///PATH, or "
             "postgresql://USER@HOST/DB across controllers (default: the tune folder's study.sqlite)")
    add("--cold", action="store_true",
        help="start without the past runs in results/ that asked the same question (by default they join the "
             "study as runs it made: the same load, service, machines' kind, control and base)")
    add("--aa-runs", type=int, default=None, metavar="N",
        help="where no A/A runs of the load calibrate the first run, an A/A block of N runs first (default 2; 0: "
             "none, τ stays --between's assumption)")
    add("--full-holds", dest="race", action="store_false",
        help="hold every search run whole (by default a run ends once it cannot beat the leader, or once its own "
             "error is far below the between-run spread: lab/experiment/tune/race.py)")
    add("--resume", type=Path, default=None, metavar="FOLDER",
        help="go on with a tune folder's study (its space, holds and budget)")


def study_url(url: str) -> str:
    """A study's storage as optuna's RDBStorage takes it: sqlite:///PATH (workers on one controller) or
    postgresql://USER@HOST/DB (workers on several, with a PostgreSQL driver installed); ValueError naming the
    problem."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme == "sqlite":
        folder = Path(url.removeprefix("sqlite:///")).parent
        if not url.startswith("sqlite:///") or not folder.is_dir():
            raise ValueError(f"--study {redact.redacted(url)}: sqlite:///PATH with PATH's folder existing")
        return url
    if scheme.split("+")[0] == "postgresql":
        try:
            import psycopg2  # noqa: F401  (SQLAlchemy's default PostgreSQL driver)
        except ImportError:
            raise ValueError(f"--study {redact.redacted(url)}: PostgreSQL needs its driver here (pip install "
                             "psycopg2-binary in .venv)") from None
        return url
    raise ValueError(f"--study {redact.redacted(url)}: a storage URL, sqlite:///PATH or postgresql://USER@HOST/DB")


def saved_space(folder: Path, saved: list) -> tuple:
    """A tune.json's space as Params; ValueError naming the entry a damaged or foreign file got wrong."""
    params = []
    for i, p in enumerate(saved):
        try:
            params.append(space.Param(**{**p, "choices": tuple(p.get("choices") or ()),
                                         "at_most": tuple(p.get("at_most") or ()),
                                         "at_least": tuple(p.get("at_least") or ()),
                                         "when": tuple((k, tuple(v)) for k, v in p.get("when") or ())}))
        except (TypeError, AttributeError) as e:
            raise ValueError(f"--resume {folder}: tune.json space[{i}] is not a knob of a search ({e})") from None
    return tuple(params)


def plan_of(args):
    """The plan (a tune.command.Plan): a new tune's from its arguments, a resumed one's from its tune.json; ValueError
    naming the problem."""
    from lab.experiment.tune import command, confirm, trials  # optuna (0.2 s to import): only when a tune starts
    if args.resume is not None:
        try:
            saved = schema.read(args.resume / "tune.json")
        except schema.ContractError as e:
            raise ValueError(f"--resume {args.resume}: not a tune folder this lab can go on with ({e})") from None
        if runfolder.version(saved) < 3:
            raise ValueError(f"--resume {args.resume}: begun by the tuner of successive halving (tune.json format "
                             f"{runfolder.version(saved)}), whose study this one cannot go on with: begin a new tune")
        left = [name for name, given in (("--space", args.space), ("--control", args.control), ("--name", args.name),
                                         ("--study", args.study), ("--objective", args.objective),
                                         ("--constraint", args.constraints), ("--base", args.base),
                                         ("--known", args.known), ("--between", args.between),
                                         ("--around", args.around)) if given is not None]
        if left:
            raise ValueError(f"--resume goes on with the tune's own space, control, name, study, objective, "
                             f"constraints, base, known sets, between-run spread and region: leave "
                             f"{', '.join(left)} out")
        params = saved_space(args.resume, saved["space"])
        budget = args.budget if args.budget is not None else saved["budget_s"]
        return command.Plan(space.Space(params), int(saved["holds_s"][-1]), saved["floor"], budget,
                            saved.get("objective", "tps"), tuple(saved.get("constraints", trials.CONSTRAINTS)),
                            saved.get("control", knob_sets.DEFAULT), saved.get("name"), saved.get("study"),
                            saved["base"], tuple(saved.get("known") or ()), saved["between"],
                            cold=bool(saved.get("cold")), around=saved.get("around"),
                            race=bool(saved.get("race")),       # a tune from before races held every run whole
                            aa_runs=int(saved.get("aa_runs") or 0))
    if args.budget is None:
        raise ValueError("tune: --budget TIME (e.g. 2h), or --resume FOLDER to go on with a tune")
    if not 0 <= args.floor < 1:
        raise ValueError(f"--floor {args.floor}: a fraction from 0 to 1, e.g. 0.05")
    between = trials.BETWEEN if args.between is None else args.between
    if not 0 <= between < 1:
        raise ValueError(f"--between {args.between}: a fraction from 0 to 1, e.g. 0.05")
    if getattr(args, "aa_runs", None) is not None and not 0 <= args.aa_runs <= 20:
        raise ValueError(f"--aa-runs {args.aa_runs}: from 0 (none) to 20 runs")
    if args.hold <= 0:
        raise ValueError(f"--hold {args.hold}: a positive length")
    specs = catalog.specs()
    chosen = space.from_file(args.space, specs) if args.space else space.from_catalog(specs)
    control = args.control or knob_sets.DEFAULT
    base = args.base or knob_sets.DEFAULT
    for option, name in [("--control", control), ("--base", base), *(("--known", k) for k in args.known or ()),
                         *((("--around", args.around),) if args.around is not None else ())]:
        if name not in knob_sets.names():
            raise ValueError(f"{option} {name}: not a knob set ({', '.join(knob_sets.names())})")
    if args.around is not None:
        chosen = region.around(chosen, {**catalog.defaults(), **knob_sets.values(args.around)}, args.around)
    if args.name is not None:
        confirm.check_name(args.name, "")           # a file of that name is another tune's: refused now
    if args.objective is not None and args.objective not in trials.OBJECTIVES:
        raise ValueError(f"--objective {args.objective}: one of {', '.join(trials.OBJECTIVES)}")
    constraints = tuple(args.constraints) if args.constraints is not None else trials.CONSTRAINTS
    reporting.check_gates(constraints)          # a constraint that cannot be read: refused now
    known = tuple(dict.fromkeys([*trials.KNOWN, *(args.known or ())]))
    plan = command.Plan(chosen, args.hold, args.floor, args.budget, args.objective or "tps", constraints,
                        control=control, name=args.name,
                        study=study_url(args.study) if args.study is not None else None,
                        base=base, known=known, between=between, around=args.around,
                        race=getattr(args, "race", True),
                        aa_runs=aa.RUNS if getattr(args, "aa_runs", None) is None else args.aa_runs)
    opts = getattr(args, "options", None)      # the run options main() gives (absent where only the plan is checked)
    # with a native run's cost: the machines' kind is known later (main)
    check_budget(plan, args.budget, opts.profile.ramp_up_s if opts is not None else 0)
    return plan


def check_warmup(opts: Options, plan) -> None:
    """--warmup must leave every trial a measured window (it is cut from the ramp-up and the hold), and
    --until-settled's window must fit in the hold, its cap."""
    refused = load.check_until_settled(opts.until_settled_s, dataclasses.replace(opts.profile, duration_s=plan.hold_s))
    if refused:
        raise ValueError(f"{refused} (--hold)")
    shortest = opts.profile.ramp_up_s + plan.hold_s
    if opts.warmup_s is not None and opts.warmup_s >= shortest:
        raise ValueError(f"--warmup {opts.warmup_s} s: a run lasts {shortest} s (ramp-up and hold): lengthen --hold "
                         "or shorten --warmup")


def check_budget(plan, budget_s: int, ramp_up_s: int = 0) -> None:
    """The budget holds at least one run and the confirmations, each run with its ramp-up (without it a 45-min tune
    at a 60 s ramp-up passed here and ran one run, then had no budget left to confirm it); ValueError naming what
    would fit."""
    whole = plan.trial_s(ramp_up_s) + plan.reserve_s(ramp_up_s)
    if budget_s < whole:
        raise ValueError(f"--budget {budget_s} s: not even one run and its confirmations fit (~{whole} s on these "
                         "machines: a run, then the best run again against each control)")


def fit(plan, opts: Options, log=print):
    """The plan with its space fitted to the tune's service: the values it cannot take left out, and said."""
    from lab.experiment.tune import trials
    fitted, left = plan.space.fitted(trials.refuses(opts, plan.control, plan.base))
    if not fitted.params:
        raise ValueError(f"tune: {opts.service.name if opts.service else 'the service'} can take none of the "
                         "space's knobs: " + "; ".join(f"{k}: {why}" for k, why in left.items()))
    for knob, why in left.items():
        log(f"tune: {knob} left out of the space: {why}")
    return dataclasses.replace(plan, space=fitted)


def main(args) -> int:
    from lab.experiment.tune import command
    opts = args.options
    plan = plan_of(args)
    check_warmup(opts, plan)
    s, opts = preflight.ready(opts, trials=1)
    kind = "hosts" if opts.hosts is not None else lifecycle.kind(s)
    plan = dataclasses.replace(plan, overhead_s=command.OVERHEAD_S.get(kind, max(command.OVERHEAD_S.values())),
                               kind=kind, cold=plan.cold or args.cold)
    if args.resume is None:          # a resumed tune goes on with what its budget has left, whatever that holds
        check_budget(plan, plan.budget_s, opts.profile.ramp_up_s)
        plan = fit(plan, opts)       # a resumed tune's space was fitted when it began
    run.validate(opts, s)            # the control and the tune's own --set values, before any trial
    preflight.namespace_free(opts)
    code, folder = command.execute(opts, s, plan, resume_folder=args.resume)
    reporting.index_add(Path(folder))
    run.take_down(opts)
    return code
