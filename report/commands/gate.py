"""python -m report gate FOLDER --gate 'tps>=+10%' [--gate …]: a run's or a series' verdict against gates
(report/history/gates.py says what each reads and why a relative gate is judged on the interval's bound). Writes
FOLDER/gates.xml (JUnit) and adds the outcome to FOLDER/summary.md; exit 3 when a gate fails, 2 for a gate that
cannot be read (nothing written then)."""
from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

from report.errors import BadInput
from report.history import gates
from report.output import WriteFailed, write_files

SECTION = re.compile(r"\n## Gates: .*", re.S)        # the section this command writes (replaced when run again)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", nargs="?", help="a run or series folder (holds verdict.json)")
    parser.add_argument("--check", action="store_true", help="only read the gates (before a run: a bad one is "
                                                             "refused before anything starts)")
    parser.add_argument("--gate", action="append", required=True, metavar="GATE",
                        help="e.g. 'tps>=+10%%', 'errors<=0.1%%', 'errors<=+0.5pt', 'p99<=2s' (repeatable)")


def evaluate(folder: Path, texts: list[str]) -> list[gates.Outcome]:
    """The gates judged on FOLDER's verdict; gates.xml and summary.md's section written. GateError: a gate that
    cannot be read, or no verdict (nothing written)."""
    parsed = [gates.parse(t) for t in texts]
    try:
        verdict = json.loads((folder / "verdict.json").read_text())
    except (OSError, ValueError) as e:
        raise gates.GateError(f"{folder}: no verdict to judge ({e})") from None
    if not isinstance(verdict, dict) or not isinstance(verdict.get("effects") or {}, dict):
        raise gates.GateError(f"{folder / 'verdict.json'}: not a verdict (a JSON object with its `effects` an object)")
    outcomes = gates.judge_all(parsed, verdict.get("effects") or {})
    summary = folder / "summary.md"
    kept = SECTION.sub("", summary.read_text()) if summary.is_file() else ""
    write_files(folder, {"gates.xml": gates.junit(outcomes, folder.name),
                         "summary.md": kept.rstrip("\n") + "\n\n" + gates.markdown(outcomes)})
    return outcomes


def main(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    if args.check:
        try:
            [gates.parse(t) for t in args.gate]
        except gates.GateError as e:
            raise BadInput(str(e)) from None
        return 0
    if args.folder is None:
        raise BadInput("name the run or series folder to judge (or --check)")
    folder = Path(args.folder)
    try:
        outcomes = evaluate(folder, args.gate)
    except gates.GateError as e:
        raise BadInput(str(e)) from None
    except WriteFailed as e:
        print(f"report: {e}", file=sys.stderr)
        return 1
    for o in outcomes:
        print(f"gate {o.gate.text}: {'pass' if o.passed else 'FAIL'} ({o.detail})")
    print(f"gates: {folder / 'gates.xml'}")
    return gates.FAILED_EXIT if any(not o.passed for o in outcomes) else 0
