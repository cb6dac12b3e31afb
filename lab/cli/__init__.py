"""./start.sh: the lab's command line. Parses, then hands each command to the module that does it."""
from __future__ import annotations

import argparse
import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

from lab import lock, machines, paths, steps
from lab.experiment import check, disk, load, record, reporting, run, sweep
from lab.experiment.run import milliseconds, rates, seconds
from lab.machines import box, lifecycle, memory, netns, prereqs, settings, vagrant
from lab.provision import hosts, hosts_down, jars, knob_sets, knobs, playbook

DESCRIPTION = """\
Camel Tuning Lab: twin machines "default" and "tuned" (512 MB, 2 vCPUs each) under the same load.

./start.sh [run options]   the full run: up if needed, build, provision, check, load both machines at once,
                           collect into results/<run-id>/, report (report.html, summary.md). The machines
                           stay up for the next try unless --down. Ctrl-C stops the load and still reports.
  e.g. ./start.sh --duration 5m --users 50 --label quick --set tuned:tomcat_threads_max=200
  ./start.sh --aa --duration 5m --label aa       A/A: both machines run the default configuration
  ./start.sh --repeat 2 --duration 5m            two trials, the machines' roles swapped in the second
  ./start.sh --knob-set tuned=article-2018 --insist-memory   the 2018 article's set on the tuned column
                                                 (it needs more than 512 MB by the lab's estimate)
  ./start.sh --hosts my-hosts.yml --duration 10m   the same run on real hosts (README: Real hosts)

commands:
  report    (re)write the report of a run folder: ./start.sh report results/<run-id> [--warmup S]
  compare   several run folders side by side: ./start.sh compare results/<run-a> results/<run-b> …
  up        install missing host prerequisites, build or reuse the base box, bring both machines up
  status    each machine's state, IP, provider, accelerator, memory, CPUs, uptime and CPU placement
  down      destroy both machines and stop everything the lab started
  prereqs   only install the missing host prerequisites (what up does first)
  provision build the app, then provision both machines with Ansible (knobs: ansible/knobs.yml,
            ansible/knob_sets/tuned.yml; --set [machine:]knob=value for this run only)
  exec      run a command inside the lab's network namespace (e.g. ssh -F .lab/ssh_config default)

Machine settings live in lab/machines/machines.yml; override one for a run with LAB_<NAME>, e.g.
LAB_ACCELERATOR=tcg ./start.sh up."""


INSIST_MEMORY_HELP = ("run a configuration whose memory estimate exceeds the machine's, knowing it may swap or be "
                      "OOM-killed (without it such knobs are refused)")


