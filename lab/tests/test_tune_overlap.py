"""Issue 54 item 5: a search run's report written while the next run is provisioned (lab/experiment/tune/overlap.py),
its outcome told before the next run's equal start; the finish that leaves the report for later, and the report then
written by the real report command."""
from __future__ import annotations

import json
import shutil
import sqlite3
import time

import pytest

from lab import paths
from lab.experiment import design, finish, load, options, reporting
from lab.experiment.tune import evidence, overlap, search, space, standin, trials
from lab.provision import catalog

TARGET = {"tomcat_threads_max": 10, "jvm_gc": "parallel"}
FIXTURE = paths.ROOT / "report" / "tests" / "fixtures" / "20261122T215957Z-fixture"


def tune_space():
    return space.parse({"tomcat_threads_max": {"low": 4, "high": 400, "log": True},
                        "jvm_gc": ["serial", "parallel", "g1"]}, catalog.specs())


class Watched(standin.Runs):
    """The stand-in's runs, each phase's order written down: provisioning, the equal start (with how many outcomes
    the study had been told by then) and each deferred report's beginning and end."""

    def __init__(self, *args, tuner: search.Tuner, stop_at: int | None = None, **kw) -> None:
        super().__init__(*args, **kw)
        self.tuner, self.stop_at, self.events = tuner, stop_at, []

    def begun(self) -> int:
        return sum(e[0] == "report begins" for e in self.events)

    def report_later(self, folder) -> None:
        self.events.append(("report begins", folder.name))
        time.sleep(0.3)         # a report takes seconds: the next run's provisioning goes on meanwhile
        self.events.append(("report ends", folder.name))

    def run_trial(self, o, t, s, label: str, before_start=None):
        n = len(self.ran) + 1
        self.events.append(("provision", n))
        if n == self.stop_at:
            raise KeyboardInterrupt
        if n > 1:       # the previous run's report begins beside this provisioning, not after the run
            deadline = time.monotonic() + 10
            while self.begun() < n - 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            assert self.begun() == n - 1, "the previous run's report did not begin beside this one"

        def started():      # the equal start, after before_start
            before_start()
            self.events.append(("equal start", n, len(self.tuner.results())))
        return super().run_trial(o, t, s, label, before_start=started)


def overlapped(stop_at: int | None = None) -> tuple[overlap.Overlapped, Watched]:
    tuner = search.Tuner(tune_space(), "sqlite:///:memory:", "overlap", 60, 0.03, seed=1)
    lab = Watched(standin.StandIn(tune_space(), TARGET, seed=2), paths.RESULTS, [0.0], 90, tuner=tuner,
                  stop_at=stop_at)
    evaluate = trials.Evaluator(options.checked(profile=load.Profile(users=10, ramp_up_s=30, duration_s=60)), None,
                                lab.run_trial, "20261202T000000Z-tune", report_later=lab.report_later)
    return overlap.Overlapped(tuner, evaluate), lab


def test_a_runs_report_is_written_beside_the_next_runs_provisioning_and_told_before_its_equal_start(sets):
    runs, lab = overlapped()
    for _ in range(3):
        runs.step()
    assert len(runs.tuner.results()) == 2 and runs.pending is not None, "the third run's report still under way"
    runs.close()
    assert len(runs.tuner.results()) == 3
    starts = [e for e in lab.events if e[0] == "equal start"]
    assert [told for _, _, told in starts] == [0, 1, 2], "each run's equal start comes after the one before was told"
    for n in (2, 3):
        at = lab.events.index(("equal start", n, n - 1))
        ended = [i for i, e in enumerate(lab.events) if e[0] == "report ends"][n - 2]
        assert ended < at, "nothing of the lab's runs on the host from the equal start on"


def test_ctrl_c_during_the_next_run_keeps_the_outcome_whose_report_was_under_way(sets):
    runs, lab = overlapped(stop_at=2)
    runs.step()
    with pytest.raises(KeyboardInterrupt):
        runs.step()
    runs.close()
    assert len(runs.tuner.results()) == 1 and ("report ends", runs.tuner.results()[0].outcome.run) in lab.events


