"""The zoo (issue 87; a benchmark on the machines, not a CI stage): one design run on every member of services/zoo.yml
that is built, each knob set against default, and the verdicts tabled side by side.

    .venv/bin/python -m bench.zoo [--sets tuned[,SET…]] [--ablate SET [--tiers full,jvm,…]] [--members NAME,…]
                                  [--trials 2] [--aa 0] [--label L] [--zoo services/zoo.yml] [--plan]
    .venv/bin/python -m bench.zoo --table results/<stamp>-bench-zoo/zoo.json [MORE…] [--refresh]  # the table again

Per member, in the zoo's order: where --aa N, an A/A series of N runs of the member's load first (both machines on
default: the series after it take their between-run spread from it, as every verdict of a matching load does), then
per set a crossover series of --trials runs (`./start.sh --service … --repeat N --knob-set tuned=SET`: the machines
swap roles every second run, so the twins' bias cancels), each an ordinary series folder with its own report. The
load is the member's (closed model, its users, ramp-up, `--until-settled` steady state under a cap). A member whose
descriptor the lab refuses (a third-party jar not built: services/README.md, Examples) is listed with why and
skipped; a series that fails is listed with its exit code and the next one runs. `--sets ''` with --aa: the A/A
runs alone; `--table … --refresh` then combines each series of the earlier zoos again, pooling them. A table names
each row's set by the values its runs had: where the set's file has changed since, by the set that holds them now
("tuned-emulated (run as tuned)") or the commit they ran at. zoo.json is
written after every series (an interrupted zoo keeps what it measured); zoo.md holds the table: per member and set,
successful TPS set ÷ default with its 95 % interval, errors (points), p99 and the JVM's CPU per request, how the
interval was made, and the series folder; under it, per set, whether its lower bound is ≥ 0.95 on every member and
≥ 1.05 on how many.
--ablate SET adds the set's ablation (issue 87, item 3): the set, then the set with one tier's changes back at the
catalog's values at a time (`./start.sh ablate`'s tiers, lab/experiment/sweep.py), each a series against default, so
that each tier's share of the set's effect is read member by member (--tiers: only those, `full` the set as it is).
Results: results/<stamp>-bench-zoo[-label]/.
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import yaml

import runfolder.verdict as verdict_file
from bench.zoo_table import FIGURES, table
from lab import paths
from lab.errors import LabError
from lab.experiment import record as run_record
from lab.experiment import reporting
from lab.experiment import service as services
from lab.experiment.options import LABEL_RE, seconds
from lab.experiment.sweep import ablation_plan
from lab.provision import knob_sets

ZOO = paths.ROOT / "services" / "zoo.yml"
START = str(paths.ROOT / "start.sh")
LOAD_KEYS = ("users", "ramp_up", "steady", "cap")


class ZooError(LabError):
    """The zoo file or the options are wrong; the message names what."""


@dataclass(frozen=True)
class Member:
    name: str
    service: str               # as --service takes it
    stands_for: str
    users: int
    ramp_up_s: int
    steady_s: int
    cap_s: int

    def load_argv(self) -> list[str]:
        return ["--service", self.service, "--users", str(self.users), "--ramp-up", f"{self.ramp_up_s}s",
                "--until-settled", f"{self.steady_s}s", "--duration", f"{self.cap_s}s"]

    def load_said(self) -> str:
        return (f"closed, {self.users} users, {self.ramp_up_s} s ramp-up, {self.steady_s} s steady "
                f"(hold ≤ {self.cap_s} s)")


def _duration(raw, where: str) -> int:
    try:
        return seconds(str(raw))
    except argparse.ArgumentTypeError as e:
        raise ZooError(f"{where}: {e}") from None


def read_zoo(path: Path = ZOO) -> list[Member]:
    """The zoo's members in its order; ZooError naming the member and field where the file is wrong."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as e:
        raise ZooError(f"{path}: cannot read the zoo ({e.strerror or e})") from None
    except yaml.YAMLError as e:
        raise ZooError(f"{path}: not valid YAML ({e})") from None
    members = raw.get("members") if isinstance(raw, dict) else None
    if not isinstance(members, dict) or not members:
        raise ZooError(f"{path}: members: a mapping of member name → {{service, stands_for, load}}")
    out = []
    for name, m in members.items():
        where = f"{path}: members.{name}"
        if not isinstance(m, dict) or set(m) != {"service", "stands_for", "load"}:
            raise ZooError(f"{where}: needs exactly service, stands_for and load")
        load = m["load"]
        if not isinstance(load, dict) or set(load) != set(LOAD_KEYS):
            raise ZooError(f"{where}.load: needs exactly {', '.join(LOAD_KEYS)}")
        if not isinstance(load["users"], int) or not 1 <= load["users"] <= 2000:
            raise ZooError(f"{where}.load.users: a whole number of users per machine, 1–2000")
        steady, cap = _duration(load["steady"], f"{where}.load.steady"), _duration(load["cap"], f"{where}.load.cap")
        if steady < 60 or cap < steady:
            raise ZooError(f"{where}.load: steady at least 60 s (the report's steady rule) and cap at least steady")
        out.append(Member(str(name), str(m["service"]), str(m["stands_for"]), load["users"],
                          _duration(load["ramp_up"], f"{where}.load.ramp_up"), steady, cap))
    return out


