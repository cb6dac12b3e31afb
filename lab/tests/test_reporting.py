"""The console's closing lines (lab/experiment/reporting.py print_outcome): the verdict says when the run it
sums up did not complete, as the summary does on top; and the report run as the lab's user."""
import json
import os
import pwd
import shutil

import pytest

from lab import paths, unprivileged
from lab.errors import BadInput
from lab.experiment import reporting

SUMMARY = "# Run\n\n| | default | tuned |\n| --- | --- | --- |\n| requests | 10 | 12 |\n"


def run_folder(folder, status, **run):
    folder.mkdir(parents=True)
    (folder / "run.json").write_text(json.dumps({"run_id": folder.name, "status": status, **run}))
    (folder / "verdict.json").write_text(json.dumps({"verdict": "tuned: +20 % successful TPS (95 % CI +5 … +37 %)."}))
    (folder / "summary.md").write_text(SUMMARY)
    (folder / "report.html").write_text("<!DOCTYPE html>")
    return folder


def test_an_interrupted_runs_verdict_says_so(tmp_path, capsys):
    folder = run_folder(tmp_path / "r", "interrupted", stopped_at="load", error="Ctrl-C after 21 s")
    reporting.print_outcome(folder)
    out = capsys.readouterr().out
    assert ("Verdict: tuned: +20 % successful TPS (95 % CI +5 … +37 %). (interrupted: stopped at phase load: "
            "Ctrl-C after 21 s; the figures cover only what was gathered)") in out
    assert "| requests | 10 | 12 |" in out and f"Report: {folder / 'report.html'}" in out


def test_a_complete_runs_verdict_is_plain(tmp_path, capsys):
    reporting.print_outcome(run_folder(tmp_path / "r", "complete"))
    assert "Verdict: tuned: +20 % successful TPS (95 % CI +5 … +37 %).\n" in capsys.readouterr().out


def test_a_series_names_the_trial_that_did_not_complete(tmp_path, capsys):
    run_folder(tmp_path / "s-t1", "complete")
    run_folder(tmp_path / "s-t2", "failed", stopped_at="provision", error="ansible failed")
    series = tmp_path / "s-series"
    series.mkdir()
    (series / "verdict.json").write_text(json.dumps({"verdict": "combined.", "trials": ["s-t1", "s-t2"]}))
    reporting.print_outcome(series)
    assert ("Verdict: combined. (failed: trial s-t2 stopped at phase provision: ansible failed; the figures cover "
            "only what was gathered)") in capsys.readouterr().out


def test_an_unreadable_verdict_is_named(tmp_path, capsys):
    folder = run_folder(tmp_path / "r", "complete")
    (folder / "verdict.json").write_text('{"verdict": "tun')
    reporting.print_outcome(folder)
    assert f"No verdict: {folder / 'verdict.json'} cannot be read." in capsys.readouterr().out


FIXTURE = paths.ROOT / "report" / "tests" / "fixtures" / "20261122T215957Z-fixture"


@pytest.mark.skipif(os.geteuid() != 0, reason="only a lab run as root hands the report to its own user")
def test_the_report_runs_as_the_labs_user_in_the_folder_lent_to_it(tmp_path, monkeypatch):
    """Issue 53, item 1: the report reads a customer's text (labels, messages): as the lab's user, which writes only
    the folder the command writes, lent for the while (a report of root's made before is replaced all the same)."""
    results = tmp_path / "results"
    monkeypatch.setattr(paths, "RESULTS", results)
    folder = results / FIXTURE.name
    shutil.copytree(FIXTURE, folder)
    (folder / "summary.md").write_text("an old summary of root's\n")
    user = pwd.getpwnam(unprivileged.NAME).pw_uid
    assert reporting.report_command("run", folder, log=print) == 0
    for name in ("summary.md", "report.html", "verdict.json"):
        assert (folder / name).stat().st_uid == user, name
    assert "an old summary" not in (folder / "summary.md").read_text()
    assert folder.stat().st_uid == 0 and (folder / "run.json").stat().st_uid == 0, "lent, then given back"
    assert reporting.report_command("runs", results, "--add", folder, log=print) == 0
    assert (results / ".index" / "index.sqlite").stat().st_uid == user
    st = results.stat()
    assert (st.st_uid, st.st_gid, st.st_mode & 0o022) == (0, 0, 0), "results/ writable by root alone"
    assert (results / ".index").stat().st_uid == 0, "its folder lent, then given back"
    assert reporting.report_command("runs", results, log=print) == 0      # a rebuild over the index it wrote


@pytest.mark.skipif(os.geteuid() != 0, reason="only a lab run as root lends folders to its own user")
def test_a_folder_outside_results_is_never_lent_and_a_host_folder_is_no_run(tmp_path, monkeypatch):
    """bench/inputs.py found `./start.sh report /etc` wrote summary.md, report.html and verdict.json into /etc (its
    default/ passed for a run folder's), and /etc was lent to the lab's user meanwhile: a folder of the host's, lent,
    could have its entries replaced. A folder outside results/ holding anything is refused, and left as it was."""
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    host = tmp_path / "etc"
    (host / "default").mkdir(parents=True)
    (host / "passwd").write_text("root:x:0:0\n")
    with pytest.raises(ValueError, match="is not a run folder"):
        reporting.report(host)
    theirs = tmp_path / "elsewhere" / FIXTURE.name
    shutil.copytree(FIXTURE, theirs)
    with pytest.raises(BadInput, match="writes reports only in its results/"):
        reporting.report(theirs)
    assert theirs.stat().st_uid == 0 and not (theirs / "summary.md").exists()
    assert sorted(p.name for p in host.iterdir()) == ["default", "passwd"]
