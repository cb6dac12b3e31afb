"""The full run (`./start.sh` with no command): up if needed → build and provision → restart both machines'
services together (equal start) → check that each machine answers → the same load on both at once →
collect → JMeter dashboards → report. `--repeat N` runs N such trials, the machines' roles swapped on every
second one (lab/experiment/design.py), and writes a combined report over them; `--aa` gives both machines one
configuration (an A/A calibration).

Everything lands in results/<UTC timestamp>[-label]/ and run.json is rewritten after every phase, so an
interrupted or failed run still leaves what it gathered and says where it stopped. Ctrl-C during the load
stops JMeter, then collection and the report still run (exit 130 afterwards). The machines stay up for
the next try unless --down.
"""
from __future__ import annotations

import argparse
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from lab import lock, paths, steps
from lab.experiment import design, disk, load, record, reporting, service
from lab.experiment.trial import run_trial
from lab.machines import lifecycle, settings
from lab.provision import catalog, hosts_down, knob_sets, playbook

LABEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")


@dataclass
class Options:
    profile: load.Profile = field(default_factory=load.Profile)
    warmup_s: int | None = None          # excluded from the summary; default: the ramp-up
    label: str = ""
    overrides: list[str] = field(default_factory=list)   # --set items as typed (read once: configurations)
    down: bool = False
    provision: bool = False      # provision even when nothing changed since the last time
    insist_memory: bool = False  # knobs beyond the machine's memory by the estimate: warned about, not refused
    repeat: int = 1              # trials; from the second on the machines swap configurations (crossover)
    gates: tuple = ()            # --gate: the verdict judged at the end (report/history/gates.py), exit 3 on a failure
    aa: str | None = None        # A/A: both machines run this configuration
    tls: bool = False            # the load over HTTPS, through HTTPD's TLS front (443)
    cores: str = "swap"          # swap: the machines trade host cores half-way through the measured window
                                 # (lab/experiment/core_swap.py); fixed: each keeps its own
    knob_sets: dict = field(default_factory=dict)   # side -> knob set, where a side runs another set than its name
    # --hosts: an Ansible inventory of real hosts instead of the VMs (lab/provision/hosts.py)
    hosts: Path | None = None
    reached: dict | None = field(default=None, repr=False)   # those hosts once checked (hosts.prepare)
    # --service: the service the machines run (service.Service, its descriptor checked); None: services/sample.yml
    service: service.Service | None = None
    # side -> its Configuration (lab/provision/configuration.py); None: made from --knob-set, --aa and --set. A sweep or
    # a tune gives its trials theirs, as values: no --set text between the lab's modules
    configurations: dict | None = None

    def __post_init__(self) -> None:
        # a bad --repeat, --aa or --knob-set, or a --set for a configuration no machine runs: refused here
        if self.configurations is None:
            sets = design.choose(self.aa, self.knob_sets)
            given = catalog.parse_overrides(self.overrides, sorted(set(sets.values())), prefixes=knob_sets.names(),
                                            what="knob set")
            self.configurations = design.configurations(sets, given, aa=self.aa is not None)
        first = self.trials()[0]
        if self.service is None:
            self.service = service.load(service.DEFAULT)
        first.overrides(self.service)     # a given value the service cannot take: refused here
        if self.service.plan is None and not self.service.lab_plan:
            raise ValueError(f"--service {self.service.name}: its descriptor has no load (load: {{plan: FILE.jmx}}, "
                             "a JMeter plan reading the lab's properties): the lab's own plan calls the sample app's "
                             "API")
        if self.profile.model != "closed" and not self.service.lab_plan:
            raise ValueError(f"--model {self.profile.model}: a service's own plan ({self.service.plan.path}) "
                             "runs its own thread groups, sized by the lab's users, ramp_up_s and duration_s "
                             "(the closed model)")

        if self.label and not LABEL_RE.fullmatch(self.label):
            raise ValueError(f"--label {self.label!r}: use 1–40 letters, digits, '.', '_' or '-' "
                             "(it becomes part of the folder name)")
        if self.warmup_s is not None and not 0 <= self.warmup_s <= self.profile.planned_s:
            raise ValueError(f"--warmup {self.warmup_s}: must be from 0 to the planned length of the load "
                             f"({self.profile.planned_s} s)")

    def trials(self, series: str | None = None, repeat: int | None = None) -> list[design.Trial]:
        return design.trials_of(self.configurations, self.repeat if repeat is None else repeat, self.aa is not None,
                                series)

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    @property
    def effective_warmup_s(self) -> int:
        return self.profile.ramp_up_s if self.warmup_s is None else self.warmup_s


# the run options' values as typed: the types lab/cli/arguments.py gives argparse

def seconds(text: str) -> int:
    """'90', '90s', '5m', '1h', '1h30m' → seconds."""
    m = re.fullmatch(r"(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s?)?", text.strip())
    if not text.strip() or not m or not any(m.groups()):
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration (e.g. 90, 90s, 5m, 1h30m)")
    h, mi, se = (int(g or 0) for g in m.groups())
    return h * 3600 + mi * 60 + se


def rates(text: str) -> tuple:
    """'10,20,30' → (10, 20, 30): the steps model's stages (req/s)."""
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a list of rates, e.g. 10,20,30") from None
    return tuple(int(v) if v.is_integer() else v for v in values)


def milliseconds(text: str) -> int:
    """'2s', '1500ms', '2' → whole milliseconds, at least 1 (inf, nan and negative times refused)."""
    t = text.strip()
    try:
        ms = float(t[:-2]) if t.endswith("ms") else float(t.rstrip("s")) * 1000
    except ValueError:
        ms = math.nan
    if not math.isfinite(ms) or round(ms) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a time of at least 1 ms, e.g. 2s or 1500ms")
    return round(ms)


