"""python -m report tune: tune.md and tune.html from a tune.json as the lab's tune command writes it."""
from __future__ import annotations

import json

import pytest

from report.__main__ import main
from report.read.tune import BadTune, load

SPACE = [{"knob": "tomcat_threads_max", "kind": "int", "low": 4, "high": 400, "log": True},
         {"knob": "jvm_gc", "kind": "choice", "choices": ["serial", "g1"]}]


def row(number, state, hold, threads, gc, ratio=None, low=None, high=None, violations=(), ended="01:00"):
    return {"number": number, "state": state, "hold_s": hold, "values": {"tomcat_threads_max": threads, "jvm_gc": gc},
            "outcome": {"ratio": ratio, "low": low, "high": high, "violations": list(violations),
                        "run": f"20261128T{number:02d}0000Z-t{number}" if ratio else ""},
            "ended": f"2026-11-28T{ended}:00Z"}


def tune(**changes) -> dict:
    data = {"tune_id": "20261128T000000Z-tune", "status": "complete", "started": "2026-11-28T00:00:00Z",
            "ended": "2026-11-28T02:00:00Z", "budget_s": 7200, "spent_s": 7000, "holds_s": [60, 180], "floor": 0.05,
            "space": SPACE, "load": {"model": "closed", "users": 20, "ramp_up_s": 20}, "service": "sample",
            "control": "default", "name": "tune-20261128-0000", "trials": [],
            "results": [row(0, "refused", 0, 3, "g1", violations=["tuned: the spare threads\n  must be"
                                                                     " ≤ the most threads"], ended="00:01"),
                        row(1, "complete", 180, 40, "serial", 1.50, 1.40, 1.61, ended="00:20"),
                        row(2, "pruned", 60, 300, "g1", 1.03, 0.98, 1.08, ended="00:30"),
                        row(3, "complete", 180, 20, "g1", 1.30, 1.12, 1.50, violations=["errors 0.50 % > 0.1 %"],
                            ended="00:50"),
                        row(4, "complete", 180, 60, "serial", 1.62, 1.50, 1.75, ended="01:10")],
            "importance": {"tomcat_threads_max": 0.8, "jvm_gc": 0.2},
            "finalist": {**row(4, "complete", 180, 60, "serial", 1.62, 1.50, 1.75), "counted": True},
            "confirmations": [{"against": "default", "series": "20261128T013000Z-tune-confirm-vs-default-series",
                               "exit": 0, "tps": {"estimate": 1.55, "low": 1.45, "high": 1.66},
                               "p99": {"estimate": 0.6, "low": 0.5, "high": 0.7}, "verdict": "tuned +55 %"},
                              {"against": "tuned", "series": "20261128T014500Z-tune-confirm-vs-tuned-series",
                               "exit": 0, "tps": {"estimate": 1.04, "low": 0.97, "high": 1.11}, "p99": None,
                               "verdict": "no difference | told apart"}],
            "knob_set": "ansible/knob_sets/tune-20261128-0000.yml"}
    data.update(changes)
    return data


def write(tmp_path, data) -> tuple[int, str]:
    folder = tmp_path / "results" / "20261128T000000Z-tune"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "tune.json").write_text(json.dumps(data))
    code = main(["tune", str(folder)])
    return code, (folder / "tune.md").read_text() if (folder / "tune.md").exists() else ""


