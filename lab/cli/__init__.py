"""./start.sh: the lab's command line. Parses, then hands each command to the module that does it."""
from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import signal
import subprocess
import sys
from pathlib import Path

from lab import lock, machines, paths, steps
from lab.cli.arguments import INSIST_MEMORY_HELP, add_run_options, parser  # noqa: F401 - the command line's own
from lab.experiment import check, design, disk, load, record, reporting, run, service, service_check, sweep
from lab.experiment.load import plan_check
from lab.experiment.run import seconds  # noqa: F401 - tests read durations as the command line does
from lab.machines import box, containers, lifecycle, memory, netns, prereqs, settings, vagrant
from lab.provision import hosts, hosts_down, jars, knob_sets, knobs, machine_fit, playbook


def cmd_provision(overrides: dict, s: settings.Settings, insist_memory: bool = False) -> int:
    sample = service.ansible_vars(service.load(service.DEFAULT), overrides)     # the default service's machines
    playbook.validate({"machines": s.machines, "management_network": s.management_network,
                        "memory_mb": s.memory_mb}, overrides, insist_memory=insist_memory, service_vars=sample)
    if not lifecycle.running():
        raise lifecycle.LabError("the machines are not up (./start.sh up)")
    wanted = design.box_suites({vm: {**design.config_knobs(vm), **overrides.get(vm, {})} for vm in machines.NAMES})
    lifecycle.onto_boxes(s, wanted)         # --set jvm_version: that machine is made again from its box
    resolved = vagrant.read_resolved() or {}
    with steps.step("provision both machines (Ansible)"):
        ran = playbook.run(resolved, overrides, log=steps.note, insist_memory=insist_memory, service_vars=sample)
    if ran:
        memory.report_memory(list(ran.machines), steps.note)
    return 0


def cmd_exec(argv: list[str]) -> int:
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise lifecycle.LabError("exec needs a command, e.g. ./start.sh exec -- ssh -F .lab/ssh_config default")
    if not netns.healthy():
        raise lifecycle.LabError("the lab is not up (./start.sh up)")
    return subprocess.run(netns.wrap(argv), env=vagrant.vagrant_env(), cwd=paths.ROOT).returncode


# a command's own options that share a name (dest) with a run option
COMMAND_OPTIONS = {"provision": {"overrides", "insist_memory"}, "report": {"warmup"}, "sweep": "run", "ablate": "run",
                   "tune": "run", "down": {"hosts"}}


def contradictions(args, p: argparse.ArgumentParser) -> list[str]:
    """Options that contradict each other or do nothing where they were given: refused, not ignored."""
    if args.command == "up" and getattr(args, "hosts", None) is not None:
        return ["`./start.sh up` brings the lab's VMs up: with --hosts the machines are your hosts, which the lab "
                "does not bring up (run `./start.sh --hosts INVENTORY`)"]
    if args.command is not None:
        own = COMMAND_OPTIONS.get(args.command, set())
        if own == "run":        # sweep, ablate: every trial is a full run
            return run.contradictions(args)
        given = [d for d in args.run_options if d not in own and getattr(args, d) != p.get_default(d)]
        return [f"--{d.replace('_', '-') if d != 'overrides' else 'set'} is a run option: it does nothing with "
                f"`./start.sh {args.command}`" for d in given]
    return run.contradictions(args)


def run_options(args) -> run.Options:
    """The run's options, checked: bad input fails here, before anything starts or is checked on the host."""
    steps = args.model == "steps"
    profile = load.named(args.load, model=args.model, users=args.users,
                         ramp_up_s=load.STEPS_WARMUP_S if steps and args.ramp_up is None else args.ramp_up,
                         duration_s=args.duration, rate_per_s=args.rate,
                         keep_alive=False if args.no_keep_alive else None,
                         step_rates=args.rates, step_s=args.stage, p99_target_ms=args.p99_target)
    overrides = (["profiler_events=[cpu,alloc,lock]"] if args.profile else []) + args.overrides
    chosen = dict(knob_sets.parse_choice(text, machines.NAMES) for text in args.knob_sets)
    opts = run.Options(profile=profile, warmup_s=args.warmup, label=args.label, overrides=overrides,
                       down=args.down, provision=args.provision, repeat=args.repeat, aa=args.aa, tls=args.tls,
                       knob_sets={side: name for side, name in chosen.items() if name != side}, hosts=args.hosts,
                       insist_memory=args.insist_memory, cores=args.cores,
                       service=chosen_service(args.service_name, args.plan), gates=tuple(args.gates))
    reporting.check_gates(opts.gates)
    return opts          # Options checked itself: --set, --repeat, --aa, --knob-set, --label, --warmup


