"""The host watched during the load (lab/experiment/host_watch.py): a process outside the lab that takes CPU is named
with its share; the lab's own (a recorded daemon's descendants) are counted as the lab's, kernel threads apart."""
import csv
import os
import subprocess
import sys
import time

import runfolder
from lab.experiment import host_watch
from runfolder import schema

BUSY = "import time\nend = time.time() + {s}\nwhile time.time() < end: pass"


def busy(seconds: float, *, under_shell: bool = False) -> subprocess.Popen:
    """A CPU-bound Python for `seconds`; under_shell: as the child of a shell whose PID is returned (a daemon of the
    lab and what it started)."""
    code = BUSY.format(s=seconds)
    if under_shell:
        return subprocess.Popen(["sh", "-c", f'"{sys.executable}" -c "$0" & wait', code])
    return subprocess.Popen([sys.executable, "-c", code])


def test_a_busy_process_outside_the_lab_is_named_with_its_share_and_the_labs_own_is_not(tmp_path):
    lab_daemon = busy(5, under_shell=True)        # the lab's: a root of the lab's and its child
    time.sleep(0.3)
    watch = host_watch.HostWatch(tmp_path, roots={lab_daemon.pid})
    outsider = None
    try:
        watch.started(0)
        outsider = busy(4)                         # starts after the watch: all its CPU is the load's
        time.sleep(4.5)
        summary = watch.stop()
    finally:
        for proc in (lab_daemon, outsider):
            if proc is not None:
                proc.kill()
                proc.wait()
    named = {p["pid"]: p for p in summary["heaviest"]}
    assert outsider.pid in named, summary
    # 4 s of one core over ~4.5 s of a host of N cores, shared with the lab's busy child and whatever else runs
    assert named[outsider.pid]["cpu_pct"] >= 10 / (os.cpu_count() or 1) * 2, summary
    assert named[outsider.pid]["command"] == sys.executable      # its program, never its arguments (the code)
    assert lab_daemon.pid not in named and all(p["command"] != "sh" for p in summary["heaviest"])
    assert summary["lab_cpu_pct"] >= 10 / (os.cpu_count() or 1) * 2, summary
    assert summary["warn"] is True and summary["outside_cpu_pct"] >= named[outsider.pid]["cpu_pct"]
    with open(tmp_path / "host" / "outside.csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert str(outsider.pid) in {r["pid"] for r in rows}
    assert schema.problems("run.json", {**record_stub(), "host_outside": summary}) == []


def test_children_too_short_for_a_scan_are_counted_through_the_parent_that_reaped_them(tmp_path):
    """A shell running short CPU-bound commands one after another (make and its compilers): each lives less than a
    scan's period, and their CPU reaches the shell's own count when it reaps them."""
    code = BUSY.format(s=0.4)
    watch = host_watch.HostWatch(tmp_path, roots=set())
    watch.started(0)
    shell = subprocess.Popen(["sh", "-c", f'for i in 1 2 3 4 5 6 7 8; do "{sys.executable}" -c "$0"; done', code])
    try:
        shell.wait(timeout=30)
        time.sleep(host_watch.SAMPLE_S + 0.5)
    finally:
        shell.kill()
        summary = watch.stop()
    named = {p["pid"]: p for p in summary["heaviest"]}
    assert shell.pid in named, summary
    cpu_s = named[shell.pid]["cpu_pct"] / 100 * summary["seconds"] * summary["host_cpus"]
    # 8 × 0.4 s busy and their starts (less on a shared host); counted twice it would pass 6 s
    assert 1.2 <= cpu_s <= 4.5, (cpu_s, summary)


def test_a_process_is_named_by_its_program_and_script_never_its_other_arguments(tmp_path):
    script = tmp_path / "backup.py"
    script.write_text("import time\ntime.sleep(30)\n")
    proc = subprocess.Popen([sys.executable, str(script), "--password", "s3cret"])
    try:
        time.sleep(0.3)
        assert host_watch.command(proc.pid) == f"{sys.executable} {script}"
    finally:
        proc.kill()
        proc.wait()
    assert host_watch.command(2).startswith("[kthreadd")


def record_stub() -> dict:
    return {"format_version": runfolder.FORMATS["run.json"], "run_id": "x", "status": "complete", "started": "x",
            "load": {}, "host": {}, "design": {}, "phases": {}, "command": []}


def test_the_summary_warns_from_the_threshold_and_names_the_heaviest_first():
    names = {(10, 1): "make -j2", (11, 1): "sleep 100", (12, 1): "gzip big.tar"}
    quiet = host_watch.summarise({(11, 1): 0.1}, names, kernel_s=1.0, lab_s=150.0, seconds=100, cpus=2)
    assert quiet["warn"] is False and quiet["outside_cpu_pct"] == 0.05
    assert quiet["kernel_cpu_pct"] == 0.5 and quiet["lab_cpu_pct"] == 75.0
    limit = host_watch.OUTSIDE_WARN_PCT
    heavy = host_watch.summarise({(10, 1): 2 * limit, (11, 1): 0.1, (12, 1): limit}, names, kernel_s=0, lab_s=0,
                                 seconds=100, cpus=2)
    assert heavy["warn"] is True and heavy["outside_cpu_pct"] >= limit
    assert [p["command"] for p in heavy["heaviest"]] == ["make -j2", "gzip big.tar", "sleep 100"]
    assert host_watch.summarise({}, {}, 0, 0, 0, 2)["warn"] is None


def test_kernel_threads_are_told_apart():
    kthreadd = host_watch._stat(2)
    assert kthreadd is not None and kthreadd.kernel
    assert not host_watch._stat(os.getpid()).kernel
