"""What a tune's runs cost beside their loads, read from a tune folder: for each search run its phases (run.json) and
the time from the previous run's load end to its own load start (collection, the report where it is not overlapped,
the next run's provisioning, equal start and check). The first run (the machines' cold start) and the second (the
first provisioning of another candidate) are shown but left out of the summary. Reads folders only; prints figures.

    .venv/bin/python -m bench.tune_overhead results/<stamp>-tune [results/<stamp>-tune …]
"""
from __future__ import annotations

import argparse
import datetime
import json
import statistics
from pathlib import Path


def _epoch(text: str) -> float:
    return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def runs(tune: Path) -> list[tuple[str, dict, float | None, float | None]]:
    """(run folder, phases, load start, load end) of each run the tune made, in order (epoch seconds)."""
    out = []
    for name in json.loads((tune / "tune.json").read_text())["trials"]:
        run = json.loads((tune.parent / name / "run.json").read_text())
        load = run.get("load") or {}
        start = load["test_start_ms"] / 1000 if load.get("test_start_ms") else None
        out.append((name, run.get("phases") or {}, start, _epoch(load["ended_at"]) if load.get("ended_at") else None))
    return out


def show(tune: Path) -> None:
    made = runs(tune)
    gaps = []
    print(f"{tune.name}\n  {'run':44} {'between loads':>13}  phases (s)")
    for i, (name, phases, start, _) in enumerate(made):
        before = made[i - 1][3] if i else None
        gap = round(start - before) if start and before else None
        if i >= 2 and gap is not None:
            gaps.append(gap)
        said = {k[:-2]: v for k, v in phases.items() if k not in ("to_load_s", "to_end_of_load_s")}
        print(f"  {name:44} {gap if gap is not None else '-':>13}  {said}")
    if gaps:
        print(f"  from run 3: median {statistics.median(gaps):.0f} s between loads (min {min(gaps)}, max {max(gaps)}, "
              f"{len(gaps)} runs)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tunes", nargs="+", type=Path, help="tune folders (results/<stamp>-tune)")
    for tune in parser.parse_args().tunes:
        show(tune)


if __name__ == "__main__":
    main()
