"""`python -m report` refuses bad input as one family (report/errors.py): one line on stderr, `python -m report:
MESSAGE`, exit 2, no usage text and no traceback; nothing written. Anything else that escapes a command is a bug
and still shows as one."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from report.__main__ import main
from report.tests.conftest import REPO


def folders(tmp_path):
    """An empty folder, a run folder's shape (default/ only), a folder whose verdict.json is a list."""
    empty = tmp_path / "empty"
    empty.mkdir()
    run = tmp_path / "run"
    (run / "default").mkdir(parents=True)
    listed = tmp_path / "listed"
    listed.mkdir()
    (listed / "verdict.json").write_text(json.dumps([{"effects": {}}]))
    return empty, run, listed


# each case: its arguments ({empty}, {run}, {listed}: folders()), and what its line says
CASES = {
    "not a run folder": (["run", "{empty}"], "is not a run folder"),
    "no such run folder": (["run", "{empty}/nope"], "no such run folder"),
    "a warm-up of nan": (["run", "{run}", "--warmup", "nan"], "--warmup 'nan': seconds (≥ 0) or auto"),
    "a warm-up of inf": (["run", "{run}", "--warmup", "inf"], "--warmup 'inf': seconds (≥ 0) or auto"),
    "a negative warm-up": (["run", "{run}", "--warmup", "-5"], "--warmup '-5': seconds (≥ 0) or auto"),
    "a warm-up in words": (["run", "{run}", "--warmup", "soon"], "seconds (≥ 0) or auto"),
    "a verdict.json that is a list": (["gate", "{listed}", "--gate", "tps>=+10%"],
                                      "verdict.json: not a verdict"),
    "no verdict.json to gate": (["gate", "{empty}", "--gate", "tps>=+10%"], "no verdict to judge"),
    "a gate that cannot be read": (["gate", "--check", "--gate", "tps>>1"], "gate 'tps>>1'"),
    "a gate without a folder": (["gate", "--gate", "tps>=+10%"], "name the run or series folder"),
    "not a sweep folder": (["sweep", "{empty}"], "is not a sweep folder (no sweep.json)"),
    "not a tune folder": (["tune", "{empty}"], "is not a tune folder (no tune.json)"),
    "one run to compare": (["compare", "{empty}/out", "{run}"], "at least two run folders"),
    "not a results folder": (["runs", "{empty}/nope"], "is not a folder"),
    "a date that is none": (["history", "{empty}", "{empty}/h", "--since", "yesterday"],
                            "history: argument --since: 'yesterday' is not an ISO date"),
    "an unknown option": (["run", "{run}", "--colour", "red"], "run: unrecognized arguments: --colour red"),
    "an unknown command": (["rpt", "{run}"], "invalid choice: 'rpt'"),
}


@pytest.mark.parametrize("case", CASES, ids=list(CASES))
def test_bad_input_is_one_line_and_exit_2(case, tmp_path, capsys):
    argv, says = CASES[case]
    empty, run, listed = folders(tmp_path)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    code = main([a.format(empty=empty, run=run, listed=listed) for a in argv])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip() and "warning:" not in line]
    assert code == 2, err
    assert len(lines) == 1 and lines[0].startswith("python -m report: ") and says in lines[0], err
    assert "usage:" not in err and "Traceback" not in err
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before, "nothing written"


def test_the_process_exits_2_with_the_line(tmp_path):
    empty, _, listed = folders(tmp_path)
    done = subprocess.run([sys.executable, "-m", "report", "gate", str(listed), "--gate", "tps>=+10%"], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 2 and done.stderr.startswith("python -m report: "), done.stderr
    assert "Traceback" not in done.stderr and not (listed / "gates.xml").exists()


def test_an_unexpected_failure_still_shows_as_a_bug(tmp_path, monkeypatch):
    from report.commands import gate

    def broken(folder, texts):
        raise KeyError("effects")
    monkeypatch.setattr(gate, "evaluate", broken)
    with pytest.raises(KeyError):
        main(["gate", str(tmp_path), "--gate", "tps>=+10%"])
