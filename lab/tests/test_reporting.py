"""The console's closing lines (lab/experiment/reporting.py print_outcome): the verdict says when the run it
sums up did not complete, as the summary does on top."""
import json

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
