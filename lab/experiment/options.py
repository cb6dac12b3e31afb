"""A run's options: the values the command line parsed (Options, pure), the types it parses them with (seconds,
rates, milliseconds), the options that contradict each other, and check(): the one step that reads what the options
name (the service's descriptor, the knob sets, the catalog) and refuses what cannot run, before anything starts or
changes. Below run, trial, sweep and tune, which all take an Options."""
from __future__ import annotations

import argparse
import dataclasses
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from lab.experiment import design, load, service
from lab.provision import catalog, knob_sets

LABEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")


@dataclass(frozen=True)
class Options:
    """What a run was asked to do, as parsed: pure values and defaults (no file read, nothing checked against the
    host); check() completes and checks them, once, before anything starts."""
    profile: load.Profile = field(default_factory=load.Profile)
    warmup_s: int | None = None          # excluded from the summary; default: the ramp-up
    until_settled_s: int | None = None   # the hold a cap, ended once both machines settled this long (load/settle.py)
    label: str = ""
    overrides: tuple = ()        # --set items as typed; check() reads them into the configurations
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
    reached: dict | None = field(default=None, repr=False)   # those hosts once checked (preflight.ready)
    # --service: the service the machines run (service.Service, its descriptor checked); None until check(): the
    # lab's sample app (services/sample.yml)
    service: service.Service | None = None
    # side -> its Configuration (lab/provision/configuration.py), made by check() from --knob-set, --aa and --set. A
    # sweep or a tune gives its trials theirs, as values: no --set text between the lab's modules
    configurations: dict | None = None
    # JMeter's HTML dashboards at the end of the run; a tune's search runs skip them (7-26 s a petclinic run: issue
    # 54 item 5), `./start.sh report RUN --dashboards` makes them later
    dashboards: bool = True
    # the report (report.html, verdict.json) and the index at the end of the run; a tune's search run has it written
    # beside the next run's provisioning (lab/experiment/tune/overlap.py, finish.report_later)
    report: bool = True
    # a tune's search run: its hold ended once its paired windows have said what they can (tune/race.py Race)
    race: object | None = None

    def __post_init__(self) -> None:
        """The refusals that need nothing but the values themselves (--repeat's: design.trials_of)."""
        if self.label and not LABEL_RE.fullmatch(self.label):
            raise ValueError(f"--label {self.label!r}: use 1–40 letters, digits, '.', '_' or '-' "
                             "(it becomes part of the folder name)")
        if self.warmup_s is not None and not 0 <= self.warmup_s <= self.profile.planned_s:
            raise ValueError(f"--warmup {self.warmup_s}: must be from 0 to the planned length of the load "
                             f"({self.profile.planned_s} s)")
        refused = load.check_until_settled(self.until_settled_s, self.profile)
        if refused:
            raise ValueError(refused)

    def trials(self, series: str | None = None, repeat: int | None = None) -> list[design.Trial]:
        """The run's trials (check() first: they are its configurations')."""
        if self.configurations is None:
            raise RuntimeError("Options.trials() before check(): the configurations are made there")
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
            problems.append(f"{', '.join(chosen)}: a tune chooses each run's design itself (A/B runs at the "
                            "--hold, the candidate against --control SET, the leader's swapped replicate, the "
                            "finalist's --repeat 4)")
    if getattr(args, "command", None) in ("sweep", "ablate", "tune") and getattr(args, "gates", None):
        problems.append("--gate judges one run or one series: a sweep's or a tune's trials each have their own "
                        "verdict (a tune's constraints: --constraint GATE; judge one run with ./start.sh gate FOLDER "
                        "--gate …)")
    if getattr(args, "allow_plan_code", False) and getattr(args, "service_name", None) is None \
            and getattr(args, "plan", None) is None:
        problems.append("--allow-plan-code takes a plan of yours that runs code in JMeter: it goes with --service or "
                        "--plan (the lab's own plan runs none)")
    if args.profile and any(o.split("=", 1)[0].split(":")[-1].strip() == "profiler_events" for o in args.overrides):
        problems.append("--profile and --set profiler_events=… both choose what the profiler samples: use one")
    return problems


def check(opts: Options) -> Options:
    """The options completed (the service loaded, the configurations made) and checked: a bad --aa or --knob-set, a
    --set for a configuration no machine runs or that the service cannot take, a service without a plan, a model its
    plan cannot run: ValueError naming it. Nothing is changed anywhere."""
    svc = opts.service if opts.service is not None else service.load(service.DEFAULT)
    configured = opts.configurations
    if configured is None:
        sets = design.choose(opts.aa, opts.knob_sets)
        sides = design.by_side(sets, opts.aa)
        given = (catalog.parse_overrides(list(opts.overrides), design.CONFIGS, what="side") if sides else
                 catalog.parse_overrides(list(opts.overrides), sorted(set(sets.values())), prefixes=knob_sets.names(),
                                         what="knob set"))
        configured = design.configurations(sets, given, aa=opts.aa is not None, sides=sides)
    done = dataclasses.replace(opts, service=svc, configurations=configured)
    done.trials()[0].overrides(svc)     # a given value the service cannot take: refused here
    if svc.plan is None and not svc.lab_plan:
        raise ValueError(f"--service {svc.name}: its descriptor has no load (load: {{plan: FILE.jmx}}, a JMeter plan "
                         "reading the lab's properties): the lab's own plan calls the sample app's API")
    if opts.profile.model != "closed" and not svc.lab_plan:
        raise ValueError(f"--model {opts.profile.model}: a service's own plan ({svc.plan.path}) runs its own thread "
                         "groups, sized by the lab's users, ramp_up_s and duration_s (the closed model)")
    return done


def checked(**fields) -> Options:
    """Options(**fields), checked: what the command line and the tests build."""
    return check(Options(**fields))
