"""./start.sh: the lab's command line. Parses, then calls one stage module per step."""
from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from lab import box, load, machines, netns, paths, prereqs, provision, run, settings, steps

DESCRIPTION = """\
Camel Tuning Lab: twin machines "default" and "tuned" (512 MB, 2 vCPUs each) under the same load.

./start.sh [run options]   the full run: up if needed, build, provision, check, load both machines at once,
                           collect into results/<run-id>/, report (report.html, summary.md). The machines
                           stay up for the next try unless --down. Ctrl-C stops the load and still reports.
  e.g. ./start.sh --duration 5m --users 50 --label quick --set tuned:tomcat_threads_max=200
  ./start.sh --aa --duration 5m --label aa       A/A: both machines run the default configuration
  ./start.sh --repeat 2 --duration 5m            two trials, the machines' roles swapped in the second

commands:
  report    (re)write the report of a run folder: ./start.sh report results/<run-id> [--warmup S]
  compare   several run folders side by side: ./start.sh compare results/<run-a> results/<run-b> …
  up        install missing host prerequisites, build or reuse the base box, bring both machines up
  status    each machine's state, IP, provider, accelerator, memory, CPUs, uptime and CPU placement
  down      destroy both machines and stop everything the lab started
  prereqs   only install the missing host prerequisites (what up does first)
  provision build the app, then provision both machines with Ansible (knobs: ansible/group_vars/all.yml,
            ansible/host_vars/tuned.yml; --set [machine:]knob=value for this run only)
  exec      run a command inside the lab's network namespace (e.g. ssh -F .lab/ssh_config default)

Machine settings live in lab/machines.yml; override one for a run with LAB_<NAME>, e.g.
LAB_ACCELERATOR=tcg ./start.sh up."""


class LabError(RuntimeError):
    """Any failure the user must read: printed as one message, exit 1."""


def seconds(text: str) -> int:
    """'90', '90s', '5m', '1h', '1h30m' → seconds."""
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s?)?", text.strip())
    if not text.strip() or not m or not any(m.groups()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 90, 90s, 5m, 1h30m)")
    h, mi, se = (int(g or 0) for g in m.groups())
    return h * 3600 + mi * 60 + se


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="./start.sh", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    d = load.Profile()
    r = p.add_argument_group("run options (the full run, no command)")
    r.add_argument("--duration", type=seconds, default=d.duration_s, metavar="TIME",
                   help=f"hold at full load after the ramp-up (default {d.duration_s // 60}m)")
    r.add_argument("--users", type=int, default=d.users, help=f"threads per machine, closed model (default {d.users})")
    r.add_argument("--ramp-up", type=seconds, default=d.ramp_up_s, metavar="TIME",
                   help=f"time to start all users (default {d.ramp_up_s}s: one per second)")
    r.add_argument("--warmup", type=seconds, default=None, metavar="TIME",
                   help="excluded from the summary figures, from the first sample (default: the ramp-up)")
    r.add_argument("--model", choices=("closed", "open"), default=d.model,
                   help="closed: users loop; open: arrivals at --rate whatever the server does (default closed)")
    r.add_argument("--rate", type=float, default=d.rate_per_s, help=f"open model: req/s per machine (default {d.rate_per_s:g})")
    r.add_argument("--no-keep-alive", action="store_true", help="a new connection per request (closed model)")
    r.add_argument("--label", default="", help="added to the run folder's name, e.g. threads200")
    r.add_argument("--set", dest="overrides", action="append", default=[], metavar="[CONFIG:]KNOB=VALUE",
                   help="override a knob of a configuration (default or tuned; both without a prefix) for this "
                        "run, e.g. --set tuned:tomcat_threads_max=250 (repeatable)")
    r.add_argument("--repeat", type=int, default=1, metavar="N",
                   help="N trials in one command, each restarted alike; from the second on the two configurations "
                        "alternate between the machines (crossover) and a combined report cancels machine bias")
    r.add_argument("--aa", nargs="?", const="default", default=None, metavar="CONFIG",
                   help="A/A calibration: both machines run CONFIG (default unless named) to measure the twins' "
                        "own difference")
    r.add_argument("--down", action="store_true", help="destroy the machines after the run")
    r.add_argument("--provision", action="store_true",
                   help="run Ansible even when nothing changed since the machines were last provisioned")
    sub = p.add_subparsers(dest="command", metavar="command")
    sub.add_parser("up", help="bring both machines up")
    sub.add_parser("status", help="show the machines")
    sub.add_parser("down", help="destroy the machines, stop the lab")
    sub.add_parser("prereqs", help="install missing host prerequisites")
    pv = sub.add_parser("provision", help="provision both machines (Ansible)")
    pv.add_argument("--set", dest="overrides", action="append", default=[], metavar="[MACHINE:]KNOB=VALUE",
                    help="override a knob for this run, e.g. --set tuned:tomcat_threads_max=250 (repeatable)")
    rp = sub.add_parser("report", help="(re)write a run folder's report")
    rp.add_argument("run_dir", type=Path, metavar="RUN_FOLDER", help="e.g. results/20261123T101500Z-quick")
    rp.add_argument("--warmup", type=lambda t: t if t == "auto" else seconds(t), default=None, metavar="TIME|auto",
                    help="warm-up to exclude (default: the one in run.json); auto: from where both machines settled")
    cp = sub.add_parser("compare", help="several run folders side by side")
    cp.add_argument("run_dirs", type=Path, nargs="+", metavar="RUN_FOLDER",
                    help="two or more run folders; changes are stated against the first")
    ex = sub.add_parser("exec", help="run a command in the lab namespace")
    ex.add_argument("argv", nargs=argparse.REMAINDER, help="the command (after --)")
    return p


