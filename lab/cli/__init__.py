"""./start.sh: the lab's command line. Parses, refuses what contradicts itself, then hands the command to its module
(the table in lab/cli/commands/) with the lab's lock held where the command changes the lab. Every failure the lab
names (lab/errors.py) is one line on stderr and its exit code, never a traceback."""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import signal
import sys
from pathlib import Path

from lab import lock, machines, redact, steps
from lab.cli import commands
from lab.cli.arguments import parser
from lab.errors import LabError
from lab.experiment import disk, load, options, preflight, reporting, service
from lab.experiment.load import plan_check
from lab.provision import knob_sets


def contradictions(args, p: argparse.ArgumentParser) -> list[str]:
    """Options that contradict each other or do nothing where they were given: refused, not ignored."""
    if args.command == "up" and getattr(args, "hosts", None) is not None:
        return ["`./start.sh up` brings the lab's VMs up: with --hosts the machines are your hosts, which the lab "
                "does not bring up (run `./start.sh --hosts INVENTORY`)"]
    own = commands.of(args.command).RUN_OPTIONS
    if own == "all":            # the full run, sweep, ablate, tune: every trial is a full run
        return options.contradictions(args)
    given = [d for d in args.run_options if d not in own and getattr(args, d) != p.get_default(d)]
    return [f"--{d.replace('_', '-') if d != 'overrides' else 'set'} is a run option: it does nothing with "
            f"`./start.sh {args.command}`" for d in given]


def run_options(args) -> options.Options:
    """The run's options, checked: bad input fails here, before anything starts or is checked on the host."""
    steps = args.model == "steps"
    profile = load.named(args.load, model=args.model, users=args.users,
                         ramp_up_s=load.STEPS_WARMUP_S if steps and args.ramp_up is None else args.ramp_up,
                         duration_s=args.duration, rate_per_s=args.rate,
                         keep_alive=False if args.no_keep_alive else None,
                         step_rates=args.rates, step_s=args.stage, p99_target_ms=args.p99_target)
    overrides = (["profiler_events=[cpu,alloc,lock]"] if args.profile else []) + args.overrides
    chosen = dict(knob_sets.parse_choice(text, machines.NAMES) for text in args.knob_sets)
    opts = options.checked(profile=profile, warmup_s=args.warmup, until_settled_s=args.until_settled,
                           label=args.label, overrides=tuple(overrides), down=args.down, provision=args.provision,
                           repeat=args.repeat, aa=args.aa, tls=args.tls,
                           knob_sets={side: name for side, name in chosen.items() if name != side},
                           hosts=args.hosts, insist_memory=args.insist_memory, cores=args.cores,
                           service=chosen_service(args.service_name, args.plan, args.allow_plan_code,
                                                  args.service_root),
                           gates=tuple(args.gates))
    reporting.check_gates(opts.gates)
    return opts


def chosen_service(name: str | None, plan: Path | None, allow_code: bool = False,
                   root: Path | None = None) -> service.Service:
    """--service's descriptor, checked, with --plan's plan (checked) instead of its own; ValueError naming the
    problem. allow_code: --allow-plan-code (a plan that runs code in JMeter taken); root: --service-root."""
    if name is None and plan is not None:
        raise ValueError("--plan runs a plan of yours against a service of yours: add --service NAME|PATH (the "
                         "lab's sample app runs the lab's own plan, jmeter/plan.jmx)")
    if name is None and root is not None:
        raise ValueError("--service-root widens the folder a descriptor of yours may reach: add --service PATH")
    found = service.load(name or service.DEFAULT, allow_code, root)
    return found if plan is None else dataclasses.replace(found, plan=plan_check.check(plan, allow_code))


def _terminated(signum, frame):
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def interruptible() -> None:
    """Ctrl-C and SIGTERM both stop the lab the way Ctrl-C does (run.json and the report say where), also
    when the lab was started with SIGINT ignored (from a background job or nohup, which children inherit)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _terminated)


def main(argv: list[str] | None = None) -> int:
    interruptible()
    p = parser()
    args = p.parse_args(argv)
    refused = contradictions(args, p)
    if refused:
        for problem in refused:
            print(f"start.sh: {problem}", file=sys.stderr)
        return 2
    command = commands.of(args.command)
    if os.geteuid() != 0 and command.NEEDS_ROOT:
        without = ", ".join(name for name, c in commands.COMMANDS.items() if not c.NEEDS_ROOT)
        print(f"start.sh: the lab needs root (network namespace, loop devices, the machines); run it with sudo "
              f"({without} do not)", file=sys.stderr)
        return 1
    trials = command.RUN_OPTIONS == "all"      # the full run, sweep, ablate, tune
    try:
        # the machines' image made ahead while the options, the app's jar and the knobs are checked; cancelled
        # however the command ends before `up` takes it (bad input changes nothing)
        with preflight.images_ahead(args.hosts) if trials else contextlib.nullcontext():
            if trials:                  # checked before the lock: bad input fails before anything waits
                args.options = run_options(args)
            typed = "./start.sh " + " ".join(redact.argv(sys.argv[1:] if argv is None else argv))
            with lock.hold(typed.strip(), log=steps.note) if command.TAKES_LOCK else contextlib.nullcontext():
                return command.main(args)
    except LabError as failure:           # the lab's own: one message naming the problem (lab/errors.py)
        print(f"start.sh: {redact.redacted(str(failure))}", file=sys.stderr)     # a study's URL, a tool's output
        return failure.exit_code
    except ValueError as failure:         # bad input refused by a check that raises ValueError
        print(f"start.sh: {redact.redacted(str(failure))}", file=sys.stderr)
        return 2
    except OSError as failure:            # the host's: a full disk, a permission; named, never a traceback
        where = f"{failure.filename}: " if failure.filename else ""
        print(f"start.sh: {where}{failure.strerror or failure}"
              + (" (the disk is full)" if disk.is_full(failure) else ""), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("start.sh: interrupted", file=sys.stderr)
        return 130
