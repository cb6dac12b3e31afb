"""The study's storage (optuna's RDBStorage: the tune folder's SQLite file or a database several workers share), with
optuna's heartbeat: a proposed candidate's trial says it is alive while its run lasts, and one silent for GRACE_S was
interrupted (Ctrl-C, a killed controller) and is failed where a worker next opens the study or proposes. Left
RUNNING, it kept the sampler's constant liar away from its region for good, and a known set interrupted never ran
again: an interrupted known set is queued again.
"""
from __future__ import annotations

import threading
import warnings

import optuna
from optuna.storages._heartbeat import is_heartbeat_enabled

HEARTBEAT_S, GRACE_S = 30, 120           # how often a running trial says it is alive; how long a silence is allowed


def of(url: str):
    """The study's storage with optuna's heartbeat (a SQLite file or a shared database; not a SQLite in memory,
    which one process holds on one connection: the tests')."""
    if url.startswith("sqlite") and ":memory:" in url:
        return url
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        return optuna.storages.RDBStorage(url, heartbeat_interval=HEARTBEAT_S, grace_period=GRACE_S,
                                          heartbeat_stale_trial_callback=again_if_known)


def fail_stale(study: optuna.Study) -> None:
    """optuna's own check of the heartbeats (experimental since 2.9, unchanged since)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        optuna.storages.fail_stale_trials(study)


def again_if_known(study: optuna.Study, trial: optuna.trial.FrozenTrial) -> None:
    """An interrupted known set queued again (a sampled candidate is the sampler's to propose again or not)."""
    if "known" in trial.user_attrs:
        study.enqueue_trial(dict(trial.params), user_attrs={k: trial.user_attrs[k] for k in ("known", "values")
                                                             if k in trial.user_attrs})


class Heartbeat:
    """A proposed trial's heartbeat while its run lasts (a daemon thread: a Ctrl-C never waits for it)."""

    def __init__(self, storage, trial_id: int) -> None:
        self.stop = threading.Event()
        if not is_heartbeat_enabled(storage):
            return

        def beat() -> None:
            while True:
                try:
                    storage.record_heartbeat(trial_id)
                except Exception:       # a storage gone away: the trial is failed by the next worker's check
                    return
                if self.stop.wait(HEARTBEAT_S):
                    return
        threading.Thread(target=beat, daemon=True, name=f"tune-heartbeat-{trial_id}").start()