def cmd_prereqs() -> int:
    with steps.step("host prerequisites"):
        need = prereqs.missing()
        if need:
            steps.note(f"installing {' '.join(need)}")
            prereqs.install(need)
        else:
            steps.note("all present")
    return 0


def _machines_running() -> bool:
    return netns.healthy() and set(machines.states().values()) == {"running"}


def _is_up(s: settings.Settings) -> bool:
    """Both machines running in a healthy lab; an error when they were made with other settings."""
    if not _machines_running():
        return False
    previous = machines.read_resolved() or {}
    if previous.get("requested") != json.loads(json.dumps(asdict(s))):
        raise LabError("the machines are up but were made with other settings; run ./start.sh down first")
    return True


def ensure_up(s: settings.Settings) -> dict:
    """For the full run: the lab up (brought up when it is not), and its resolved settings."""
    if _is_up(s):
        steps.note("both machines are already up")
    else:
        cmd_up(s)
    return machines.read_resolved() or {}


def cmd_up(s: settings.Settings) -> int:
    cmd_prereqs()
    if _is_up(s):
        print("The lab is already up; nothing changed.")
        return cmd_status()
    if netns.exists() and not netns.healthy():
        with steps.step("cleaning up a lab left behind"):
            for line in _teardown():
                steps.note(line)
    with steps.step("base box"):
        box_path, built = box.ensure(s)
        steps.note(f"{'built' if built else 'reusing'} {box_path.name}")
    try:
        with steps.step("lab network namespace and libvirt"):
            if not netns.healthy():
                netns.create()
        with steps.step("accelerator and CPU placement"):
            resolved = machines.resolve(s)
            machines.write_resolved(resolved)
            steps.note(f"accelerator {resolved['accelerator']} ({resolved['accelerator_reason']}); "
                       f"placement {resolved['cpusets'] or 'unpinned'}")
        with steps.step("register the box with Vagrant"):
            machines.ensure_box(box_path, resolved["box"])
        with steps.step("boot both machines (TCG: a few minutes)"):
            machines.up(s.boot_timeout)
        with steps.step("SSH to both machines"):
            machines.write_ssh_config()
            for name in machines.NAMES:
                result = machines.ssh(name, "true")
                if result.returncode != 0:
                    raise LabError(f"{name} booted but does not answer over SSH: {result.stderr.strip()[-300:]}")
    except BaseException as failure:
        print(f"\nstart.sh up failed: {failure}\nTearing down what was started…", file=sys.stderr)
        for line in _teardown():
            print(f"  {line}", file=sys.stderr)
        raise
    return cmd_status()


def _teardown() -> list[str]:
    """Machines, libvirt networks, daemons, namespace: whatever of them exists, also after a crash."""
    done = []
    if not netns.exists() and not any(Path("/etc/libvirt/qemu").glob(machines.DOMAIN_PREFIX + "*.xml")):
        return done
    if not netns.healthy():
        # Remains of a killed lab: a fresh namespace and libvirtd are needed to remove its domains.
        done += netns.destroy()
        netns.create()
    if machines.domains():
        machines.destroy()
        done += [f"domain {d} undefined (Vagrant had lost it)" for d in machines.undefine_leftover_domains()]
        done.append("machines destroyed")
    for net in machines.NETWORKS:
        virsh = ["virsh", "-c", netns.LIBVIRT_URI]
        subprocess.run(netns.wrap([*virsh, "net-destroy", net]), capture_output=True)
        if subprocess.run(netns.wrap([*virsh, "net-undefine", net]), capture_output=True).returncode == 0:
            done.append(f"libvirt network {net} removed")
    done += netns.destroy()
    paths.SETTINGS_JSON.unlink(missing_ok=True)
    machines.SSH_CONFIG.unlink(missing_ok=True)
    return done


def cmd_down() -> int:
    with steps.step("down"):
        done = _teardown()
        for line in done:
            steps.note(line)
        if not done:
            steps.note("nothing was running")
    leftovers = [n for n in machines.NAMES if Path(f"/etc/libvirt/qemu/{machines.DOMAIN_PREFIX}{n}.xml").exists()]
    if netns.exists() or leftovers:
        raise LabError(f"down left something behind: namespace={netns.exists()} domains={leftovers}")
    return 0