def test_the_report_gives_the_answer_its_confirmations_what_matters_and_every_trial(tmp_path):
    code, md = write(tmp_path, tune())
    assert code == 0
    assert ("Trial 4, its gain counted in the search: +62 % (+50 % … +75 %) (successful TPS, candidate ÷ control)"
            in md)
    assert "**constraints:** `errors<=0.1%`" in md
    # confirmations written before the looks (tune.json format 4): no look, no decision
    assert "| default | +55 % (+45 % … +66 %) | – | – | −40 % (−50 % … −30 %) |" in md
    assert "| tuned | +4.0 % (−3.0 % … +11 %) | – | – | — |" in md and "no difference / told apart" in md
    assert "`./start.sh --knob-set tuned=tune-20261128-0000`" in md
    assert md.index("| tomcat_threads_max | 0.80 |") < md.index("| jvm_gc | 0.20 |")
    lines = {line.split("|")[1].strip(): line for line in md.splitlines() if line.startswith("| ") and
             line.split("|")[1].strip().isdigit()}
    assert "| refused | — |" in lines["0"], "a refused candidate ran no hold"
    assert "spare threads must be ≤ the most threads" in lines["0"], "its why on one table line"
    assert "| yes |" in lines["1"] and "| no |" in lines["2"], "a pruned candidate inside the floor does not count"
    assert "| no | errors 0.50 % > 0.1 % |" in lines["3"], "a broken constraint never counts"
    assert "[20261128T010000Z-t1](../20261128T010000Z-t1/report.html)" in lines["1"]
    html = (tmp_path / "results" / "20261128T000000Z-tune" / "tune.html").read_text()
    assert "Best so far against time" in html and "data:image/png;base64," in html
    why = "by the lab's estimate " + "these knobs need more " * 30
    _, md = write(tmp_path, tune(results=[row(0, "refused", 0, 3, "g1", violations=[why])]))
    refused = next(line for line in md.splitlines() if line.startswith("| 0 |"))
    assert "… (whole in tune.json)" in refused and len(refused) < 400, "a long refusal cut in the table"


def test_a_confirmation_of_several_looks_shows_its_last_look_and_what_it_decides(tmp_path):
    """tune.json format 5: a confirmation's blocks, the folder combining them, the interval at the last look's level
    and its decision (lab/experiment/tune/sequential.py)."""
    looked = {"against": "tuned", "series": "20261128T014500Z-x-vs-tuned-series", "exit": 0,
              "looks": ["20261128T014500Z-x-vs-tuned-series", "20261128T020000Z-x-vs-tuned-l2-series"],
              "combined": "20261128T021500Z-x-vs-tuned-looks2", "look": 2, "level": 0.98431,
              "tps": {"estimate": 0.99, "low": 0.96, "high": 1.02}, "at_look": {"low": 0.955, "high": 1.027},
              "decision": "as good", "p99": None, "verdict": "no difference"}
    code, md = write(tmp_path, tune(confirmations=[looked]))
    assert code == 0
    assert ("| tuned | −1.0 % (−4.0 % … +2.0 %) | look 2 (98.43 %): −4.5 % … +2.7 % | as good | — | "
            "[20261128T021500Z-x-vs-tuned-looks2](../20261128T021500Z-x-vs-tuned-looks2/report.html) | "
            "[20261128T014500Z-x-vs-tuned-series]") in md, md


def test_a_confirmation_of_one_block_links_it_once_and_says_why_it_is_unsteady_in_one_place(tmp_path):
    one = {"against": "default", "series": "20261128T014500Z-x-vs-default-series", "exit": 0, "look": 1,
           "level": 0.9926, "tps": {"estimate": 1.2, "low": 1.1, "high": 1.3}, "at_look": {"low": 1.05, "high": 1.4},
           "decision": "gain", "p99": None, "verdict": "tuned: +20 %",
           "settled": {"trials": 4, "settled": 3, "unsettled": 1, "compiling": "trial 2"}}
    _, md = write(tmp_path, tune(confirmations=[one]))
    row = next(line for line in md.splitlines() if line.startswith("| default |"))
    assert row.count("20261128T014500Z-x-vs-default-series/report.html") == 1 and "| one |" in row, row
    assert "settled in 3 of 4 trials (**1 still warming up**, **a JIT still compiling through trial 2**)" in row


