"""The fault benchmark's own parts that run without machines: its plan and the disk-full fault's small results
disk (a real tmpfs: mounted over a results folder, filled, and the run folder kept on the real disk after it)."""
import os
import subprocess
import time
from types import SimpleNamespace

import pytest

from bench import faults
from lab import paths
from lab.experiment import disk, load
from lab.experiment.load import watch


def test_every_fault_has_its_triggers_and_unknown_ones_are_refused(capsys):
    for name, (extra, triggers, around, after) in faults.FAULTS.items():
        assert triggers and all(callable(action) for _, _, action in triggers), name
        assert isinstance(extra, list) and (around is None or callable(around)) and (after is None or callable(after))
    with pytest.raises(SystemExit):
        faults.main(["--faults", "kill-jvm,unplug-the-sun"])
    assert "unknown fault(s): unplug-the-sun" in capsys.readouterr().err


def test_a_fault_is_timed_from_the_loads_progress_not_from_any_load_line():
    """A fault fires SETTLE_S after the load's first progress line; the lines the load prints before its requests
    (JMeter assembled beside the boot, the profile) must not start that clock."""
    console = SimpleNamespace(started_at=time.monotonic() - 3)
    for profile in (load.Profile(users=10, ramp_up_s=20, duration_s=180),
                    load.Profile(model="steps", step_rates=(10, 20), ramp_up_s=30)):
        line = f"[00:49]    {watch.progress_line(console, {}, profile, 5.0)}"
        assert faults.LOAD_RUNS.search(line), line
    assert faults.LOAD_RUNS.search("[1:02:03]    load: hold    1:00:41 elapsed, 0:19 left | default 1.0 req/s")
    for before in ("[00:10]    load: assembling JMeter from Maven Central into .lab/jmeter/home (first use)",
                   "[00:44]    load: closed model, 10 users per machine over 20 s, 3:20 planned; JMeter 5.6.3",
                   "[00:45]    load: JMeter starting"):
        assert not faults.LOAD_RUNS.search(before), before


def test_a_containers_links_are_found_by_their_peers_index_in_the_lab_namespace():
    lab_links = ("1: lo: <LOOPBACK,UP,LOWER_UP> mtu 65536 qdisc noqueue state UNKNOWN\n"
                 "4: docker0: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP\n"
                 "7: br-3f2a: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 qdisc noqueue state UP\n"
                 "9: veth1a2b@if8: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 master docker0 state UP\n"
                 "11: vethc3d4@if10: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 master br-3f2a state UP\n"
                 "13: vethe5f6@if12: <BROADCAST,MULTICAST,UP,LOWER_UP> mtu 1500 master br-3f2a state UP\n")
    assert faults.peer_links("9\n11\n", lab_links) == ["veth1a2b", "vethc3d4"]     # the other machine's left alone
    assert faults.peer_links("", lab_links) == []


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
