"""Sweeps and ablations: several A/B trials, one knob value (or combination, or reverted tier) each on the tuned
side, the default side unchanged as the control in every trial.

    ./start.sh sweep tuned:tomcat_threads_max=100,150,200 [tuned:KNOB2=…] [run options]
    ./start.sh ablate [run options]      the tuned set with one tier's changes reverted at a time

Each trial is an ordinary run folder (its own report and verdict.json); the sweep folder
(results/<stamp>-sweep or -ablate/) holds sweep.json (the plan, each trial's values, folder, status) and the
sweep's report (python -m report sweep): each verdict figure against the value, the best value by the stated
rule, the ablation's share of the gain per tier. The plan and an estimated duration are printed before anything
starts; every trial is validated first; an interrupted sweep keeps its finished trials and reports them.
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import runfolder
from lab import redact, steps
from lab.experiment import record as run_record
from lab.experiment import reporting, run, service, trial
from lab.experiment.options import Options
from lab.provision import catalog, knob_sets
from lab.provision.configuration import same

MAX_TRIALS = 12                  # default cap on a sweep's trials (a product of axes grows fast)
# A trial's cost beside its load, measured on these hosts under emulation (DESIGN.md, run.json phases):
# re-provisioning the tuned machine after a knob change, both machines' services restarted together and checked,
# collection and the report.
PROVISION_S = 240
RESTART_CHECK_S = 240
FINISH_S = 150
# Ablation tiers: the knob prefixes reverted together, in the order the table shows them.
TIERS = {"httpd": "HTTPD", "tomcat": "Tomcat", "jvm": "JVM", "logback": "Logback", "base": "kernel (base_sysctl)",
         "app": "app service (tasks, pools)", "camel": "Camel", "mock": "mock", "pcp": "PCP"}
# knobs whose tier is not their prefix: the service's task limit exists for Tomcat's threads
TIER_OF = {"app_tasks_max": "tomcat"}
# reverting a knob takes these with it: the APR connector exists only with AJP (the validation refuses it alone)
TAKES_ALONG = {"httpd_proxy_protocol": ("tomcat_ajp_connector",)}


def tier_of(knob: str) -> str:
    return TIER_OF.get(knob, knob.split("_")[0])


@dataclass(frozen=True)
class Axis:
    side: str
    knob: str
    values: tuple


@dataclass
class Point:
    """One trial: the values it gives the tuned side's configuration (on top of its set and --set)."""
    label: str
    values: dict
    about: str
    tier: str | None = None              # ablation: the tier reverted (None: the full set)


@dataclass
class Plan:
    kind: str                            # sweep | ablate
    configuration: str                   # the tuned side's knob set
    points: list[Point]
    axes: list[Axis] = field(default_factory=list)


def split_values(raw: str) -> list[str]:
    """'1,2,[a, b],{x: 1}' → ['1', '2', '[a, b]', '{x: 1}']: commas inside brackets or braces do not split."""
    out, depth, current = [], 0, ""
    for ch in raw:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(current)
            current = ""
        else:
            current += ch
    out.append(current)
    return [v.strip() for v in out]


def parse_axis(text: str) -> Axis:
    """`tuned:KNOB=v1,v2,…` (the tuned side; `tuned:` may be left out); ValueError naming what is wrong."""
    head, eq, raw = text.partition("=")
    side, colon, knob = head.partition(":") if ":" in head else ("tuned", "", head)
    side, knob = side.strip(), knob.strip()
    if not eq or not knob or not raw.strip():
        raise ValueError(f"sweep {text!r}: expected tuned:KNOB=v1,v2,… e.g. tuned:tomcat_threads_max=100,150,200")
    if side != "tuned":
        raise ValueError(f"sweep {text!r}: only the tuned side is swept; the default side stays unchanged as the "
                         "control in every trial")
    if knob not in catalog.defaults():
        raise ValueError(f"sweep {text!r}: unknown knob {knob!r} (see ansible/knobs.yml)")
    values = []
    for item in split_values(raw):
        if not item:
            raise ValueError(f"sweep {text!r}: an empty value")
        values.append(catalog.parse_value(f"sweep {text!r}", catalog.specs()[knob], item))
    if len({json.dumps(v, sort_keys=True) for v in values}) != len(values):
        raise ValueError(f"sweep {text!r}: a value is repeated")
    if len(values) < 2:
        raise ValueError(f"sweep {text!r}: give at least two values (one value is a run: --set)")
    return Axis(side, knob, tuple(values))


