"""The A/A runs beside a run folder that calibrate its intervals: those of the same load on the same kind of host
(`fingerprint`, `mismatch`), each read from its verdict.json (the twins' difference per figure with its within-run
interval and degrees of freedom) and its run.json (its load). A sibling whose verdict.json or run.json cannot be
read, or whose fields have another type, is named on stderr and skipped (report/read/records.py). What the
calibration does with them: report/stats/between.py."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from report.output import warn
from report.read.records import read_record
from report.read.runinfo import RunInfo, boxes
from runfolder.shape import NUMBER, MapOf, check

HOLD_FACTOR = 2.0         # holds within this factor of each other count as the same load
# per load model, what sizes it (steps: its hold is the stage length, compared as a hold)
SIZE = {"closed": ("users",), "open": ("rate_per_s",), "steps": ("step_rates",)}
# fields a fingerprint must know for any match: an unrecorded load may be another load
REQUIRED = ("model", "ramp_up_s", "hold_s", "provider", "host_cpus")
WORDS = {"model": "load model", "users": "users", "rate_per_s": "rate (req/s)", "step_rates": "stage rates (req/s)",
         "ramp_up_s": "ramp-up (s)", "hold_s": "hold (s)", "keep_alive": "keep-alive", "scheme": "scheme",
         "mix": "request mix", "provider": "provider", "accelerator": "accelerator", "host_cpus": "host CPUs",
         "cores": "host cores", "service": "service", "boxes": "boxes"}
# what a calibrating verdict.json must hold beyond records.VERDICT: the t quantile's degrees of freedom per
# figure and, when the report widened its interval, the within-run one
_AA = {"method": {"df": MapOf(NUMBER)}, "effects": MapOf({"ci_within": {"low": NUMBER, "high": NUMBER}})}


def fingerprint(run: RunInfo) -> dict[str, Any]:
    """What must be alike for one run's A/A to calibrate another: the load model and its size (closed: users;
    open: the arrival rate; steps: the stage rates), the ramp-up, the hold (closed, open: duration_s; steps: the
    stage length step_s; compared within a factor of HOLD_FACTOR), keep-alive, scheme and request mix, and the
    host facts that change the noise: provider (libvirt VMs or real hosts), libvirt's accelerator (kvm, tcg), the
    host's CPU count and whether the machines swapped host cores half-way (a fixed placement keeps a core's bias
    that a swap cancels), and the machines' boxes (an A/A per box: bookworm's twins calibrate no trixie run); and
    the service the machines ran with its plan (the sample app and the lab's own plan when
    run.json names none, as runs before the sample app had a descriptor: an A/A of one service never calibrates
    another's). None where run.json does not say."""
    load = run.load
    model = load.get("model")
    rates = load.get("step_rates")
    fp = {"model": model, "ramp_up_s": load.get("ramp_up_s"),
          "hold_s": load.get("step_s") if model == "steps" else load.get("duration_s"),
          "keep_alive": load.get("keep_alive") if model == "closed" else None,
          "scheme": load.get("scheme"), "mix": load.get("mix"), "provider": run.get("provider"),
          "host_cpus": run.get("host", "cpus")}
    service = run.get("service", default=None) or {}
    plan = Path(str(service["plan"])).name if service.get("plan") else "the lab's plan"
    fp["service"] = f"{service.get('name') or 'sample'} ({plan})"
    for key in SIZE.get(str(model), ()):
        fp[key] = tuple(rates) if key == "step_rates" and rates is not None else load.get(key)
    if fp["provider"] != "hosts":       # real hosts have no accelerator nor pinned cores of the lab's
        fp["accelerator"] = run.get("accelerator")
        fp["cores"] = run.cores
        # each box its own A/A: its Debian, kernel and JVM are the twins' (runs before boxes were recorded: bookworm)
        fp["boxes"] = " + ".join(sorted(set(boxes(run).values()))) or "bookworm"
    return fp


def unknown(fp: dict[str, Any]) -> list[str]:
    """The fields a match needs that the fingerprint does not know."""
    needed = list(REQUIRED) + list(SIZE.get(str(fp.get("model")), ())) + (["accelerator"] if "accelerator" in fp
                                                                          else [])
    return [WORDS[key] for key in needed if fp.get(key) is None]


def _said(value: Any) -> str:
    if isinstance(value, tuple):
        return ", ".join(f"{v:g}" for v in value)
    if isinstance(value, dict):
        return ", ".join(f"{k} {v}" for k, v in value.items())
    return "not recorded" if value is None else str(value)


def mismatch(mine: dict[str, Any], theirs: dict[str, Any]) -> str | None:
    """None when `theirs` is this run's load on this kind of host; else the first difference in words, e.g.
    'users 20, not 150'."""
    missing = unknown(theirs)
    if missing:
        return f"its run.json does not record the {', '.join(missing)}"
    for key in WORDS:          # in a fixed order: the same first difference every time
        a, b = mine.get(key), theirs.get(key)
        if key == "hold_s" and a and b and max(a, b) <= HOLD_FACTOR * min(a, b):
            continue
        if a != b:
            return f"{WORDS[key]} {_said(b)}, not {_said(a)}" + (f" (not within ×{HOLD_FACTOR:g})"
                                                                 if key == "hold_s" else "")
    return None


@dataclass
class AATrial:
    """One calibrating A/A run: per figure its estimate and within-run interval, and the degrees of freedom of the
    t quantile that interval used."""
    run_id: str
    effects: dict[str, dict[str, Any]]      # figure -> {kind, estimate, low, high}
    df: dict[str, float]                     # figure -> degrees of freedom


@dataclass
class AALookup:
    matching: list[AATrial] = field(default_factory=list)
    unused: dict[str, str] = field(default_factory=dict)    # A/A run -> why it does not calibrate this one
    why_none: str = ""                      # this run's own load is not recorded well enough to match

    @property
    def names(self) -> list[str]:
        return [t.run_id for t in self.matching]


def _trial(folder: Path, record: dict[str, Any]) -> AATrial:
    """The within-run interval of each figure (ci_within when the report widened low/high)."""
    effects = {}
    for figure, e in record["effects"].items():
        within = e.get("ci_within") or {}
        low, high = within.get("low", e.get("low")), within.get("high", e.get("high"))
        effects[figure] = {"kind": e.get("kind"), "estimate": e.get("estimate"), "low": low, "high": high}
    return AATrial(folder.name, effects, dict((record.get("method") or {}).get("df") or {}))


def _candidate(other: Path) -> dict[str, Any] | None:
    """A sibling's verdict.json when it is an A/A run's and holds what a calibration reads (else None; a damaged
    file named on stderr)."""
    record = read_record(other)
    if record is None or (record.get("design") or {}).get("kind") != "aa":
        return None
    _, problems = check(record, _AA)
    if problems:
        warn(f"{other / 'verdict.json'}: {'; '.join(problems)}: skipped")
        return None
    return record


def matching_aa(folder: str | Path, run: RunInfo) -> AALookup:
    """Every A/A run beside this run folder (before or after it), those of its load as AATrials, the others with
    why not. Only complete A/A runs count (an interrupted one did not hold the load it planned)."""
    here = Path(folder).resolve()
    lookup = AALookup()
    try:
        siblings = sorted(p for p in here.parent.iterdir() if p.is_dir() and p.resolve() != here)
    except OSError as e:
        warn(f"{here.parent}: cannot list it ({e.strerror or e}): no A/A calibration looked up")
        lookup.why_none = f"the results folder {here.parent} could not be listed"
        return lookup
    mine = fingerprint(run)
    missing = unknown(mine)
    if missing:
        lookup.why_none = f"this run's run.json does not record the {', '.join(missing)}"
    for other in siblings:
        record = _candidate(other)
        if record is None:
            continue
        if record.get("status") != "complete":
            lookup.unused[other.name] = f"status {record.get('status', 'unknown')}"
            continue
        theirs = RunInfo(other)
        for problem in theirs.problems:
            warn(f"{other}: {problem}")
        why = "its run.json cannot be read" if not theirs.data else (
            "this run's load is not recorded" if missing else mismatch(mine, fingerprint(theirs)))
        if why:
            lookup.unused[other.name] = why
        else:
            lookup.matching.append(_trial(other, record))
    return lookup
