"""python -m report overhead RUN_WITH RUN_WITHOUT: what an instrument costs the JVM, from two runs of the same load,
one with it and one without (e.g. profiling on, and `--set profiler_events=[]`): per configuration, successful
TPS, the JVM's CPU per second and per successful request, its peak RSS, and the change. Prints figures; asserts
nothing.

    .venv/bin/python -m report overhead results/<run with> results/<run without>

Two runs are not paired in time: a change smaller than the runs' own drift (see an A/A pair with
`./start.sh compare`) is not a cost that was measured.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from report.errors import BadInput
from report.render.overhead import table


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("with_folder", type=Path, help="the run with the instrument")
    parser.add_argument("without_folder", type=Path, help="the same load without it")


def main(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    for folder in (args.with_folder, args.without_folder):
        if not (folder / "run.json").is_file():
            raise BadInput(f"{folder}: not a run folder (no run.json)")
    print(f"with: {args.with_folder.name}   without: {args.without_folder.name}")
    print("\n".join(table(args.with_folder, args.without_folder)))
    return 0