def add_run_options(add) -> None:
    """The run options, given to `add` (a parser's or group's add_argument)."""
    d = load.Profile()
    add("--load", default="lab", choices=tuple(load.LOADS), metavar="LOAD",
        help="the named load the options below change: lab (the request mix; default) or article-2018 "
             "(the article's plan: one backend-calling GET, no keep-alive, 10 s timeouts, 150 users over "
             "150 s, 5 minutes)")
    add("--duration", type=seconds, default=None, metavar="TIME",
        help=f"hold at full load after the ramp-up (default {d.duration_s // 60}m; article-2018: 5m)")
    add("--users", type=int, default=None, help=f"threads per machine, closed model (default {d.users})")
    add("--ramp-up", type=seconds, default=None, metavar="TIME",
        help=f"time to start all users (default {d.ramp_up_s}s: one per second); steps model: the warm-up at "
             f"the first stage's rate before the judged stages (default {load.STEPS_WARMUP_S}s)")
    add("--warmup", type=seconds, default=None, metavar="TIME",
        help="excluded from the summary figures, from the first sample (default: the ramp-up)")
    add("--model", choices=("closed", "open", "steps"), default=d.model,
        help="closed: users loop; open: arrivals at --rate whatever the server does; steps: a capacity "
             "search, arrivals at each of --rates for --stage (default closed)")
    add("--rate", type=float, default=None, help=f"open model: req/s per machine (default {d.rate_per_s:g})")
    add("--rates", type=rates, default=None, metavar="R1,R2,…",
        help="steps model: req/s per machine of each stage, rising, e.g. 10,20,30,40")
    add("--stage", type=seconds, default=None, metavar="TIME",
        help=f"steps model: each stage's length (default {d.step_s}s)")
    add("--p99-target", type=milliseconds, default=None, metavar="TIME",
        help=f"steps model: a stage is sustained only with p99 at or under this (default "
             f"{d.p99_target_ms / 1000:g}s; also errors ≤ 0.1 %% and ≥ 90 %% of the offered rate served)")
    add("--no-keep-alive", action="store_true", help="a new connection per request (closed model)")
    add("--cores", choices=("swap", "fixed"), default="swap", help="swap (default): pinned machines trade host "
        "cores half-way through the measured window (a core's bias cancels); fixed: each keeps its own")
    add("--tls", action="store_true",
        help="the load over HTTPS through HTTPD's TLS front (443, the lab's self-signed certificate)")
    add("--label", default="", help="added to the run folder's name, e.g. threads200")
    add("--set", dest="overrides", action="append", default=[], metavar="[CONFIG:]KNOB=VALUE",
        help="override a knob of a configuration (default or tuned; both without a prefix) for this "
             "run, e.g. --set tuned:tomcat_threads_max=250 (repeatable)")
    add("--profile", action="store_true",
        help="profile both JVMs (CPU, allocations, locks) for flame graphs; off by default: it costs the "
             "JVMs, unequally (the same as --set profiler_events=[cpu,alloc,lock])")
    add("--repeat", type=int, default=1, metavar="N",
        help="N trials in one command, each restarted alike; from the second on the two configurations "
             "alternate between the machines (crossover) and a combined report cancels machine bias")
    add("--knob-set", dest="knob_sets", action="append", default=[], metavar="[SIDE=]SET",
        help="run a named knob set (ansible/knob_sets/SET.yml) on a side instead of its own, e.g. "
             "--knob-set tuned=article-2018 (side tuned when left out; default stays the catalog unless "
             f"chosen; sets: {', '.join(knob_sets.names())})")
    add("--aa", nargs="?", const="default", default=None, metavar="SET",
        help="A/A calibration: both machines run knob set SET (default unless named) to measure the "
             "twins' own difference")
    add("--hosts", type=Path, default=None, metavar="INVENTORY",
        help="run on real hosts instead of the VMs: an Ansible inventory naming `default` and `tuned` (and "
             "optionally a `loadgen` group for JMeter's remote engines); see README, Real hosts")
    add("--down", action="store_true", help="destroy the machines after the run")
    add("--provision", action="store_true",
        help="run Ansible even when nothing changed since the machines were last provisioned")
    add("--insist-memory", action="store_true", help=INSIST_MEMORY_HELP)


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="./start.sh", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    r = p.add_argument_group("run options (the full run, no command)")
    add_run_options(r.add_argument)
    p.set_defaults(run_options=[a.dest for a in r._group_actions])
    sub = p.add_subparsers(dest="command", metavar="command")
    sub.add_parser("up", help="bring both machines up")
    sub.add_parser("status", help="show the machines")
    dn = sub.add_parser("down", help="destroy the machines, stop the lab (with --hosts: the lab's firewall table and "
                                     "HTTPD off your hosts, nothing else)")
    dn.add_argument("--hosts", type=Path, default=argparse.SUPPRESS, metavar="INVENTORY",
                    help="the inventory of a --hosts run: delete the lab's nftables table and stop HTTPD there")
    sub.add_parser("prereqs", help="install missing host prerequisites")
    pv = sub.add_parser("provision", help="provision both machines (Ansible)")
    pv.add_argument("--set", dest="overrides", action="append", default=[], metavar="[MACHINE:]KNOB=VALUE",
                    help="override a knob for this run, e.g. --set tuned:tomcat_threads_max=250 (repeatable)")
    pv.add_argument("--insist-memory", action="store_true", help=INSIST_MEMORY_HELP)
    sw = sub.add_parser("sweep", help="one trial per knob value, default as the control")
    sw.add_argument("axes", nargs="+", metavar="tuned:KNOB=V1,V2,…",
                    help="the values to try on the tuned side; several knobs: every combination")
    sw.add_argument("--max-trials", type=int, default=sweep.MAX_TRIALS, metavar="N",
                    help=f"refuse a plan of more trials (default {sweep.MAX_TRIALS})")
    ab = sub.add_parser("ablate", help="the tuned set with one tier's changes reverted at a time")
    for command in (sw, ab):        # run options before or after the command; typed ones only (no default here)
        run_group = command.add_argument_group("run options (as for the full run; before or after the command)")
        add_run_options(lambda *names, _group=run_group, **kw:
                        _group.add_argument(*names, **{**kw, "default": argparse.SUPPRESS}))
    rp = sub.add_parser("report", help="(re)write a run folder's report")
    rp.add_argument("run_dir", type=Path, metavar="RUN_FOLDER", help="e.g. results/20261123T101500Z-quick")
    rp.add_argument("--warmup", type=lambda t: t if t == "auto" else seconds(t), default=None, metavar="TIME|auto",
                    help="warm-up to exclude (default: the one in run.json); auto: from where both machines settled")
    cp = sub.add_parser("compare", help="several run folders side by side")
    cp.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_FOLDER",
                    help="two or more run folders; changes are stated against the first")
    cp.add_argument("--out", type=Path, default=None, metavar="FOLDER",
                    help="a new folder for the comparison (default results/<stamp>-compare; e.g. one of your own "
                         "when results/ is root's)")
    ex = sub.add_parser("exec", help="run a command in the lab namespace")
    ex.add_argument("argv", nargs=argparse.REMAINDER, help="the command (after --)")
    return p


