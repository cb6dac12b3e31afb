"""The fault benchmark's own parts that run without machines: its plan and the disk-full fault's small results
disk (a real tmpfs: mounted over a results folder, filled, and the run folder kept on the real disk after it)."""
import os
import subprocess

import pytest

from bench import faults
from lab import paths
from lab.experiment import disk


def test_every_fault_has_its_triggers_and_unknown_ones_are_refused(capsys):
    for name, (extra, triggers, around, after) in faults.FAULTS.items():
        assert triggers and all(callable(action) for _, _, action in triggers), name
        assert isinstance(extra, list) and (around is None or callable(around)) and (after is None or callable(after))
    with pytest.raises(SystemExit):
        faults.main(["--faults", "kill-jvm,unplug-the-sun"])
    assert "unknown fault(s): unplug-the-sun" in capsys.readouterr().err


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting a tmpfs needs root")
def test_the_small_results_disk_fills_and_gives_the_run_folder_back(tmp_path, monkeypatch):
    results = tmp_path / "results"
    earlier = results / "20261127T000000Z-earlier"
    earlier.mkdir(parents=True)
    (earlier / "run.json").write_text("{}")
    monkeypatch.setattr(paths, "RESULTS", results)
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    try:
        with faults._small_results():
            assert not earlier.exists(), "the run saw the real results/"
            run = results / "20261127T000100Z-fault-disk-full"
            run.mkdir()
            (run / "run.json").write_text('{"status": "failed"}')
            said = faults._fill_results(None)
            assert disk.free_bytes(results) <= (faults.DISK_LEFT_MB + 1) * disk.MB and "MB left" in said
    except subprocess.CalledProcessError as failure:
        pytest.skip(f"cannot mount a tmpfs here: {failure}")
    assert (earlier / "run.json").read_text() == "{}"
    assert (results / "20261127T000100Z-fault-disk-full" / "run.json").read_text() == '{"status": "failed"}'
    assert not (results / "fault-filler").exists() and not list(tmp_path.glob("lab-fault-disk-*"))
    assert str(results) not in open("/proc/mounts").read()
