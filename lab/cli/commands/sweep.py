"""One trial per knob value, default as the control; `ablate` (the tuned set with one tier's changes reverted at a
time) is the same machinery with another plan."""
from __future__ import annotations

from lab.experiment import preflight, run, sweep

HELP = "one trial per knob value, default as the control"
NEEDS_ROOT = True
TAKES_LOCK = True
RUN_OPTIONS = "all"


def add_arguments(parser) -> None:
    parser.add_argument("axes", nargs="+", metavar="tuned:KNOB=V1,V2,…",
                        help="the values to try on the tuned side; several knobs: every combination")
    parser.add_argument("--max-trials", type=int, default=sweep.MAX_TRIALS, metavar="N",
                        help=f"refuse a plan of more trials (default {sweep.MAX_TRIALS})")


def plan_of(args) -> sweep.Plan:
    """The sweep's trials on the tuned side's knob set; ValueError naming what is wrong."""
    configuration = args.options.configurations["tuned"].base
    return sweep.sweep_plan([sweep.parse_axis(a) for a in args.axes], configuration, args.max_trials)


def main(args, plan: sweep.Plan | None = None) -> int:
    opts = args.options
    plan = plan or plan_of(args)
    s, opts = preflight.ready(opts, trials=len(plan.points))
    print(sweep.describe(plan, opts.profile.planned_s), flush=True)
    sweep.validate(plan, opts, s)
    preflight.namespace_free(opts)
    code = sweep.execute(plan, opts, s)
    run.take_down(opts)
    return code