def test_a_leaders_run_again_under_way_is_not_made_twice():
    """The next run is decided while the previous outcome is untold: a leader whose run again is that pending run
    gets no third one; a new candidate runs instead."""
    tuner = search.Tuner(tune_space(), "sqlite:///:memory:", "pending", 60, 0.03, seed=1, known={"expert": TARGET})
    first = tuner.next_run()
    assert first.known == "expert" and first.trial is not None
    tuner.tell(first, evidence.Outcome(1.4, 1.3, 1.5, run="t1", settled=True))
    again = tuner.next_run()
    assert again.replicate_of == first.trial.number and again.swapped and again.values == TARGET
    assert tuner.next_run(pending=again).trial is not None, "the pending run again is the leader's second"
    told = tuner.tell(again, evidence.Outcome(1.38, 1.3, 1.46, run="t2", settled=True, swapped=True))
    assert told.replicate_of == first.trial.number and tuner.best() is not None


def test_a_finish_that_leaves_the_report_for_later_writes_none_and_says_so(tmp_path, monkeypatch):
    run_dir = tmp_path / "20261202T000000Z-tune-t1"
    run_dir.mkdir()
    rec = finish.record.Record(run_dir, {"run_id": run_dir.name, "status": "running", "phase": "load", "phases": {}})
    monkeypatch.setattr(reporting, "report_command", lambda *a, **k: pytest.fail("a report written with the run"))
    monkeypatch.setattr(reporting, "index_add", lambda *a, **k: pytest.fail("indexed before its report"))
    monkeypatch.setattr(finish.collect, "copy_serial_console", lambda vm, target: False)
    finish.finish(design.plan()[0], rec, run_dir, run_dir.name, marked_at=None, log=lambda line: None, report=False)
    assert json.loads((run_dir / "run.json").read_text())["report"] == finish.LATER


def test_report_later_writes_the_report_and_the_index_entry_and_says_how_long(tmp_path, monkeypatch):
    """The real report command on a recorded run folder, as a tune's thread runs it."""
    results = tmp_path / "results"
    monkeypatch.setattr(paths, "RESULTS", results)
    folder = results / FIXTURE.name
    shutil.copytree(FIXTURE, folder)
    for name in ("report.html", "summary.md", "verdict.json"):
        (folder / name).unlink(missing_ok=True)
    data = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps({**data, "report": finish.LATER}))
    finish.report_later(folder)
    saved = json.loads((folder / "run.json").read_text())
    assert "report" not in saved and not saved.get("finish_errors"), saved.get("finish_errors")
    assert {"report_s", "index_s"} <= set(saved["phases"])
    assert (folder / "report.html").is_file() and json.loads((folder / "verdict.json").read_text())["verdict"]
    with sqlite3.connect(results / ".index" / "index.sqlite") as db:
        assert FIXTURE.name in {row[0] for row in db.execute("SELECT * FROM runs")}


@pytest.mark.parametrize(("found", "left_s", "waits"), [
    (False, 1000, True), (False, 2000, False), (True, 1000, False), (True, 10, False)])
def test_a_run_waits_for_the_pending_outcome_only_where_it_may_make_the_first_finalist(found, left_s, waits):
    from lab.experiment.tune import command
    assert command.waits_for_pending(found, left_s, cap_s=400, reserve_s=1020) is waits


def test_once_a_finalist_is_found_the_runs_go_on_overlapping_to_the_budgets_end(sets, monkeypatch):
    """Stop 78: every run in the last cap + reserve waited for the outcome before it, finalist or not; a finalist's
    reserve is kept whatever the next outcome, so from then on nothing needs to wait."""
    from lab.experiment.tune import command
    searched = tune_space()
    asked, real = [], command.waits_for_pending

    def spy(found, left_s, cap_s, reserve_s):
        asked.append((found, left_s < cap_s + reserve_s, real(found, left_s, cap_s, reserve_s)))
        return asked[-1][2]
    monkeypatch.setattr(command, "waits_for_pending", spy)
    runs = standin.Runs(standin.StandIn(searched, TARGET, seed=2), paths.RESULTS, [0.0],
                        command.OVERHEAD_S["containers"])
    code, folder = command.execute(options.checked(profile=load.Profile(users=10, ramp_up_s=30, duration_s=180)),
                                   None, command.Plan(searched, 180, 0.03, budget_s=6 * 3600), runs,
                                   log=lambda line: None, clock=lambda: runs.clock[0], judge=lambda run_dir: ())
    data = json.loads((folder / "tune.json").read_text())
    assert code == 0 and data["confirmations"], "a finalist found and confirmed"
    in_zone = [waited for found, zone, waited in asked if found and zone]
    assert in_zone and not any(in_zone), f"a finalist found, a run in the zone waited: {asked}"
    assert all(waited == (not found and zone) for found, zone, waited in asked)
