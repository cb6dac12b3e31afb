"""What a tune's runs cost beside their loads, read from a tune folder: for each search run its phases (run.json),
the time from the previous run's load end to its own load start (collection, the report where it is not overlapped,
the next run's provisioning, equal start and check) and how its race ended it (on its value, on its precision, or
held whole). The first run (the machines' cold start) and the second (the first provisioning of another candidate)
are shown but left out of the gaps' summary. Then the rate: the search's runs and candidates an hour, from the first
run's start to the last search run's load end (an A/A block run between them counted in that time). Reads folders
only; prints figures.

    .venv/bin/python -m bench.tune_overhead results/<stamp>-tune [results/<stamp>-tune …]
"""
from __future__ import annotations

import argparse
import datetime
import json
import statistics
from pathlib import Path

from lab.experiment.tune import race


def _epoch(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def runs(tune: Path, data: dict) -> list[tuple[str, dict, float | None, float | None, str, float | None]]:
    """(run folder, phases, load start, load end, how its hold ended, run start) of each search run of the tune
    (data: its tune.json), in order (epoch seconds)."""
    out = []
    for name in data["trials"]:
        run = json.loads((tune.parent / name / "run.json").read_text())
        load = run.get("load") or {}
        start = load["test_start_ms"] / 1000 if load.get("test_start_ms") else None
        ended = race.ended(run)
        how = "value" if race.on_value(ended) else "precision" if ended else "whole"
        out.append((name, run.get("phases") or {}, start, _epoch(load["ended_at"]) if load.get("ended_at") else None,
                    how, _epoch(run["started"]) if run.get("started") else None))
    return out


def show(tune: Path) -> None:
    data = json.loads((tune / "tune.json").read_text())
    made = runs(tune, data)
    gaps = []
    print(f"{tune.name}\n  {'run':44} {'between loads':>13} {'ended on':>9}  phases (s)")
    for i, (name, phases, start, _, how, _) in enumerate(made):
        before = made[i - 1][3] if i else None
        gap = round(start - before) if start and before else None
        if i >= 2 and gap is not None:
            gaps.append(gap)
        said = {k[:-2]: v for k, v in phases.items() if k not in ("to_load_s", "to_end_of_load_s")}
        print(f"  {name:44} {gap if gap is not None else '-':>13} {how:>9}  {said}")
    if gaps:
        print(f"  from run 3: median {statistics.median(gaps):.0f} s between loads (min {min(gaps)}, max {max(gaps)}, "
              f"{len(gaps)} runs)")
    loads = [p.get("load_s") for _, p, *_ in made if p.get("load_s")]
    first, last = made[0][5] if made else None, made[-1][3] if made else None
    if loads and first and last and last > first:
        hours = (last - first) / 3600
        candidates = len({json.dumps(c.get("values"), sort_keys=True) for c in data.get("candidates") or []})
        ended = {how: sum(1 for *_, h, _ in made if h == how) for how in ("value", "precision", "whole")}
        print(f"  search: {len(made)} runs in {hours * 60:.0f} min ({len(made) / hours:.1f} an hour"
              + (f"; {candidates} candidates, {candidates / hours:.1f} an hour" if candidates else "")
              + f"); loads median {statistics.median(loads):.0f} s ({min(loads)}–{max(loads)}); ended on their value "
              f"{ended['value']}, on their precision {ended['precision']}, held whole {ended['whole']}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tunes", nargs="+", type=Path, help="tune folders (results/<stamp>-tune)")
    for tune in parser.parse_args().tunes:
        show(tune)


if __name__ == "__main__":
    main()