def chosen_service(name: str | None, plan: Path | None) -> service.Service:
    """--service's descriptor, checked, with --plan's plan (checked) instead of its own; ValueError naming the
    problem."""
    if name is None and plan is not None:
        raise ValueError("--plan runs a plan of yours against a service of yours: add --service NAME|PATH (the "
                         "lab's sample app runs the lab's own plan, jmeter/plan.jmx)")
    found = service.load(name or service.DEFAULT)
    return found if plan is None else dataclasses.replace(found, plan=plan_check.check(plan))


def sweep_plan(args, opts: run.Options) -> sweep.Plan:
    """The sweep's or ablation's trials on the tuned side's knob set; ValueError naming what is wrong."""
    configuration = opts.trials()[0].configurations["tuned"]
    if args.command == "ablate":
        return sweep.ablation_plan(configuration)
    return sweep.sweep_plan([sweep.parse_axis(a) for a in args.axes], configuration, args.max_trials)


def _terminated(signum, frame):
    raise KeyboardInterrupt(f"signal {signal.Signals(signum).name}")


def interruptible() -> None:
    """Ctrl-C and SIGTERM both stop the lab the way Ctrl-C does (run.json and the report say where), also
    when the lab was started with SIGINT ignored (from a background job or nohup, which children inherit)."""
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, _terminated)


# the commands that change the lab take its lock (one at a time); those that only read need neither it nor root
LOCKED = (None, "sweep", "ablate", "tune", "up", "down", "provision", "prereqs")
WITHOUT_ROOT = ("report", "compare", "status", "service", "runs", "history", "gate")


