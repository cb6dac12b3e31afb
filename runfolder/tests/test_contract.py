"""The run folder's contract: versions, the readers the lab uses, and that it stands alone."""
import ast
import json
from pathlib import Path

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