@dataclass(frozen=True)
class Variant:
    """What the tuned side runs in a series: a knob set, with some of its knobs set back (an ablation's)."""
    name: str                  # as the table shows it: the set, or "SET without TIER"
    knob_set: str
    reverted: tuple = ()       # ((knob, the catalog's value), …)
    short: str = ""            # in the series' label: the set, or SET-no-TIER

    def argv(self) -> list[str]:
        return ["--knob-set", f"tuned={self.knob_set}",
                *(x for k, v in self.reverted for x in ("--set", f"tuned:{k}={json.dumps(v)}"))]


def ablation(knob_set: str, tiers: str | None = None) -> list[Variant]:
    """The set in full, then with each tier it changes back at the catalog's values (`./start.sh ablate`'s); tiers:
    only those ("full": the set as it is)."""
    try:
        points = ablation_plan(knob_set).points
    except ValueError as e:
        raise ZooError(f"--ablate: {e}") from None
    have = {p.tier or "full": p for p in points}
    wanted = [t.strip() for t in tiers.split(",") if t.strip()] if tiers is not None else list(have)
    unknown = [t for t in wanted if t not in have]
    if not wanted or unknown:
        raise ZooError(f"--tiers: {', '.join(unknown) or 'none given'}: not a tier {knob_set} changes (its: "
                       f"{', '.join(have)})")
    return [Variant(knob_set if t == "full" else f"{knob_set} without {t}", knob_set,
                    tuple(sorted(have[t].values.items())), knob_set if t == "full" else f"{knob_set}-no-{t}")
            for t in have if t in wanted]


def built(member: Member) -> str | None:
    """Why the lab cannot run the member's service as it stands (a jar not built, a descriptor refused), None where
    it can."""
    try:
        services.load(member.service)
    except LabError as e:
        return str(e)
    return None


def label_of(member: str, what: str, label: str = "") -> str:
    """A series' --label: zoo-<member>-<set or aa>[-label], cut to what --label takes."""
    return "-".join(x for x in ("zoo", member, what, label) if x)[:40].rstrip("-._")


def series_argv(member: Member, variant: Variant | None, trials: int, label: str) -> list[str]:
    """start.sh's argv for one series: the variant against default, or an A/A series where variant is None."""
    given = ["--aa"] if variant is None else variant.argv()
    return [START, *member.load_argv(), *given, "--repeat", str(trials), "--label", label]


def row_of(member: Member, knob_set: str, folder: Path | None, exit_code: int) -> dict:
    """A table row: the series' effects as its verdict.json says, or why there is none."""
    row = {"member": member.name, "stands_for": member.stands_for, "load": member.load_said(), "set": knob_set,
           "series": folder.name if folder else None, "exit": exit_code}
    return read_effects(row, folder)


def read_effects(row: dict, folder: Path | None) -> dict:
    """The row with its series' effects as the folder's verdict.json says now (None where it has none)."""
    row = dict(row)
    verdict = verdict_file.read(folder) if folder else None
    if verdict is None:
        return {**row, "effects": None}
    row["effects"] = {name: {k: (verdict.effects.get(name) or {}).get(k) for k in ("estimate", "low", "high")}
                      for name, _ in FIGURES if verdict.effect(name)}
    row["intervals"] = (verdict.effects.get("tps") or {}).get("intervals")
    row["design"] = verdict.written.get("design")
    return row


def _series_made(before: set[str], label: str) -> Path | None:
    made = sorted(p for p in paths.RESULTS.glob(f"*-{label}-series") if p.name not in before)
    return made[-1] if made else None