def _show(value) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def sweep_plan(axes: list[Axis], configuration: str = "tuned", max_trials: int = MAX_TRIALS) -> Plan:
    """One trial per value, or per combination of several axes; ValueError above the cap."""
    if not axes:
        raise ValueError("sweep: name at least one knob and its values, e.g. tuned:tomcat_threads_max=100,150,200")
    knobs = [a.knob for a in axes]
    if len(set(knobs)) != len(knobs):
        raise ValueError(f"sweep: a knob is named twice ({', '.join(k for k in knobs if knobs.count(k) > 1)})")
    if not 1 <= max_trials <= 100:
        raise ValueError(f"--max-trials {max_trials}: from 1 to 100")
    combos = list(itertools.product(*(a.values for a in axes)))
    if len(combos) > max_trials:
        raise ValueError(f"sweep: {' × '.join(str(len(a.values)) for a in axes)} = {len(combos)} trials, above the cap "
                         f"of {max_trials} (--max-trials N raises it; each trial is a full run)")
    points = []
    for k, combo in enumerate(combos, 1):
        values = dict(zip(knobs, combo, strict=True))
        points.append(Point(label=f"v{k}", values=values,
                            about=", ".join(f"{knob}={_show(v)}" for knob, v in values.items())))
    return Plan("sweep", configuration, points, list(axes))


def ablation_plan(configuration: str = "tuned") -> Plan:
    """The set as it is, then once per tier it changes with that tier's knobs back at the catalog's values."""
    out_of_the_box = catalog.defaults()
    changes = {k: v for k, v in knob_sets.values(configuration, out_of_the_box).items()
               if not same(v, out_of_the_box.get(k))}
    if not changes:
        raise ValueError(f"ablate: knob set {configuration} changes nothing from the catalog")
    points = [Point(label="full", values={}, about=f"{configuration} as it is ({len(changes)} knobs changed)")]
    for prefix, name in TIERS.items():
        reverted = {k: out_of_the_box[k] for k in changes if tier_of(k) == prefix}
        for knob in list(reverted):
            reverted.update({k: out_of_the_box[k] for k in TAKES_ALONG.get(knob, ()) if k in changes})
        if reverted:
            points.append(Point(label=f"no-{prefix}", values=reverted, tier=prefix,
                                about=f"{configuration} without its {name} changes ({', '.join(sorted(reverted))})"))
    others = sorted(k for k in changes if tier_of(k) not in TIERS)
    if others:
        raise ValueError(f"ablate: knobs of no known tier in {configuration}: {', '.join(others)}")
    return Plan("ablate", configuration, points)


def estimate_s(plan: Plan, planned_load_s: int) -> int:
    """Seconds the whole plan should take: every trial's load, re-provisioning, equal start and check, the finish."""
    return len(plan.points) * (planned_load_s + PROVISION_S + RESTART_CHECK_S + FINISH_S)


def describe(plan: Plan, planned_load_s: int) -> str:
    total = estimate_s(plan, planned_load_s)
    what = "sweep" if plan.kind == "sweep" else "ablation"
    lines = [f"{what}: {len(plan.points)} trials, the default side unchanged as the control in each; the tuned "
             f"side runs knob set {plan.configuration} with:"]
    lines += [f"  {k}/{len(plan.points)}  {p.label:<12} {p.about}" for k, p in enumerate(plan.points, 1)]
    lines.append(f"estimated duration: ~{total // 60} min ({len(plan.points)} × ({planned_load_s} s of load + "
                 f"~{PROVISION_S} s provisioning + ~{RESTART_CHECK_S} s equal start and check + ~{FINISH_S} s "
                 "collection and report))")
    return "\n".join(lines)