def main(argv: list[str] | None = None) -> int:
    interruptible()
    p = parser()
    args = p.parse_args(argv)
    refused = contradictions(args, p)
    if refused:
        for problem in refused:
            print(f"start.sh: {problem}", file=sys.stderr)
        return 2
    if os.geteuid() != 0 and args.command not in WITHOUT_ROOT:
        print("start.sh: the lab needs root (network namespace, loop devices, libvirt); run it with sudo (report, "
              "compare, status and service check do not)", file=sys.stderr)
        return 1
    try:
        if args.command == "report":
            return reporting.report(args.run_dir, args.warmup)
        if args.command == "compare":
            return cmd_compare(args.run_dirs, args.out)
        if args.command == "service":
            return service_check.check(args.service, steps.note)
        if args.command in ("runs", "history", "gate"):
            return cmd_history(args)
        if args.command == "status" and os.geteuid() != 0:
            return status_without_root()
        opts = run_options(args) if args.command in (None, "sweep", "ablate", "tune") else None
        command = "./start.sh " + " ".join(sys.argv[1:] if argv is None else argv)
        with lock.hold(command.strip(), log=steps.note) if args.command in LOCKED else contextlib.nullcontext():
            return dispatch(args, opts)
    except settings.SettingsError as bad:
        print(f"start.sh: bad setting: {bad}", file=sys.stderr)
        return 2
    except (lifecycle.LabError, box.BoxError, netns.NetnsError, vagrant.MachineError, prereqs.PrereqError,
            containers.ContainerError, playbook.ProvisionError, jars.JarError, check.RunError, hosts.HostsError,
            lock.Busy, disk.NoSpace, service_check.CheckFailed) as failure:
        print(f"start.sh: {failure}", file=sys.stderr)
        return 1
    except ValueError as failure:         # bad input on the command line
        print(f"start.sh: {failure}", file=sys.stderr)
        return 2
    except OSError as failure:            # the host's: a full disk, a permission; named, never a traceback
        where = f"{failure.filename}: " if failure.filename else ""
        print(f"start.sh: {where}{failure.strerror or failure}"
              + (" (the disk is full)" if disk.is_full(failure) else ""), file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("start.sh: interrupted", file=sys.stderr)
        return 130


def dispatch(args, opts: run.Options | None) -> int:
    """A command that may change the lab (with its lock held when it does): checked, then done."""
    overrides = knobs.parse_overrides(args.overrides) if args.command == "provision" else None
    s = settings.load()
    if opts is not None or args.command == "provision":     # what the machines' kind lets a knob set do
        machine_fit.use("hosts" if opts is not None and opts.hosts is not None else lifecycle.kind(s))
    plan = sweep_plan(args, opts) if args.command in ("sweep", "ablate") else None
    if opts is not None:            # before anything starts: a run that would fill the disk is refused
        disk.check(opts.profile, len(plan.points) if plan else opts.repeat, paths.RESULTS)
    if opts is not None and opts.hosts is not None:     # before the knobs: their memory is what must fit
        with steps.step(f"the hosts of {opts.hosts}: SSH, sudo, facts (nothing is changed)"):
            opts.reached = hosts.prepare(opts.hosts, steps.note)
    if plan is not None:
        print(sweep.describe(plan, opts.profile.planned_s), flush=True)
        sweep.validate(plan, opts, s, run)
    elif opts is not None:
        run.validate(opts, s)        # bad knobs are named before anything else is looked at
    if args.command == "down" and args.hosts is not None:    # real hosts: the lab's firewall and HTTPD off them
        with steps.step(f"the lab off the hosts of {args.hosts} (its firewall table, HTTPD)"):
            hosts_down.down(args.hosts, steps.note)
        return 0
    owner = netns.foreign_owner() if opts is None or opts.hosts is None else None   # hosts: no namespace
    if owner and args.command in ("up", "down", "exec", "sweep", "ablate", "tune", None):
        raise lifecycle.LabError(f"the lab namespace {netns.NAME} is taken by the lab in {owner}: "
                                 f"run ./start.sh down there first (only one lab can run on a host)")
    if args.command is None:
        return run.execute(opts, s)
    if args.command == "tune":
        from lab.cli import tune_command  # optuna (0.2 s to import) only for the command that searches
        return tune_command.execute(args, opts, s)
    if plan is not None:
        code = sweep.execute(plan, opts, s)     # validates every trial first
        run.take_down(opts)
        return code
    if args.command == "up":     # each machine on the box of its own knob set's Java
        lifecycle.up(s, design.box_suites({vm: design.config_knobs(vm) for vm in machines.NAMES}))
    elif args.command == "down":
        lifecycle.down()
    elif args.command == "status":
        lifecycle.status()
    elif args.command == "prereqs":
        lifecycle.install_prereqs(s.provider)
    elif args.command == "provision":
        return cmd_provision(overrides, s, args.insist_memory)
    else:
        return cmd_exec(args.argv)
    return 0


def cmd_compare(run_dirs: list[Path], out: Path | None) -> int:
    """The comparison in a new folder: --out, or results/<stamp>-compare (another in the same second: -2, …)."""
    if out is not None and out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise ValueError(f"--out {out}: exists and is not an empty folder: name a new one")
    try:
        folder = out or record.make_run_dir("compare", paths.RESULTS)
    except PermissionError as denied:
        raise lifecycle.LabError(f"{denied.filename}: {denied.strerror}: results/ is not yours to write (runs made "
                                 "with sudo leave it root's): put the comparison elsewhere with --out FOLDER") from None
    try:
        return reporting.compare(run_dirs, folder)
    except ValueError:              # bad run folders: the comparison's folder made for them goes again
        if out is None:
            folder.rmdir()
        raise


def _given(*options: tuple[str, str | None]) -> list[str]:
    """[flag, value, …] of the options given a value."""
    return [a for flag, value in options if value for a in (flag, value)]


def cmd_history(args) -> int:
    """runs, history, gate: the report package's commands of the same names over results/ (report/history/)."""
    if args.command == "gate":
        return reporting.report_command("gate", args.folder, *reporting.gate_args(tuple(args.folder_gates)))
    if not paths.RESULTS.is_dir():
        print(f"no runs yet: {paths.RESULTS} does not exist")
        return 0
    filters = _given(("--label", args.filter_label), ("--since", args.since), ("--service", args.filter_service))
    if args.command == "runs":
        return reporting.report_command("runs", paths.RESULTS, *filters)
    out = record.make_run_dir("history", paths.RESULTS)
    code = reporting.report_command("history", paths.RESULTS, out, *filters,
                                    *_given(("--ignore", args.ignore), ("--also", args.also)))
    if code != 0 and not any(out.iterdir()):
        out.rmdir()
    return code


def status_without_root() -> int:
    """`./start.sh status` without root: what the lab's files say. The machines' state, memory and placement are
    libvirt's, in the lab's namespace: root's."""
    resolved = vagrant.read_resolved() or {}
    print(f"lab namespace {netns.NAME}: {'present' if netns.exists() else 'absent'}; accelerator: "
          f"{resolved.get('accelerator', '-')} ({resolved.get('accelerator_reason', 'not resolved yet')})")
    for name in machines.NAMES:
        print(f"{name:8} ip {resolved.get('machines', {}).get(name, '-')}")
    print("not shown without root: each machine's state, memory, CPUs, uptime and vCPU placement (libvirt and the "
          "lab namespace are root's): sudo ./start.sh status", file=sys.stderr)
    return 0
