"""A report's files are written all or none, and last: a failure while rendering or writing leaves the previous
summary.md, report.html and verdict.json as they were (report/output.py), with a message, not a traceback."""
import contextlib
import json
import os
import subprocess
import sys

import pytest

from report.commands import combine as combine_command
from report.commands import run as run_command
from report.output import WriteFailed, write_files

from .conftest import REPO
from .synthetic import paired_samples
from .test_verdict_folders import write_run

OLD = {"summary.md": "old summary\n", "report.html": "<p>old report</p>\n", "verdict.json": '{"verdict": "old"}\n'}


def plant_old_report(folder):
    for name, text in OLD.items():
        (folder / name).write_text(text)


def assert_old_report_kept(folder):
    assert {name: (folder / name).read_text() for name in OLD} == OLD
    assert not [p.name for p in folder.iterdir() if p.name.endswith(".tmp")], "temporary files left behind"


def test_a_chart_that_fails_leaves_the_previous_report_whole(run_copy, monkeypatch):
    plant_old_report(run_copy)

    def broken(*args, **kwargs):
        raise RuntimeError("planted: a chart failed")
    monkeypatch.setattr(run_command, "render", broken)
    with pytest.raises(RuntimeError, match="planted"):
        run_command.build_report(run_copy)
    assert_old_report_kept(run_copy)          # before: verdict.json was new beside the old summary and HTML


def test_a_combined_report_whose_chart_fails_leaves_the_previous_one(tmp_path, monkeypatch):
    trial = write_run(tmp_path / "20261123T110000Z-t1", paired_samples(8, seconds=60))
    series = tmp_path / "20261123T110000Z-series"
    series.mkdir()
    plant_old_report(series)

    def broken(*args, **kwargs):
        raise RuntimeError("planted: the forest plot failed")
    monkeypatch.setattr(combine_command, "forest_png", broken)
    with pytest.raises(RuntimeError, match="planted"):
        combine_command.write(series, [str(trial)])
    assert_old_report_kept(series)


@contextlib.contextmanager
def small_tmpfs(where, size):
    """A tmpfs of `size` mounted on the folder `where` (root only), unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0755", "tmpfs", str(where)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=True)


def small_run(folder):
    """A run folder of 60 s (~60 KiB of JTL) with an old report planted."""
    write_run(folder, paired_samples(3, seconds=60, rate=10.0), warmup=5)
    plant_old_report(folder)
    return folder


def fill(folder):
    """Fills the filesystem of folder up to its last byte."""
    with open(folder / "filler", "wb", buffering=0) as f, contextlib.suppress(OSError):
        while True:
            f.write(b"x" * 4096)


def report(folder):
    return subprocess.run([sys.executable, "-m", "report", "run", str(folder)], cwd=REPO, capture_output=True,
                          text=True, timeout=120)


def test_a_full_disk_keeps_the_previous_report_and_says_so(tmp_path):
    with small_tmpfs(tmp_path / "disk", "512k") as disk:
        folder = small_run(disk / "20261123T100000Z-full")
        fill(disk)
        done = report(folder)
        assert done.returncode == 1, done.stderr
        assert "Traceback" not in done.stderr
        assert f"cannot write summary.md into {folder}: No space left on device" in done.stderr
        assert "the files there before are unchanged" in done.stderr
        assert_old_report_kept(folder)        # before: verdict.json emptied by the write that failed
        (disk / "filler").unlink()
        done = report(folder)                 # room again: all three new
        assert done.returncode == 0, done.stderr
        assert json.loads((folder / "verdict.json").read_text())["verdict"] != "old"
        assert (folder / "report.html").read_text().startswith("<!DOCTYPE html>")


def test_a_read_only_folder_keeps_the_previous_report_and_says_so(tmp_path):
    with small_tmpfs(tmp_path / "disk", "1m") as disk:
        folder = small_run(disk / "20261123T100000Z-ro")
        subprocess.run(["mount", "-o", "remount,ro", str(disk)], check=True)
        done = report(folder)
        assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
        assert "Read-only file system" in done.stderr and str(folder) in done.stderr
        assert_old_report_kept(folder)


def test_files_are_renamed_in_order_with_the_mode_of_a_plain_write(tmp_path):
    paths = write_files(tmp_path / "new", {"a.md": "a", "b.bin": b"\x00b", "verdict.json": "{}"})
    assert [p.name for p in paths] == ["a.md", "b.bin", "verdict.json"]
    assert paths[1].read_bytes() == b"\x00b"
    mask = os.umask(0)
    os.umask(mask)
    assert paths[0].stat().st_mode & 0o777 == 0o666 & ~mask
    with pytest.raises(WriteFailed, match="cannot write"):
        write_files(tmp_path / "new" / "a.md", {"x": "y"})       # a file where the folder should be