def run_series(argv: list[str], label: str, log: Path) -> tuple[Path | None, int]:
    """One series by ./start.sh, its output into log; (its series folder, start.sh's exit code)."""
    before = {p.name for p in paths.RESULTS.glob("*")} if paths.RESULTS.exists() else set()
    with log.open("a", encoding="utf-8") as out:
        out.write("$ " + " ".join(argv) + "\n")
        out.flush()
        code = subprocess.run(argv, stdout=out, stderr=subprocess.STDOUT, cwd=paths.ROOT).returncode
    return _series_made(before, label), code


def _trials(folder: Path) -> list[Path]:
    """The series' trial folders as its verdict.json names them (none where it has no verdict)."""
    verdict = verdict_file.read(folder)
    return [paths.RESULTS / t for t in (verdict.written.get("trials") or [])] if verdict else []


def recombined(folder: Path) -> bool:
    """The series combined again over its trials, so that its verdict pools every A/A run of its load made since (an
    A/A zoo after it); False where its trials are gone or the report failed."""
    trials = _trials(folder)
    if not trials or not all(t.is_dir() for t in trials):
        return False
    return not reporting.report_command("combine", folder, *trials, log=print,
                                        what=f"combined report of {folder.name}")


def ran(folder: Path) -> tuple[dict, str] | None:
    """What the series' tuned side ran: its first trial's values for the machine tuned and its commit; None where
    that trial is gone."""
    trials = _trials(folder)
    run_json = trials[0] / "run.json" if trials else None
    if run_json is None or not run_json.is_file():
        return None
    run = json.loads(run_json.read_text(encoding="utf-8"))
    return (run.get("machine_overrides") or {}).get("tuned") or {}, str(run.get("git_commit") or "")[:7]


def _values_of(name: str) -> dict | None:
    """The values a row's variant names today: a set's, or an ablation's ("SET without TIER"); None where unknown."""
    knob_set, _, tier = name.partition(" without ")
    try:
        return dict(knob_sets.values(knob_set), **dict(ablation(knob_set, tier)[0].reverted if tier else ()))
    except (ValueError, ZooError):
        return None


def named_now(name: str, values: dict, commit: str) -> str:
    """A row's set named as the sets are now: its own name while that set still holds the values its runs had (a knob
    the service's fit left out may be missing from them), else the set that holds them now ("tuned-emulated (run as
    tuned)"), else its name at the commit it ran ("tuned as of 4303f4e")."""
    def holds(want: dict | None) -> bool:
        return want is not None and all(k in want and want[k] == v for k, v in values.items())
    if holds(_values_of(name)):
        return name
    now = [n for n in knob_sets.names() if n != name and holds(knob_sets.values(n))]
    best = min(now, key=lambda n: len(knob_sets.values(n)), default=None)
    return f"{best} (run as {name})" if best else f"{name} as of {commit}"


def current(row: dict, refresh: bool = False) -> dict:
    """The row with its series' verdict as its folder holds it now (combined again first where refresh), its set
    named as the sets are now (`named_now`); as it was written where the folder is gone, or the combination
    failed."""
    folder = paths.RESULTS / row["series"] if row.get("series") else None
    if folder is None or not folder.is_dir() or (refresh and not recombined(folder)):
        return row
    had = ran(folder)
    return read_effects({**row, "set": named_now(row["set"], *had) if had else row["set"]}, folder)


def merged(files: list[Path], refresh: bool = False) -> tuple[list[dict], dict[str, str]]:
    """The rows of several zoos' zoo.json in the order given (`current`), and what they skipped that none of them
    ran."""
    rows, skipped = [], {}
    for f in files:
        record = json.loads(f.read_text(encoding="utf-8"))
        rows += [current(r, refresh) for r in record["rows"]]
        skipped.update(record.get("skipped") or {})
    ran = {r["member"] for r in rows}
    return rows, {m: why for m, why in skipped.items() if m not in ran}


