"""./start.sh's arguments: the run options and each command's own, with their help."""
from __future__ import annotations

import argparse
from pathlib import Path

from lab.experiment import load, sweep
from lab.experiment.run import milliseconds, rates, seconds
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

commands:
  report    (re)write the report of a run folder: ./start.sh report results/<run-id> [--warmup S]
  compare   several run folders side by side: ./start.sh compare results/<run-a> results/<run-b> …
  up        install missing host prerequisites, build or reuse the base box, bring both machines up
  status    each machine's state, IP, provider, accelerator, memory, CPUs, uptime and CPU placement
  down      destroy both machines and stop everything the lab started
  prereqs   only install the missing host prerequisites (what up does first)
  provision build the app, then provision both machines with Ansible (knobs: ansible/knobs.yml,
            ansible/knob_sets/tuned.yml; --set [machine:]knob=value for this run only)
  service   check NAME|PATH: a service of your own checked on this host (descriptor, jar, stubs, plan, one start)
  runs      every run folder, from results/index.sqlite: ./start.sh runs [--label …] [--since …] [--service …]
  history   comparable runs in order and their change points: ./start.sh history [--ignore KNOB,…]
  tune      search the knobs within a budget: ./start.sh tune --budget 2h [--space FILE] [--holds 2m,6m] [run options]
  gate      a finished run against gates: ./start.sh gate results/<run-id> --gate 'tps>=+10%%' (exit 3 on a failure)
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
    add("--plan", type=Path, default=None, metavar="FILE.jmx",
        help="with --service: this JMeter plan of yours instead of the descriptor's load.plan (it must read the lab's "
             "properties host, users, ramp_up_s, duration_s: checked before anything starts)")
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
    tu = sub.add_parser("tune", help="search the knob space within a budget (optuna TPE, successive halving)")
    tu.add_argument("--budget", type=seconds, default=None, metavar="TIME",
                    help="how long the search and the best's confirmations may take, e.g. 2h (a resumed tune: what is "
                         "left of its own)")
    tu.add_argument("--space", type=Path, default=None, metavar="FILE",
                    help="knob: range (YAML) to search instead of the catalog's tune: ranges (ansible/knobs.yml)")
    tu.add_argument("--holds", type=lambda t: tuple(seconds(x) for x in t.split(",")), default=(120, 360),
                    metavar="T1,T2,…", help="the trials' holds, shortest first; a third of each hold's candidates "
                    "go on to the next (default 2m,6m)")
    tu.add_argument("--floor", type=float, default=0.05, metavar="FRACTION",
                    help="the noise floor: a gain counts when its interval's lower bound clears it (default 0.05: "
                         "what an A/A of the load spreads by between runs)")
    tu.add_argument("--objective", default=None, metavar="tps|p99",
                    help="what a candidate improves: the paired successful-TPS ratio (tps, default), or p99 latency "
                         "(p99)")
    tu.add_argument("--constraint", dest="constraints", action="append", default=None, metavar="GATE",
                    help="a gate every candidate's verdict must pass, as --gate reads it, e.g. 'p99<=2s' "
                         "(repeatable; default 'errors<=0.1%%'; giving any replaces the default)")
    tu.add_argument("--control", default=None, metavar="SET",
                    help="the knob set the candidates run against (default: default, the catalog); the finalist is "
                         "confirmed against it and against tuned")
    tu.add_argument("--name", default=None, metavar="NAME",
                    help="the knob set the answer is written as, ansible/knob_sets/NAME.yml (default tune-DATE-HHMM)")
    tu.add_argument("--study", default=None, metavar="URL",
                    help="work a study shared with other workers (each its own twins, --hosts): sqlite:///PATH, or "
                         "postgresql://USER@HOST/DB across controllers (default: the tune folder's study.sqlite)")
    tu.add_argument("--resume", type=Path, default=None, metavar="FOLDER",
                    help="go on with a tune folder's study (its space, holds and budget)")
    for command in (sw, ab, tu):        # run options before or after the command; typed ones only (no default here)
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
    filters = argparse.ArgumentParser(add_help=False)
    filters.add_argument("--label", dest="filter_label", metavar="TEXT", help="only runs whose label holds TEXT")
    filters.add_argument("--since", metavar="DATE", help="only runs started at or after DATE (ISO, e.g. 2026-11-28)")
    filters.add_argument("--service", dest="filter_service", metavar="NAME", help="only runs of this service "
                         "(the lab's own app: sample)")
    sub.add_parser("runs", parents=[filters], help="every run, series, sweep and tune folder, from the index of "
                   "results/ (rebuilt from the folders)")
    hi = sub.add_parser("history", parents=[filters], help="the history of comparable runs and its change points "
                        "(results/<stamp>-history/history.html)")
    hi.add_argument("--ignore", metavar="KNOB,…", help="widen the fingerprint: knobs, or parts (load.users, cores, …)")
    hi.add_argument("--also", metavar="versions,commit", help="narrow the fingerprint")
    ga = sub.add_parser("gate", help="a run's or a series' verdict against gates (exit 3 when one fails)")
    ga.add_argument("folder", type=Path, metavar="FOLDER", help="a run or series folder")
    ga.add_argument("--gate", dest="folder_gates", action="append", required=True, metavar="GATE",
                    help="e.g. 'tps>=+10%%', 'errors<=0.1%%', 'p99<=2s' (repeatable)")
    sv = sub.add_parser("service", help="a service of your own (README: Your own service)")
    sv.add_argument("action", choices=("check",), help="check: its descriptor, jar, stubs and plan, then one start "
                    "here with the tuning kit, before any machine is used")
    sv.add_argument("service", metavar="NAME|PATH", help="services/NAME.yml or a descriptor's path")
    ex = sub.add_parser("exec", help="run a command in the lab namespace")
    ex.add_argument("argv", nargs=argparse.REMAINDER, help="the command (after --)")
    return p