def contradictions(args) -> list[str]:
    """The run options (parsed by lab/cli/arguments.py) that contradict each other or do nothing together."""
    problems = []
    if args.model == "steps" and not args.rates:
        problems.append("--model steps needs --rates R1,R2,… (req/s per machine of each stage)")
    if args.model == "closed" and args.rate is not None:
        problems.append("--rate applies to the open model only (add --model open, or leave --rate out)")
    if args.model == "open" and args.no_keep_alive:
        problems.append("--no-keep-alive applies to the closed model only: in the open model every arrival "
                        "connects anew")
    if args.model != "closed" and args.users is not None:
        problems.append("--users applies to the closed model only: the open model sets its pace with --rate")
    if args.model == "steps" and (args.rate is not None or args.duration is not None or args.no_keep_alive):
        problems.append("--rate, --duration and --no-keep-alive do not apply to the steps model: --rates and --stage "
                        "set its stages")
    if args.model != "steps" and any(v is not None for v in (args.rates, args.stage, args.p99_target)):
        problems.append("--rates, --stage and --p99-target apply to the steps model only (add --model steps)")
    if getattr(args, "command", None) == "tune":
        chosen = [name for name, given in (("--repeat", getattr(args, "repeat", 1) != 1),
                                           ("--aa", getattr(args, "aa", None) is not None),
                                           ("--knob-set", bool(getattr(args, "knob_sets", None))),
                                           ("--duration", getattr(args, "duration", None) is not None)) if given]
        if chosen:
            problems.append(f"{', '.join(chosen)}: a tune chooses each trial's design itself (one A/B run per "
                            "candidate at the --holds, the candidate against --control SET, the finalist's "
                            "--repeat 2)")
    if getattr(args, "command", None) in ("sweep", "ablate", "tune") and getattr(args, "gates", None):
        problems.append("--gate judges one run or one series: a sweep's or a tune's trials each have their own "
                        "verdict (a tune's constraints: --constraint GATE; judge one run with ./start.sh gate FOLDER "
                        "--gate …)")
    if args.profile and any(o.split("=", 1)[0].split(":")[-1].strip() == "profiler_events" for o in args.overrides):
        problems.append("--profile and --set profiler_events=… both choose what the profiler samples: use one")
    return problems


def validate(opts: Options, s: settings.Settings) -> None:
    """Every knob of every trial's machines checked (ansible/validate.yml, on this host) before anything is
    built, booted or changed; ValueError naming each bad value. Real hosts are checked first (opts.reached):
    their memory is what the knobs must fit."""
    generators = len((opts.reached or {}).get("loadgens") or {})
    if generators:      # each remote engine runs the whole plan with its share (engines.py): refused now, not
        opts.profile.per_engine(generators)     # after provisioning, the equal start and the engines' start
    known = opts.reached or {"machines": s.machines, "management_network": s.management_network,
                             "memory_mb": s.memory_mb}
    checked = []
    for t in opts.trials():
        overrides = t.overrides(opts.service)
        if overrides not in checked:        # a series repeats at most two designs (roles swapped or not)
            checked.append(overrides)
            playbook.validate(known, overrides, load_id_max=opts.profile.id_max, insist_memory=opts.insist_memory,
                              service_vars=service.ansible_vars(opts.service, overrides))


def execute(opts: Options, s: settings.Settings, log=steps.note) -> int:
    """The whole run, one trial or a series, on the lab made with settings s (brought up when it is not);
    returns the exit code (0, 1 failed, 130 interrupted). The knobs are validated before (validate())."""
    if opts.repeat == 1:
        exit_code, folder = run_trial(opts, opts.trials(repeat=1)[0], s, opts.label, log)
    else:
        exit_code, folder = run_series(opts, s, log)
    take_down(opts, log)
    return reporting.judge_gates(folder, opts.gates, exit_code)


def take_down(opts: Options, log=steps.note) -> None:
    """--down: the VMs destroyed; real hosts (--hosts) keep everything but lose the lab's firewall table and HTTPD
    (hosts_down.down), as `./start.sh down --hosts` does."""
    if not opts.down:
        return
    if opts.hosts is None:
        lifecycle.down()
        return
    with steps.step(f"the lab off the hosts of {opts.hosts} (its firewall table, HTTPD)"):
        hosts_down.down(opts.hosts, log)


def run_series(opts: Options, s: settings.Settings, log=steps.note) -> tuple[int, Path]:
    """--repeat N: N trials (each its own run folder), then the combined report in the series folder (returned
    with the exit code). An interrupted or failed trial ends the series; the trials done so far are still
    combined."""
    series_dir = record.make_run_dir(f"{opts.label}-series" if opts.label else "series", paths.RESULTS)
    series_id = series_dir.name
    lock.note(series_id)
    trials = opts.trials(series_id)
    print(f"series {series_id}: {opts.repeat} trials, the machines' roles swapped on every second one; "
          f"combined report in {series_dir}", flush=True)
    done, exit_code = [], 0
    for t in trials:
        print(f"\n==== trial {t.number} of {t.of}" + (" (roles swapped)" if t.swapped else ""), flush=True)
        label = f"{opts.label}-t{t.number}" if opts.label else f"t{t.number}"
        exit_code, run_dir = run_trial(opts, t, s, label, log)
        done.append(run_dir)
        if exit_code != 0:
            print(f"start.sh: trial {t.number} did not complete; the series stops here", file=sys.stderr)
            break
    with steps.step(f"combined report over {len(done)} trial(s)"):
        reporting.report_command("combine", series_dir, *done, log=log, what="combined report")
    reporting.print_outcome(series_dir)
    if not disk.low(series_dir):            # on a full disk nothing more is written
        reporting.index_add(series_dir)
    return exit_code, series_dir