def cmd_provision(overrides: dict, s: settings.Settings, insist_memory: bool = False) -> int:
    playbook.validate({"machines": s.machines, "management_network": s.management_network,
                        "memory_mb": s.memory_mb}, overrides, insist_memory=insist_memory)
    if not lifecycle.running():
        raise lifecycle.LabError("the machines are not up (./start.sh up)")
    resolved = vagrant.read_resolved() or {}
    with steps.step("provision both machines (Ansible)"):
        ran = playbook.run(resolved, overrides, log=steps.note, insist_memory=insist_memory)
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
                   "down": {"hosts"}}


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
                       insist_memory=args.insist_memory, cores=args.cores)
    return opts          # Options checked itself: --set, --repeat, --aa, --knob-set, --label, --warmup


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
LOCKED = (None, "sweep", "ablate", "up", "down", "provision", "prereqs")
WITHOUT_ROOT = ("report", "compare", "status")


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
              "compare and status do not)", file=sys.stderr)
        return 1
    try:
        if args.command == "report":
            return reporting.report(args.run_dir, args.warmup)
        if args.command == "compare":
            return cmd_compare(args.run_dirs, args.out)
        if args.command == "status" and os.geteuid() != 0:
            return status_without_root()
        opts = run_options(args) if args.command in (None, "sweep", "ablate") else None
        command = "./start.sh " + " ".join(sys.argv[1:] if argv is None else argv)
        with lock.hold(command.strip(), log=steps.note) if args.command in LOCKED else contextlib.nullcontext():
            return dispatch(args, opts)
    except settings.SettingsError as bad:
        print(f"start.sh: bad setting: {bad}", file=sys.stderr)
        return 2
    except (lifecycle.LabError, box.BoxError, netns.NetnsError, vagrant.MachineError, prereqs.PrereqError,
            playbook.ProvisionError, jars.JarError, check.RunError, hosts.HostsError, lock.Busy,
            disk.NoSpace) as failure:
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
    if owner and args.command in ("up", "down", "exec", "sweep", "ablate", None):
        raise lifecycle.LabError(f"the lab namespace {netns.NAME} is taken by the lab in {owner}: "
                                 f"run ./start.sh down there first (only one lab can run on a host)")
    if args.command is None:
        return run.execute(opts, s)
    if plan is not None:
        code = sweep.execute(plan, opts, s)     # validates every trial first
        run.take_down(opts)
        return code
    if args.command == "up":
        lifecycle.up(s)
    elif args.command == "down":
        lifecycle.down()
    elif args.command == "status":
        lifecycle.status()
    elif args.command == "prereqs":
        lifecycle.install_prereqs()
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
