"""results/index.sqlite under concurrency and without the right to write it (issue 53): rebuilds, adds and reads at
once, in threads and in processes, all succeed and no reader sees fewer runs than the folders hold (before: each
rebuild wrote one fixed temporary name, so two at once failed with 'disk I/O error' or 'attempt to write a
readonly database', and a reader could open the other's empty file); a user who may not write results/ gets the
runs and a message, not a traceback."""
import multiprocessing
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

import pytest

from report.commands.runs import INDEX, refreshed
from report.history import index

from .conftest import REPO
from .test_history import write_run

RUNS = 4
NOBODY = 65534


def results_with_runs(root: Path) -> Path:
    results = root / "results"
    for n in range(1, RUNS + 1):
        write_run(results, n, 30.0 + n)
    return results


def rebuilding(results: Path) -> list[str]:
    """What `runs` and `history` do (the index rebuilt, then read), five times; the problems seen."""
    problems = []
    for _ in range(5):
        try:
            entries, skipped = refreshed(results)
        except Exception as e:       # any failure is what the test counts
            problems.append(f"rebuild: {e!r}")
            continue
        if len(entries) != RUNS or skipped:
            problems.append(f"rebuild then read: {len(entries)} runs, skipped {skipped}")
    return problems


def adding(results: Path) -> list[str]:
    """What a run's end does (`runs --add` of its folder), five times."""
    problems = []
    for _ in range(5):
        try:
            index.add(results / INDEX, sorted(results.glob("2026*"))[-1])
        except Exception as e:
            problems.append(f"add: {e!r}")
    return problems


def reading(results: Path) -> list[str]:
    """A reader of the index as it stands, thirty times."""
    problems = []
    for _ in range(30):
        try:
            seen = len(index.load(results / INDEX))
        except Exception as e:
            problems.append(f"read: {e!r}")
            continue
        if seen != RUNS:
            problems.append(f"read: {seen} runs")
    return problems


@pytest.mark.parametrize("workers", ["threads", "processes"])
def test_rebuilds_adds_and_reads_at_once_all_succeed_and_see_every_run(tmp_path, workers):
    results = results_with_runs(tmp_path)
    index.rebuild(results, results / INDEX)             # readers start from an index: before it, there is none
    jobs = [rebuilding] * 3 + [adding] + [reading] * 2
    pool = (ThreadPoolExecutor(len(jobs)) if workers == "threads" else
            ProcessPoolExecutor(len(jobs), mp_context=multiprocessing.get_context("fork")))
    with pool:
        problems = [p for done in [pool.submit(job, results) for job in jobs] for p in done.result()]
    assert problems == []
    assert [e.id for e in index.load(results / INDEX)] == sorted(p.name for p in results.glob("2026*"))
    index_folder = (results / INDEX).parent
    assert sorted(p.name for p in index_folder.iterdir()) == [".index.sqlite.lock", INDEX.name], \
        "no temporary file left"
    assert sorted(p.name for p in results.iterdir() if not p.is_dir()) == [], "nothing of the index's beside the runs"


@pytest.fixture
def unwritable_results():
    """A results folder with an index, which the user the command runs as may not write: as root, results/ is
    root's and the command runs as nobody (setpriv); as anyone else, results/ is made read-only. Yields (results,
    the command's prefix)."""
    shared = Path(tempfile.mkdtemp(prefix="report-index-", dir="/tmp"))      # pytest's tmp_path is root's only
    shared.chmod(0o755)
    results = results_with_runs(shared)
    index.rebuild(results, results / INDEX)
    for folder, _dirs, files in os.walk(shared):
        for entry in (folder, *(os.path.join(folder, f) for f in files)):
            os.chmod(entry, os.stat(entry).st_mode | stat.S_IROTH | (stat.S_IXOTH if entry == folder else 0))
    if os.geteuid() == 0:
        prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups"]
        if not shutil.which("setpriv") or subprocess.run([*prefix, sys.executable, "-c", ""], cwd=REPO).returncode:
            shutil.rmtree(shared)
            pytest.skip("nobody cannot run this Python (it lives in root's home), or there is no setpriv")
    else:
        prefix = []
        results.chmod(0o555)
    try:
        yield results, prefix
    finally:
        results.chmod(0o755)
        shutil.rmtree(shared)


def as_reader(prefix: list[str], *args) -> subprocess.CompletedProcess:
    env = {**os.environ, "MPLCONFIGDIR": tempfile.gettempdir(), "HOME": tempfile.gettempdir()}
    return subprocess.run([*prefix, sys.executable, "-m", "report", *map(str, args)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=300)


def test_a_reader_who_cannot_write_results_gets_the_runs_and_a_message(unwritable_results):
    results, prefix = unwritable_results
    before = (results / INDEX).read_bytes()
    done = as_reader(prefix, "runs", results)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    assert f"{RUNS} of {RUNS} indexed folders" in done.stdout
    assert f"cannot write {results / INDEX}: Permission denied; the runs are read from the folders" in done.stderr
    assert (results / INDEX).read_bytes() == before
    added = as_reader(prefix, "runs", results, "--add", sorted(results.glob("2026*"))[0])
    assert added.returncode == 1 and "Traceback" not in added.stderr, added.stderr
    assert f"report: cannot write {results / INDEX}: Permission denied" in added.stderr