def trial_options(opts: Options, plan: Plan, point: Point) -> Options:
    """The run options of one trial: the sweep's options with the point's values given to the configuration of the
    tuned side's knob set."""
    configured = {side: c.given(point.values) if c.base == plan.configuration else c
                  for side, c in opts.configurations.items()}
    return dataclasses.replace(opts, configurations=configured,
                               label=f"{opts.label}-{point.label}" if opts.label else point.label)


class Record:
    """sweep.json, rewritten whole after every trial."""

    def __init__(self, folder: Path, data: dict) -> None:
        self.path = folder / "sweep.json"
        self.data = data
        self.save()

    def save(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=2, default=str) + "\n")
        os.replace(tmp, self.path)


def validate(plan: Plan, opts: Options, s) -> None:
    """Every trial's knobs checked (ansible/validate.yml on this host) before anything starts; ValueError
    naming the trial and each bad value."""
    if opts.repeat != 1 or opts.aa is not None:
        raise ValueError(f"{plan.kind}: --repeat and --aa do not combine with it (each trial is one A/B run)")
    for point in plan.points:
        try:
            run.validate(trial_options(opts, plan, point), s)
        except ValueError as bad:
            raise ValueError(f"{plan.kind} trial {point.label} ({point.about}): {bad}") from None


def execute(plan: Plan, opts: Options, s, log=steps.note, run_trial=trial.run_trial) -> int:
    """Runs the plan's trials one after another (validate() first), then the sweep's report; the exit code
    (0, 1 a trial failed, 130 interrupted). run_trial: one trial (a parameter for the tests)."""
    per_trial = [trial_options(opts, plan, p) for p in plan.points]
    # the label names the folder once: --label ablate on an ablation is <stamp>-ablate, not …-ablate-ablate
    suffix = plan.kind if opts.label in (None, "", plan.kind) else f"{opts.label}-{plan.kind}"
    folder = run_record.make_run_dir(suffix)       # a sweep started in the same second gets its own folder
    sweep_id = folder.name
    record = Record(folder, runfolder.stamped("sweep.json", {
        "sweep_id": sweep_id, "kind": plan.kind, "configuration": plan.configuration, "status": "running",
        "started": run_record.utc_now(), "ended": None, "command": redact.argv(sys.argv[1:]),
        "axes": [{"side": a.side, "knob": a.knob, "values": list(a.values)} for a in plan.axes],
        "rule": {"best": "highest tuned-vs-default successful TPS ratio with tuned errors ≤ 0.1 %",
                 "max_error_pct": 0.1},
        "load": dataclasses.asdict(opts.profile), "warmup_s": opts.effective_warmup_s,
        "service": service.record(opts.service),
        "estimated_s": estimate_s(plan, opts.profile.planned_s),
        "points": [{"label": p.label, "values": p.values, "about": p.about, "tier": p.tier, "run_dir": None,
                    "exit_code": None} for p in plan.points]}))
    print(f"{plan.kind} {sweep_id}: results in {folder}", flush=True)
    exit_code = 0
    try:
        for k, (point, o) in enumerate(zip(plan.points, per_trial, strict=True), 1):
            print(f"\n==== {plan.kind} trial {k} of {len(plan.points)}: {point.about}", flush=True)
            code, run_dir = run_trial(o, o.trials(series=sweep_id, repeat=1)[0], s, o.label, log)
            record.data["points"][k - 1].update(run_dir=str(run_dir), exit_code=code)
            record.save()
            if code != 0:
                exit_code = code
                print(f"start.sh: {plan.kind} trial {k} did not complete; the {plan.kind} stops here", file=sys.stderr)
                break
    except KeyboardInterrupt:
        exit_code = 130
        print(f"\nstart.sh: {plan.kind} interrupted; reporting the finished trials", file=sys.stderr)
    record.data.update(status="complete" if exit_code == 0 else "interrupted" if exit_code == 130 else "failed",
                       ended=run_record.utc_now())
    record.save()
    with steps.step(f"the {plan.kind}'s report"):
        reporting.report_command("sweep", folder, log=log, what=f"{plan.kind} report")
    summary = folder / "sweep.md"
    if summary.exists():
        print("\n" + summary.read_text().split("\n## ")[0].strip() + f"\n\nReport: {folder / 'sweep.html'}", flush=True)
    return exit_code