def test_an_unproven_finalist_and_a_tune_still_running_say_so(tmp_path):
    final = {**row(3, "complete", 180, 20, "g1", 1.02, 0.97, 1.07), "counted": False}
    _, md = write(tmp_path, tune(finalist=final, confirmations=[], knob_set=None))
    assert ("**no candidate's gain cleared the noise floor**: the top feasible one, proven by its confirmation alone"
            in md)
    assert "Confirmed by" not in md and "--knob-set" not in md
    _, md = write(tmp_path, tune(status="running", finalist=None, best=row(1, "complete", 180, 40, "serial", 1.5,
                                                                              1.4, 1.6)))
    assert "No finalist yet: the search has not ended. Best that counts so far: trial 1." in md


def test_a_damaged_tune_json_is_named_and_nothing_is_written(tmp_path, capsys):
    data = tune(results="many")
    folder = tmp_path / "results" / "20261128T000000Z-tune"
    folder.mkdir(parents=True)
    (folder / "tune.json").write_text(json.dumps(data))
    with pytest.raises(BadTune, match="`results` is a string, not a list"):
        load(folder)
    assert main(["tune", str(folder)]) == 2
    assert "`results` is a string, not a list" in capsys.readouterr().err
    assert not (folder / "tune.md").exists() and not (folder / "tune.html").exists()


def run3(number, threads, gc, ratio, low, high, swapped=False, settled=True, replicate_of=None, known=None,
         ended="01:00"):
    """A run of a format-3 tune.json (one hold, replicates, steady state)."""
    return {**row(number, "complete", 360, threads, gc, ratio, low, high, ended=ended),
            "outcome": {**row(number, "complete", 360, threads, gc, ratio, low, high)["outcome"],
                        "settled": settled, "steady_from_s": 150.0 if settled else None, "swapped": swapped,
                        "calibrated": False},
            "replicate_of": replicate_of, "known": known}


def test_a_format_3_tune_shows_candidates_their_runs_orientations_and_steady_windows(tmp_path):
    """Issue 54: each candidate's runs combined, each run's machines and steady window, the answer over its runs."""
    candidate = {"number": 1, "values": {"tomcat_threads_max": 150, "jvm_gc": "g1"}, "runs": [1, 2],
                 "orientations": 2, "settled": True, "feasible": True, "counts": True, "ratio": 1.2, "low": 1.1,
                 "high": 1.31, "known": "tuned"}
    warming = {**candidate, "number": 3, "values": {"tomcat_threads_max": 40, "jvm_gc": "serial"}, "runs": [3],
               "orientations": 1, "settled": False, "counts": False, "ratio": 1.4, "low": 1.2, "high": 1.6,
               "known": None}
    data = tune(format_version=3, holds_s=[360], base="default", known=["tuned", "article-2018"], between=0.05,
                results=[run3(1, 150, "g1", 1.22, 1.12, 1.33, known="tuned", ended="00:20"),
                         run3(2, 150, "g1", 1.18, 1.08, 1.29, swapped=True, replicate_of=1, ended="00:40"),
                         run3(3, 40, "serial", 1.4, 1.2, 1.6, settled=False, ended="01:00")],
                candidates=[candidate, warming], best=candidate, finalist={**candidate, "counted": True})
    code, md = write(tmp_path, data)
    assert code == 0
    assert "2 candidates in 3 runs (1 of them a leader run again with the machines' roles swapped)" in md
    assert "Trial 1 (the known set tuned), its gain counted in the search: +20 % (+10 % … +31 %)" in md
    assert "over 2 runs (trials 1, 2)" in md and "Confirmed by `--repeat 4`" in md
    lines = {line.split("|")[1].strip(): line for line in md.splitlines() if line.startswith("| ") and
             line.split("|")[1].strip().isdigit()}
    assert "| replicate of 1 | swapped | +150 s |" in lines["2"] and "| yes |" in lines["2"]
    assert "| proposed | as named | not settled |" in lines["3"] and "| no |" in lines["3"], \
        "a warm-up's +40 % does not count"
    assert "| 3 | — | 3 | 1 | no | +40 % (+20 % … +60 %) | no |" in md, "the candidates table"
    html = (tmp_path / "results" / "20261128T000000Z-tune" / "tune.html").read_text()
    assert "Best so far against time" in html