def _write(folder: Path, record: dict) -> None:
    (folder / "zoo.json").write_text(json.dumps(record, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    (folder / "zoo.md").write_text(table(record["rows"], record["skipped"]), encoding="utf-8")


def _choose(members: list[Member], names: str | None) -> list[Member]:
    if not names:
        return members
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in wanted if n not in {m.name for m in members}]
    if unknown:
        raise ZooError(f"--members: {', '.join(unknown)} not in the zoo (its members: "
                       f"{', '.join(m.name for m in members)})")
    return [m for m in members if m.name in wanted]


def _variants(raw: str, ablate: str | None, tiers: str | None = None, aa_only: bool = False) -> list[Variant]:
    """The sets and ablation asked for; none (aa_only: --sets '' with --aa, A/A runs of each load alone)."""
    sets = [s.strip() for s in raw.split(",") if s.strip()]
    have = set(knob_sets.names())
    unknown = [s for s in [*sets, *([ablate] if ablate else [])] if s not in have]
    if unknown or (not sets and not ablate and not aa_only):
        raise ZooError(f"--sets/--ablate: {', '.join(unknown) or 'none given'}: not a knob set (the lab's: "
                       f"{', '.join(sorted(have))})")
    out = [Variant(s, s, short=s) for s in sets]
    if tiers is not None and not ablate:
        raise ZooError("--tiers: the tiers of an ablation: give --ablate SET")
    return out + [v for v in (ablation(ablate, tiers) if ablate else []) if v.name not in {o.name for o in out}]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.zoo", description=__doc__.split("\n")[0])
    ap.add_argument("--sets", help="knob sets to run against default, comma-separated (default: tuned, unless "
                    "--ablate)")
    ap.add_argument("--ablate", help="a knob set run in full and with each tier it changes reverted at a time")
    ap.add_argument("--tiers", help="the ablation's variants to run: full and/or tiers, comma-separated (default: all)")
    ap.add_argument("--members", help="members to run (default: every member that is built)")
    ap.add_argument("--trials", type=int, default=2, help="runs per series (crossover: 2 or more, even)")
    ap.add_argument("--aa", type=int, default=0, help="A/A runs of each member's load first (0: none; 4 where "
                    "none exist: two leave the interval Hartung–Knapp's t at 1 df, 12.7)")
    ap.add_argument("--label", default="", help="a label for the zoo's folder and its series")
    ap.add_argument("--zoo", type=Path, default=ZOO, help="the zoo file")
    ap.add_argument("--refresh", action="store_true", help="with --table: each series combined again first (its "
                    "verdict then pools the A/A runs of its load made since)")
    ap.add_argument("--plan", action="store_true", help="print what would run, run nothing")
    ap.add_argument("--table", type=Path, nargs="+", metavar="ZOO_JSON",
                    help="print the table of zoo.json files again, their rows together in the order given")
    args = ap.parse_args(argv)
    try:
        if args.table:
            print(table(*merged(args.table, args.refresh)), end="")
            return 0
        if args.trials < 2 or args.trials % 2 or args.aa < 0 or args.aa == 1:
            raise ZooError(f"--trials {args.trials} --aa {args.aa}: trials an even number ≥ 2 (a crossover), "
                           "A/A runs 0 or at least 2")
        if args.label and not LABEL_RE.fullmatch(args.label):
            raise ZooError(f"--label {args.label!r}: letters, digits, '.', '_' or '-', at most 40")
        members = _choose(read_zoo(args.zoo), args.members)
        variants = _variants(args.sets if args.sets is not None else ("" if args.ablate else "tuned"), args.ablate,
                             args.tiers, aa_only=args.aa > 0)
    except (ZooError, OSError, json.JSONDecodeError, KeyError) as e:
        print(f"bench.zoo: {e}", file=sys.stderr)
        return 2
    skipped = {m.name: why for m in members if (why := built(m))}
    plan = [(m, v) for m in members if m.name not in skipped for v in ([None] if args.aa else []) + variants]
    for m, v in plan:
        print(f"{m.name}: {'A/A' if v is None else v.name + ' vs default'}, {args.aa if v is None else args.trials} "
              f"runs, {m.load_said()}" + (f"; reverted: {', '.join(k for k, _ in v.reverted)}" if v and v.reverted
                                          else ""))
    for name, why in skipped.items():
        print(f"{name}: not run: {why}")
    if args.plan or not plan:
        return 0 if plan or args.plan else 1
    folder = run_record.make_run_dir("-".join(x for x in ("bench-zoo", args.label) if x), paths.RESULTS)
    record = {"zoo": str(args.zoo), "sets": [dataclasses.asdict(v) for v in variants], "trials": args.trials,
              "aa": args.aa, "rows": [], "aa_series": {},
              "skipped": skipped}
    _write(folder, record)
    for m, v in plan:
        label = label_of(m.name, v.short if v else "aa", args.label)
        series, code = run_series(series_argv(m, v, args.aa if v is None else args.trials, label), label,
                                  folder / f"{m.name}.log")
        if v is None:
            record["aa_series"][m.name] = {"series": series.name if series else None, "exit": code}
        else:
            record["rows"].append(row_of(m, v.name, series, code))
        _write(folder, record)
        print(f"{m.name} {v.name if v else 'A/A'}: exit {code}, {series.name if series else 'no series folder'}")
    print(table(record["rows"], skipped), end="")
    print(f"results: {folder}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
