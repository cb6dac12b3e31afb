"""A search run's report written while the next run is prepared (issue 54 item 5): once a run's files are collected
from the machines, the next run is decided and provisioned while a thread writes the run's report, and that
report's outcome is told to the study before the next run's equal start — so the host runs nothing of the lab's from
the equal start on, and the report no longer waits in line between two runs.

The next run is decided with the previous one's outcome not yet known: the sampler sees that trial as running, and
a leader's run again waits one run where the outcome just told makes a new leader. A run that stops before its
equal start has the outcome told after it. On Ctrl-C the report under way is finished and told (it runs in a session
of its own, out of the terminal's reach), so an interrupted tune keeps every run whose load ended.
"""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from lab.experiment.tune import evidence, search, trials


class Overlapped:
    """The search's runs one after another, each run's report beside the next run's provisioning; told(result) for
    each outcome told."""

    def __init__(self, tuner: search.Tuner, evaluate: trials.Evaluator,
                 told: Callable[[evidence.Result], None] = lambda result: None) -> None:
        self.tuner, self.evaluate, self.told = tuner, evaluate, told
        self.pending: tuple[search.Next, Future] | None = None
        self.pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="tune-report")

    def step(self) -> Path:
        """The next run made, its folder returned; its report begun in the background (settle() tells its outcome)."""
        run = self.tuner.next_run(self.pending[0] if self.pending else None)
        made = self.evaluate.run(run.values, self.tuner.hold_s, run.swapped, before_start=self.settle)
        self.settle()           # where the run stopped before its equal start
        self.pending = (run, self.pool.submit(self.evaluate.judged, made))
        return made.run_dir

    def settle(self) -> evidence.Result | None:
        """The pending run's outcome, once its report is written, told to the study; None when none is pending."""
        if self.pending is None:
            return None
        run, report = self.pending
        outcome = report.result()       # a Ctrl-C while waiting leaves it pending: close() waits again
        self.pending = None
        result = self.tuner.tell(run, outcome)
        self.told(result)
        return result

    def close(self) -> None:
        """The last report waited for and told; the thread ended."""
        try:
            self.settle()
        finally:
            self.pool.shutdown()
