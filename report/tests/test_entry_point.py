"""python -m report imports only the command asked for: a lab run calls `runs --add` and `gate` after its report, and
each took 8-10 s to import the statistics (arch, scipy, pandas) they never use (issue 54 item 5: a run's cost beside
its load)."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from report.commands import runs

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "report" / "tests" / "fixtures" / "20261122T215957Z-fixture"
PROBE = ("import sys; from report.__main__ import main; code = main(sys.argv[1:]); "
         "print(sorted(m for m in ('arch', 'scipy', 'pandas', 'matplotlib') if m in sys.modules))")


def imported(*argv: str) -> str:
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)
    return done.stdout.strip().splitlines()[-1]


@pytest.mark.parametrize("command", ["runs", "gate"])
def test_a_light_command_imports_no_statistics(tmp_path, command):
    results = tmp_path / "results"
    shutil.copytree(FIXTURE, results / FIXTURE.name)
    folder = results / FIXTURE.name
    if command == "gate":       # a verdict to judge, by the report command (which imports them all)
        subprocess.run([sys.executable, "-m", "report", "run", str(folder)], cwd=ROOT, check=True,
                       capture_output=True, timeout=300)
    argv = (["runs", str(results), "--add", str(folder)] if command == "runs"
            else ["gate", str(folder), "--gate", "errors<=100%"])
    assert imported(*argv) == "[]"
    assert (results / runs.INDEX).is_file() if command == "runs" else (folder / "gates.xml").is_file(), \
        "and it did its work"


def test_each_command_still_has_its_arguments_and_help_lists_them_all():
    done = subprocess.run([sys.executable, "-m", "report", "run", "--help"], cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert "--warmup" in done.stdout and "report.html" in done.stdout
    listed = subprocess.run([sys.executable, "-m", "report", "--help"], cwd=ROOT, capture_output=True, text=True,
                            timeout=120).stdout
    assert all(name in listed for name in ("run", "runs", "gate", "history", "tune"))
