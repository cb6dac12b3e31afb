"""PCP on a load generator (lab/experiment/load/generator_pcp.py), this host standing in for one: the lab's own pmlogger
against the real pmcd (started here for the test when none answers, and stopped again by its PID), stopped by
its PID, the archive and the tidy metrics brought back into the run folder."""
import csv
import os
import subprocess
import time
from pathlib import Path

import pytest

from lab.experiment.load import engines, generator_pcp

PMCD_PID = Path("/run/pcp/pmcd.pid")


def system(*argv: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(["env", f"PATH={engines.SYSTEM_PATH}", *argv], capture_output=True, text=True, **kw)


@pytest.fixture(scope="module")
def pmcd():
    """pmcd answering on this host: the one running, or one started for these tests and stopped after."""
    if subprocess.run(["which", "pmlogger"], capture_output=True).returncode != 0:
        subprocess.run(["bash", "lab/sh/install-pcp.sh"], check=True, cwd=Path(__file__).parents[2])
    if system("pmprobe", "hinv.ncpu").returncode == 0:
        yield None
        return
    started = system("/etc/init.d/pmcd", "start", timeout=120)
    deadline = time.monotonic() + 60
    while system("pmprobe", "hinv.ncpu").returncode != 0:
        assert time.monotonic() < deadline, f"pmcd did not answer: {started.stdout}{started.stderr}"
        time.sleep(1)
    pid = int(PMCD_PID.read_text().split()[0])
    yield pid
    subprocess.run(["kill", str(pid)])


def recorded_pids(run_id: str) -> list[str]:
    """The processes recording for this run (its work folder is in their command line)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if f"{engines.WORK}/{run_id}-pcp/" in cmdline.read_bytes().decode(errors="replace"):
                found.append(cmdline.parent.name)
        except OSError:
            continue
    return found


def recording_seen(run_id: str, within_s: float = 10) -> list[str]:
    """recorded_pids once one shows: right after the start the process may be inside setsid's and nohup's execs,
    when /proc shows an empty command line (seen: CI of 834dabb; here 1 start in ~10 read so)."""
    deadline = time.monotonic() + within_s
    while not (found := recorded_pids(run_id)) and time.monotonic() < deadline:
        time.sleep(0.1)
    return found


def test_a_generator_is_recorded_while_the_load_runs_and_brought_back(pmcd, tmp_path):
    run_id = f"test-{tmp_path.name}"
    gen = engines.Engine("gen1", "127.0.0.1")
    with generator_pcp.GeneratorRecording(run_id, tmp_path, [gen], lambda e: engines.Remote.local(),
                                          log=lambda _: None) as recording:
        assert list(recording.pids) == ["gen1"] and recording_seen(run_id)
        busy = time.monotonic() + 7
        while time.monotonic() < busy:      # some CPU for the generator to show
            sum(range(10000))
    assert recording.problems == {} and recorded_pids(run_id) == []
    assert not Path(f"{engines.WORK}/{run_id}-pcp").exists()
    pcp = tmp_path / "loadgen" / "gen1" / "pcp"
    assert (pcp / "archive.meta").exists() and (pcp / "archive.0").exists()
    rows = list(csv.DictReader(open(pcp / "metrics.csv")))
    metrics = {r["metric"] for r in rows}
    assert {"kernel.all.cpu.idle", "hinv.ncpu", "mem.util.available"} <= metrics, metrics
    assert {r["value"] for r in rows if r["metric"] == "hinv.ncpu"} == {str(os.cpu_count())}


def test_a_generator_without_pcp_is_said_and_the_load_goes_on(tmp_path):
    gen = engines.Engine("bare", "127.0.0.1")
    remote = engines.Remote(lambda script: ["env", "PATH=/nonexistent", "/bin/bash", "-c", script])
    lines = []
    with generator_pcp.GeneratorRecording("t", tmp_path, [gen], lambda e: remote, log=lines.append) as recording:
        pass
    assert recording.problems == {"bare": "not recorded: no pmlogger (PCP is not installed)"}
    assert lines == ["load: WARNING: bare: not recorded: no pmlogger (PCP is not installed)"]
