"""`./start.sh tune`: the tune's plan from the command line, checked before anything starts (the space, the holds,
the floor, the budget; a resumed tune's own from its tune.json), then the search (lab/experiment/tune/command.py),
the tune folder indexed, the machines taken down when asked."""
from __future__ import annotations

import json
from pathlib import Path

from lab.experiment import reporting, run, trial
from lab.experiment.tune import command, confirm, space, trials
from lab.provision import knob_sets, knobs


def study_url(url: str) -> str:
    """A study's storage as optuna's RDBStorage takes it: sqlite:///PATH (workers on one controller) or
    postgresql://USER@HOST/DB (workers on several, with a PostgreSQL driver installed); ValueError naming the
    problem."""
    scheme = url.split("://", 1)[0] if "://" in url else ""
    if scheme == "sqlite":
        folder = Path(url.removeprefix("sqlite:///")).parent
        if not url.startswith("sqlite:///") or not folder.is_dir():
            raise ValueError(f"--study {url}: sqlite:///PATH with PATH's folder existing")
        return url
    if scheme.split("+")[0] == "postgresql":
        try:
            import psycopg2  # noqa: F401  (SQLAlchemy's default PostgreSQL driver)
        except ImportError:
            raise ValueError(f"--study {url}: PostgreSQL needs its driver here (pip install psycopg2-binary in "
                             ".venv)") from None
        return url
    raise ValueError(f"--study {url}: a storage URL, sqlite:///PATH or postgresql://USER@HOST/DB")


def plan_of(args) -> command.Plan:
    """The plan: a new tune's from its arguments, a resumed one's from its tune.json; ValueError naming the problem."""
    if args.resume is not None:
        try:
            saved = json.loads((args.resume / "tune.json").read_text())
        except (OSError, ValueError) as e:
            raise ValueError(f"--resume {args.resume}: not a tune folder (tune.json: {e})") from None
        if args.space is not None:
            raise ValueError("--resume goes on with the tune's own space: leave --space out")
        params = tuple(space.Param(**{**p, "choices": tuple(p.get("choices") or ())}) for p in saved["space"])
        budget = args.budget if args.budget is not None else saved["budget_s"]
        if args.control is not None or args.name is not None or args.study is not None:
            raise ValueError("--resume goes on with the tune's own control, knob set name and study: leave "
                             "--control, --name and --study out")
        if args.objective is not None or args.constraints is not None:
            raise ValueError("--resume goes on with the tune's own objective and constraints: leave --objective and "
                             "--constraint out")
        return command.Plan(space.Space(params), tuple(saved["holds_s"]), saved["floor"], budget,
                            saved.get("objective", "tps"), tuple(saved.get("constraints", trials.CONSTRAINTS)),
                            saved.get("control", knob_sets.DEFAULT), saved.get("name"), saved.get("study"))
    if args.budget is None:
        raise ValueError("tune: --budget TIME (e.g. 2h), or --resume FOLDER to go on with a tune")
    if not 0 <= args.floor < 1:
        raise ValueError(f"--floor {args.floor}: a fraction from 0 to 1, e.g. 0.05")
    holds = tuple(args.holds)
    if not holds or any(h <= 0 for h in holds) or list(holds) != sorted(set(holds)):
        raise ValueError(f"--holds {','.join(map(str, holds))}: positive, different, shortest first")
    specs = knobs.specs()
    chosen = space.from_file(args.space, specs) if args.space else space.from_catalog(specs)
    control = args.control or knob_sets.DEFAULT
    if control not in knob_sets.names():
        raise ValueError(f"--control {control}: not a knob set ({', '.join(knob_sets.names())})")
    if args.name is not None:
        confirm.check_name(args.name, "")           # a file of that name is another tune's: refused now
    if args.objective is not None and args.objective not in trials.OBJECTIVES:
        raise ValueError(f"--objective {args.objective}: one of {', '.join(trials.OBJECTIVES)}")
    constraints = tuple(args.constraints) if args.constraints is not None else trials.CONSTRAINTS
    reporting.check_gates(constraints)          # a constraint that cannot be read: refused now
    plan = command.Plan(chosen, holds, args.floor, args.budget, args.objective or "tps", constraints,
                        control=control, name=args.name,
                        study=study_url(args.study) if args.study is not None else None)
    whole = sum(plan.trial_s(h, 0) for h in holds) + plan.reserve_s(0)
    if args.budget < whole:
        raise ValueError(f"--budget {args.budget} s: not even one trial and its confirmations fit (~{whole} s: "
                         "every hold, then the best run again against each control)")
    return plan


def check_warmup(opts: run.Options, plan: command.Plan) -> None:
    """--warmup must leave every trial a measured window (it is cut from the ramp-up and the hold)."""
    shortest = opts.profile.ramp_up_s + plan.holds_s[0]
    if opts.warmup_s is not None and opts.warmup_s >= shortest:
        raise ValueError(f"--warmup {opts.warmup_s} s: the shortest trial lasts {shortest} s (ramp-up and the first "
                         "hold): lengthen --holds or shorten --warmup")


def execute(args, opts: run.Options, s) -> int:
    plan = plan_of(args)
    check_warmup(opts, plan)
    run.validate(opts, s)            # the control and the tune's own --set values, before any trial
    code, folder = command.execute(opts, s, plan, trial.run_trial, run.validate, run.run_series,
                                   resume_folder=args.resume)
    reporting.index_add(Path(folder))
    run.take_down(opts)
    return code
