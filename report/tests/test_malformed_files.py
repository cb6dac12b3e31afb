"""A damaged run.json, verdict.json or sweep.json is named (file, field) and skipped: never fatal for the report of
another run, and for its own run a message, not a traceback."""
import json
import subprocess
import sys

import pytest

from .conftest import REPO
from .synthetic import paired_samples
from .test_verdict_folders import write_run

AA = {"kind": "aa", "configurations": {"default": "default", "tuned": "default"}}


def report(*args):
    return subprocess.run([sys.executable, "-m", "report", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    """A results folder: a good A/A run, then three damaged siblings, then the A/B run to report."""
    root = tmp_path_factory.mktemp("results")
    good = write_run(root / "20261123T080000Z-aa", paired_samples(6, seconds=120), design=AA)
    assert report("run", good).returncode == 0
    whole = (good / "verdict.json").read_text()
    cut = root / "20261123T081000Z-cut"
    cut.mkdir()
    (cut / "verdict.json").write_text(whole[:len(whole) // 2])          # a disk that filled mid-write
    null = root / "20261123T082000Z-null"
    null.mkdir()
    (null / "verdict.json").write_text(json.dumps({**json.loads(whole), "design": None}))
    bad_run = root / "20261123T083000Z-badrun"
    bad_run.mkdir()
    (bad_run / "run.json").write_text('{"run_id": "20261123T083000Z-badrun", "status": ')
    # an A/A whose verdict.json is whole but whose run.json (its load) is not; one whose method.df is not a map
    aa_cut_run = root / "20261123T084000Z-aa-cut-run"
    aa_cut_run.mkdir()
    (aa_cut_run / "verdict.json").write_text(whole)
    (aa_cut_run / "run.json").write_text((good / "run.json").read_text()[:40])
    aa_bad_df = root / "20261123T085000Z-aa-bad-df"
    aa_bad_df.mkdir()
    (aa_bad_df / "verdict.json").write_text(json.dumps({**json.loads(whole), "method": {"df": "many"}}))
    (aa_bad_df / "run.json").write_text((good / "run.json").read_text())
    ab = write_run(root / "20261123T090000Z-ab", paired_samples(5, seconds=120, effect=1.3))
    return {"root": root, "good": good, "cut": cut, "null": null, "bad_run": bad_run, "ab": ab,
            "aa_cut_run": aa_cut_run, "aa_bad_df": aa_bad_df, "done": report("run", ab)}


def test_damaged_siblings_do_not_stop_a_report_and_the_good_calibration_is_found(results):
    done = results["done"]
    assert done.returncode == 0, done.stderr                  # before: AttributeError on "design": null
    assert "Traceback" not in done.stderr
    summary = (results["ab"] / "summary.md").read_text()
    assert ("**Intervals:** within-run noise + between-run variance from 1 matching A/A trial "
            "(20261123T080000Z-aa).") in summary
    assert json.loads((results["ab"] / "verdict.json").read_text())["calibration"]["trials"] == ["20261123T080000Z-aa"]


def test_a_damaged_aa_sibling_is_named_and_not_used(results):
    """An A/A run whose run.json (its load) cannot be read is named and listed as not calibrating; one whose
    verdict.json method.df has another type is named with its field and skipped."""
    stderr, summary = results["done"].stderr, (results["ab"] / "summary.md").read_text()
    assert f"{results['aa_cut_run']}: run.json is not valid JSON (" in stderr
    assert "20261123T084000Z-aa-cut-run (its run.json cannot be read)" in summary
    assert f"{results['aa_bad_df'] / 'verdict.json'}: `method.df` is a string, not an object: skipped" in stderr
    assert "20261123T085000Z-aa-bad-df" not in summary


def test_each_damaged_sibling_is_named_with_its_field(results):
    stderr = results["done"].stderr
    assert f"{results['cut'] / 'verdict.json'}: not valid JSON (" in stderr
    assert f"{results['null'] / 'verdict.json'}: `design` is null, not an object: skipped" in stderr


def test_a_folder_whose_run_json_is_not_json_and_holds_nothing_else_is_not_a_run(results, tmp_path):
    done = report("run", results["bad_run"])
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"{results['bad_run']} is not a run folder (run.json is not valid JSON" in done.stderr
    assert not (results["bad_run"] / "summary.md").exists()
    empty = tmp_path / "empty"
    empty.mkdir()
    done = report("run", empty)
    assert done.returncode == 2 and "run.json is missing" in done.stderr and not (empty / "report.html").exists()


def test_a_compare_naming_a_damaged_run_names_it_and_goes_on(results, tmp_path):
    bad = write_run(tmp_path / "20261123T100000Z-odd", paired_samples(7, seconds=120))
    record = json.loads((bad / "run.json").read_text())
    (bad / "run.json").write_text(json.dumps({**record, "design": "ab"}))
    done = report("compare", tmp_path / "cmp", results["ab"], bad)
    assert done.returncode == 0, done.stderr                  # before: 'str' object has no attribute 'get'
    assert f"{bad}: run.json: `design` is a string, not an object (ignored)" in done.stderr


def test_fields_of_the_wrong_type_in_the_runs_own_run_json_are_named_and_ignored(run_copy):
    record = json.loads((run_copy / "run.json").read_text())
    record.update(design="ab", liveness=[1], host="big", started=20261122)
    record["load"]["warmup_s"] = "thirty"
    (run_copy / "run.json").write_text(json.dumps(record))
    done = report("run", run_copy)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    missing = (run_copy / "summary.md").read_text().split("## Missing or unreadable", 1)[1]
    for said in ("run.json: `design` is a string, not an object (ignored)",
                 "run.json: `liveness` is a list, not an object (ignored)",
                 "run.json: `host` is a string, not an object (ignored)",
                 "run.json: `started` is a number, not a string (ignored)",
                 "run.json: `load.warmup_s` is a string, not a number (ignored)"):
        assert said in missing and said in done.stderr


def write_sweep(folder, trial, **changes):
    folder.mkdir()
    plan = {"kind": "sweep", "sweep_id": folder.name, "status": "complete", "configuration": "tuned",
            "points": [{"label": "v1", "about": "threads 100", "values": {"tomcat_threads_max": 100}, "tier": None,
                        "run_dir": trial.name, "exit_code": 0}], **changes}
    (folder / "sweep.json").write_text(json.dumps(plan))
    return folder


def test_a_sweep_trial_with_a_damaged_verdict_is_named_and_has_none(tmp_path):
    trial = write_run(tmp_path / "20261123T100000Z-v1", paired_samples(9, seconds=60))
    (trial / "verdict.json").write_text(json.dumps({"verdict": "x", "effects": "none"}))
    sweep = write_sweep(tmp_path / "20261123T100000Z-sweep", trial)
    done = report("sweep", sweep)
    assert done.returncode == 0, done.stderr                  # before: 'str' object has no attribute 'get'
    assert f"{trial / 'verdict.json'}: `effects` is a string, not an object: skipped" in done.stderr
    assert "(no verdict; exit 0)" in (sweep / "sweep.md").read_text()


def test_a_damaged_sweep_json_is_named_and_nothing_written(tmp_path):
    trial = write_run(tmp_path / "20261123T100000Z-v1", paired_samples(9, seconds=60))
    sweep = write_sweep(tmp_path / "20261123T100000Z-sweep", trial, points="all")
    done = report("sweep", sweep)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"{sweep / 'sweep.json'}: `points` is a string, not a list" in done.stderr
    assert not (sweep / "sweep.md").exists()


def test_files_run_json_lists_as_incomplete_are_named_with_why(run_copy):
    """A run whose disk filled lists the files it left half-written (run.json incomplete): the report names each
    under "Missing or unreadable" with run.json's error; a malformed list is named and ignored."""
    record = json.loads((run_copy / "run.json").read_text())
    record.update(status="failed", stopped_at="load", error="disk full at load: 40.0 MB free on /r",
                  incomplete=["host/liveness.csv", "tuned/jmeter.jtl"])
    (run_copy / "run.json").write_text(json.dumps(record))
    done = report("run", run_copy)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    missing = (run_copy / "summary.md").read_text().split("## Missing or unreadable", 1)[1]
    for name in ("host/liveness.csv", "tuned/jmeter.jtl"):
        assert f"- {name} — may be incomplete (disk full at load: 40.0 MB free on /r)" in missing
    record["incomplete"] = "tuned/jmeter.jtl"
    (run_copy / "run.json").write_text(json.dumps(record))
    done = report("run", run_copy)
    assert done.returncode == 0 and "run.json: `incomplete` is a string, not a list" in done.stderr
