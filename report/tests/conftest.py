import shutil
import subprocess
import sys
from pathlib import Path

import pytest

FIXTURE = Path(__file__).parent / "fixtures" / "20261122T215957Z-fixture"
REPO = Path(__file__).resolve().parents[2]


def run_report(folder, *args):
    """python -m report run, as start.sh calls it; returns the CompletedProcess."""
    return subprocess.run([sys.executable, "-m", "report", "run", str(folder), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=120)


@pytest.fixture
def run_copy(tmp_path):
    """A writable copy of the recorded fixture run folder."""
    folder = tmp_path / FIXTURE.name
    shutil.copytree(FIXTURE, folder)
    return folder


@pytest.fixture(scope="session")
def fixture_report(tmp_path_factory):
    """The fixture's report, built once: (folder, summary text)."""
    folder = tmp_path_factory.mktemp("report") / FIXTURE.name
    shutil.copytree(FIXTURE, folder)
    done = run_report(folder)
    assert done.returncode == 0, done.stderr
    return folder, (folder / "summary.md").read_text()
