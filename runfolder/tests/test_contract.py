"""The run folder's contract: versions, the readers the lab uses, and that it stands alone."""
import ast
import json
from pathlib import Path

import pytest

import runfolder
from runfolder import gates, summary, verdict

HERE = Path(runfolder.__file__).parent


def test_a_file_without_the_field_is_version_1_and_stamped_files_carry_the_current_one():
    assert runfolder.version({}) == 1 and runfolder.version({"format_version": "x"}) == 1
    stamped = runfolder.stamped("verdict.json", {"verdict": "v", "format_version": 1})
    assert list(stamped)[0] == "format_version" and runfolder.version(stamped) == runfolder.FORMATS["verdict.json"]
    for name, current in runfolder.FORMATS.items():
        assert sorted(runfolder.HISTORY[name]) == list(range(1, current + 1)), f"{name}: every version said"


def test_a_verdict_is_read_old_or_new_and_an_unreadable_one_is_none(tmp_path):
    (tmp_path / "verdict.json").write_text(json.dumps({"verdict": "tuned: +4 %", "effects": {
        "tps": {"estimate": 1.04, "low": 0.98, "high": 1.1, "kind": "ratio"}, "p99": {"estimate": None}}}))
    read = verdict.read(tmp_path)
    assert read.format_version == 1 and read.sentence == "tuned: +4 %"
    assert read.effect("tps") == verdict.Effect(1.04, 0.98, 1.1) and read.effect("p99") is None
    assert read.effect("errors") is None
    (tmp_path / "verdict.json").write_text("{not json")
    assert verdict.read(tmp_path) is None
    assert verdict.read(tmp_path / "missing") is None


def test_the_failed_gates_are_read_from_the_junit_file(tmp_path):
    assert gates.failures(tmp_path) is None
    (tmp_path / "gates.xml").write_text(
        '<testsuite><testcase name="tps&gt;=+10%"><failure message="low +2.1 %"/></testcase>'
        '<testcase name="errors&lt;=0.1%"/></testsuite>')
    assert gates.failures(tmp_path) == ["tps>=+10%: low +2.1 %"]


def test_results_table_is_the_first_markdown_table():
    md = "# Run\n\ntext\n\n| a | b |\n| --- | --- |\n| 1 | 2 |\n\nmore\n\n| x |\n"
    assert summary.results_table(md) == "| a | b |\n| --- | --- |\n| 1 | 2 |"
    assert summary.results_table("no table") == ""


def test_the_contract_imports_neither_the_lab_nor_the_report():
    for path in HERE.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import) else
                     [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not [n for n in names if n.split(".")[0] in ("lab", "report", "bench")], (path.name, names)


# -- the schema: what each JSON file must hold (runfolder/schema.py) ---------------------------------------------

RUN_V2 = {"format_version": 2, "run_id": "20261129T000000Z-x", "status": "complete", "started": "s", "ended": "e",
          "error": None, "load": {}, "host": {}, "provider": "containers", "design": {"kind": "ab"}, "phases": {},
          "command": []}


def test_a_file_is_judged_by_its_own_version():
    from runfolder import schema
    assert schema.problems("run.json", RUN_V2) == []
    old = {k: v for k, v in RUN_V2.items() if k not in ("format_version", "design", "phases", "command")}
    assert schema.problems("run.json", old) == [], "a version 1 file needs none of version 2's fields"
    assert schema.problems("run.json", {**old, "format_version": 2}) == [
        "`design` is missing", "`phases` is missing", "`command` is missing"]
    newer = {"format_version": runfolder.FORMATS["run.json"] + 1}
    assert schema.problems("run.json", newer) == [], "a newer lab's file: its readers take what they know"


def test_the_schema_names_each_field_it_finds_wrong():
    from runfolder import schema
    found = schema.problems("run.json", {**RUN_V2, "status": "done", "load": [], "ended": 3, "run_id": True})
    assert found == ["`run_id` is true or false, not a string", "`ended` is a number, not a string",
                     "`load` is a list, not an object",
                     "`status` is 'done', not one of complete, failed, interrupted, running"]
    verdict_found = schema.problems("verdict.json", {"format_version": 2, "run_id": "r", "verdict": None, "design": {},
                                                     "effects": {"tps": {"estimate": "x"}, "p99": None, "e": 1}})
    assert verdict_found == ["`effects.tps.estimate` is a string, not a number",
                             "`effects.e` is a number, not an object"]
    assert schema.problems("sweep.json", [1]) == ["`(the whole file)` is not an object"]


def test_the_report_reads_with_the_contracts_shapes():
    """One schema: the report's readers of run.json, verdict.json, sweep.json and tune.json use the contract's."""
    from report.read import records, runinfo, sweep, tune
    from runfolder import schema
    assert runinfo.RUN_JSON is schema.RUN and records.VERDICT is schema.VERDICT
    assert sweep.SHAPE is schema.SWEEP and tune.SHAPE is schema.TUNE
    assert tune.REQUIRED == schema.required("tune.json") and sweep.REQUIRED == schema.required("sweep.json")


def test_read_returns_a_good_file_and_names_the_file_and_fields_of_a_bad_one(tmp_path):
    from runfolder import schema
    good = tmp_path / "run.json"
    good.write_text(json.dumps(RUN_V2))
    assert schema.read(good) == RUN_V2
    good.write_text(json.dumps({**RUN_V2, "status": None}))
    with pytest.raises(schema.ContractError, match=r"run.json: not a run.json this lab can read: `status` is missing"):
        schema.read(good)
    good.write_text("{")
    with pytest.raises(schema.ContractError, match="run.json: not JSON"):
        schema.read(good)
    with pytest.raises(schema.ContractError, match="cannot be read"):
        schema.read(tmp_path / "tune.json")


def test_every_recorded_run_folder_of_the_tests_keeps_the_contract():
    """The recorded folders the report's tests read (written by earlier labs: version 1) still read."""
    from runfolder import schema
    fixtures = Path(runfolder.__file__).parent.parent / "report" / "tests" / "fixtures"
    checked = 0
    for path in sorted(fixtures.glob("*/*.json")):
        if path.name in schema.SHAPES:
            assert schema.problems(path.name, json.loads(path.read_text())) == [], path
            checked += 1
    assert checked >= 1