def cmd_provision(overrides: dict) -> int:
    if not _machines_running():
        raise LabError("the machines are not up (./start.sh up)")
    with steps.step("provision both machines (Ansible)"):
        provision.run(machines.read_resolved() or {}, overrides, log=steps.note)
    return 0


def cmd_status() -> int:
    resolved = machines.read_resolved() or {}
    states = machines.states()
    print(f"lab namespace: {'up' if netns.healthy() else 'down'}; accelerator: "
          f"{resolved.get('accelerator', '-')} ({resolved.get('accelerator_reason', 'not resolved yet')})")
    print(f"{'machine':8} {'state':12} {'ip':15} {'provider':8} {'accel':5} {'memory':>8} {'cpus':>4} "
          f"{'uptime':>8}  placement")
    for name in machines.NAMES:
        state = states[name]
        memory = cpus = uptime = "-"
        cores = "-"
        if state == "running":
            probe = machines.ssh(name, "free -m | awk '/^Mem:/{print $2}'; nproc; cut -d' ' -f1 /proc/uptime")
            if probe.returncode == 0 and len(probe.stdout.split()) == 3:
                mem, cpus, up_s = probe.stdout.split()
                memory, uptime = f"{mem} MB", f"{float(up_s):.0f} s"
            cores = machines.vcpu_placement(name)
        print(f"{name:8} {state:12} {resolved.get('machines', {}).get(name, '-'):15} {'libvirt':8} "
              f"{resolved.get('accelerator', '-'):5} {memory:>8} {cpus:>4} {uptime:>8}  {cores}")
    return 0


def cmd_exec(argv: list[str]) -> int:
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise LabError("exec needs a command, e.g. ./start.sh exec -- ssh -F .lab/ssh_config default")
    if not netns.healthy():
        raise LabError("the lab is not up (./start.sh up)")
    return subprocess.run(netns.wrap(argv), env=machines.vagrant_env(), cwd=paths.ROOT).returncode


def cmd_report(run_dir: Path, warmup_s: int | None) -> int:
    if not (run_dir / "run.json").is_file() and not any((run_dir / m).is_dir() for m in machines.NAMES):
        raise ValueError(f"{run_dir} is not a run folder (no run.json, no default/ or tuned/)")
    extra = [] if warmup_s is None else ["--warmup", str(warmup_s)]
    return subprocess.run([sys.executable, "-m", "report", str(run_dir), *extra], cwd=paths.ROOT).returncode


def cmd_compare(run_dirs: list[Path]) -> int:
    if len(run_dirs) < 2:
        raise ValueError("compare needs at least two run folders")
    for folder in run_dirs:
        if not (folder / "run.json").is_file():
            raise ValueError(f"{folder} is not a run folder (no run.json)")
    out = run.RESULTS / run.new_run_id("compare")
    return subprocess.run([sys.executable, "-m", "report.compare", str(out), *map(str, run_dirs)],
                          cwd=paths.ROOT).returncode


def run_options(args) -> run.Options:
    """The run's options, checked: bad input fails here, before anything starts or is checked on the host."""
    profile = load.Profile(model=args.model, users=args.users, ramp_up_s=args.ramp_up, duration_s=args.duration,
                           rate_per_s=args.rate, keep_alive=not args.no_keep_alive)
    opts = run.Options(profile=profile, warmup_s=args.warmup, label=args.label, overrides=args.overrides,
                       down=args.down, provision=args.provision, repeat=args.repeat, aa=args.aa)
    return opts          # Options checked itself: --set, --repeat, --aa, --label, --warmup


def cmd_run(opts: run.Options, s: settings.Settings) -> int:
    return run.execute(opts, ensure_up=lambda: ensure_up(s))


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "report":
            return cmd_report(args.run_dir, args.warmup)
        if args.command == "compare":
            return cmd_compare(args.run_dirs)
        opts = run_options(args) if args.command is None else None
        overrides = provision.parse_overrides(args.overrides) if args.command == "provision" else None
        s = settings.load()
        owner = netns.foreign_owner()
        if owner and args.command in ("up", "down", "exec", None):
            raise LabError(f"the lab namespace {netns.NAME} is taken by the lab in {owner}: "
                           f"run ./start.sh down there first (only one lab can run on a host)")
        if args.command is None:
            return cmd_run(opts, s)
        if args.command == "up":
            return cmd_up(s)
        if args.command == "down":
            return cmd_down()
        if args.command == "status":
            return cmd_status()
        if args.command == "prereqs":
            return cmd_prereqs()
        if args.command == "provision":
            return cmd_provision(overrides)
        return cmd_exec(args.argv)
    except settings.SettingsError as bad:
        print(f"start.sh: bad setting: {bad}", file=sys.stderr)
        return 2
    except (LabError, box.BoxError, netns.NetnsError, machines.MachineError, prereqs.PrereqError,
            provision.ProvisionError, run.RunError) as failure:
        print(f"start.sh: {failure}", file=sys.stderr)
        return 1
    except ValueError as failure:         # bad input on the command line
        print(f"start.sh: {failure}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("start.sh: interrupted", file=sys.stderr)
        return 130
