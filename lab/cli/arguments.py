"""./start.sh's arguments: the run options, and the parser built from the command table (lab/cli/commands/)."""
from __future__ import annotations

import argparse
from pathlib import Path

from lab.cli import commands
from lab.cli.commands.provision import INSIST_MEMORY_HELP
from lab.experiment import load
from lab.experiment.options import milliseconds, rates, seconds
from lab.provision import knob_sets

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

Machine settings live in lab/machines/machines.yml; override one for a run with LAB_<NAME>, e.g.
LAB_ACCELERATOR=tcg ./start.sh up. Each command's own options: ./start.sh COMMAND --help."""


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
    add("--until-settled", type=seconds, default=None, metavar="TIME",
        help="the hold is a cap: the load ends once both machines' throughput has settled (the report's steady "
             "rule) and TIME of steady state is measured on each (closed model; at least 60s)")
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
             "run, e.g. --set tuned:tomcat_threads_max=250 (repeatable); where both sides start from one set "
             "(--knob-set tuned=default) the prefix names a side")
    add("--profile", action="store_true",
        help="profile both JVMs (CPU, allocations, locks) for flame graphs; off by default: it costs the "
             "JVMs, unequally (the same as --set profiler_events=[cpu,alloc,lock])")
    add("--repeat", type=int, default=1, metavar="N",
        help="N trials in one command, each restarted alike; from the second on the two configurations "
             "alternate between the machines (crossover) and a combined report cancels machine bias")
    add("--gate", dest="gates", action="append", default=[], metavar="GATE",
        help="judge the run's (or the series') verdict: 'tps>=+10%%' (the interval's lower bound), 'errors<=0.1%%' "
             "(tuned's level), 'p99<=2s'; repeatable; exit 3 when one fails, gates.xml (JUnit) in the folder")
    add("--knob-set", dest="knob_sets", action="append", default=[], metavar="[SIDE=]SET",
        help="run a named knob set (ansible/knob_sets/SET.yml) on a side instead of its own, e.g. "
             "--knob-set tuned=article-2018 (side tuned when left out; default stays the catalog unless "
             f"chosen; sets: {', '.join(knob_sets.names())})")
    add("--aa", nargs="?", const="default", default=None, metavar="SET",
        help="A/A calibration: both machines run knob set SET (default unless named) to measure the "
             "twins' own difference")
    add("--service", dest="service_name", default=None, metavar="NAME|PATH",
        help="run a service of your own instead of the lab's sample app: services/NAME.yml or a descriptor's path "
             "(its jar, port, paths, backends' stubs and JMeter plan; check it first with ./start.sh service check)")
    add("--service-root", type=Path, default=None, metavar="DIR",
        help="with --service: the folder its descriptor's paths may reach (a folder holding the descriptor; not /, a "
             "folder directly under it, a home or one holding the lab's checkout); otherwise the descriptor's own "
             "folder (the checkout for one in services/)")
    add("--plan", type=Path, default=None, metavar="FILE.jmx",
        help="with --service: this JMeter plan of yours instead of the descriptor's load.plan (it must read the lab's "
             "properties host, users, ramp_up_s, duration_s: checked before anything starts)")
    add("--allow-plan-code", action="store_true",
        help="with --service or --plan: take a plan that runs code in JMeter (JSR223, BeanShell, OS Process, "
             "__groovy, …), which the lab refuses otherwise: JMeter runs them on this host (as the lab's user)")
    add("--hosts", type=Path, default=None, metavar="INVENTORY",
        help="run on real hosts instead of the VMs: an Ansible inventory naming `default` and `tuned` (and "
             "optionally a `loadgen` group for JMeter's remote engines); see README, Real hosts")
    add("--down", action="store_true", help="destroy the machines after the run")
    add("--provision", action="store_true",
        help="run Ansible even when nothing changed since the machines were last provisioned")
    add("--insist-memory", action="store_true", help=INSIST_MEMORY_HELP)


def parser() -> argparse.ArgumentParser:
    """The run options at the top level, then one subparser per command of the table (lab/cli/commands/)."""
    p = argparse.ArgumentParser(prog="./start.sh", description=DESCRIPTION,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    r = p.add_argument_group("run options (the full run, no command)")
    add_run_options(r.add_argument)
    p.set_defaults(run_options=[a.dest for a in r._group_actions])
    sub = p.add_subparsers(dest="command", metavar="command")
    for name, module in commands.COMMANDS.items():
        command = sub.add_parser(name, help=module.HELP, description=module.__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
        if hasattr(module, "add_arguments"):      # a command without arguments of its own has none
            module.add_arguments(command)
        if module.RUN_OPTIONS == "all":     # run options before or after the command; typed ones only (no default)
            group = command.add_argument_group("run options (as for the full run; before or after the command)")
            add_run_options(lambda *names, _group=group, **kw:
                            _group.add_argument(*names, **{**kw, "default": argparse.SUPPRESS}))
    return p
