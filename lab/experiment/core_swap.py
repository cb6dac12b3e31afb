"""The twins trade host cores half-way through the load's measured window (issue 36).

Pinned, each machine sits on its own host cores for the whole load; whatever favours one core (the host's own
work, JMeter's threads, a tap device's interrupts) then favours one machine in every trial, and an A/A run shows
it as a gap between identical twins. Swapped at the middle of the measured window, each machine spends half of
it on each core, so a core's bias falls on both alike within one trial. The steps model keeps its cores: its
stages are judged one by one, and a swap inside the run would put the early stages on one core, the late on
the other.

`CoreSwap` is given to load.run beside the load generator's watch (`started(pid)` when JMeter is launched);
`stop()` gives each machine its own cores back and returns what run.json keeps as `core_swap`.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable

MODES = ("swap", "fixed")


def swap_at_s(profile, warmup_s: int) -> float:
    """Seconds after the load's start when the cores are traded: the middle of the measured window (from the
    warm-up's end to the planned end, without the open models' drain)."""
    end = profile.planned_s - profile.drain_s
    start = min(warmup_s, end)
    return start + (end - start) / 2


def plan(mode: str, cpusets: dict[str, str], profile, warmup_s: int, until_settled_s: int | None = None,
         raced: bool = False) -> dict:
    """What this trial does with the cores, for run.json (`core_swap`) before the load: swapped at `at_s`, or
    fixed and why."""
    if mode not in MODES:
        raise ValueError(f"cores: '{mode}' is not one of {', '.join(MODES)}")
    if mode == "fixed":
        return {"mode": "fixed", "why": "--cores fixed"}
    if len(cpusets) != 2 or len(set(cpusets.values())) != 2:
        return {"mode": "fixed", "why": "the machines are not pinned to cores of their own"}
    if profile.model == "steps":
        return {"mode": "fixed", "why": "the steps model judges each stage on its own"}
    if until_settled_s is not None:
        return {"mode": "fixed", "why": "--until-settled: the measured window's middle is known only when it ends "
                                        "(a crossover, --repeat 2 or more, cancels a core's bias instead)"}
    if raced:
        return {"mode": "fixed", "why": "a tune's race: the measured window ends when the race is decided (the "
                                        "leader's run in the other orientation cancels a core's bias instead)"}
    return {"mode": "swap", "at_s": round(swap_at_s(profile, warmup_s), 1)}


def traded(cpusets: dict[str, str]) -> dict[str, str]:
    """Each machine's cores given to its twin: {a: A, b: B} → {a: B, b: A}."""
    (a, cores_a), (b, cores_b) = cpusets.items()
    return {a: cores_b, b: cores_a}


class CoreSwap:
    """A thread that, `at_s` seconds after JMeter's launch, pins each machine to its twin's cores (pin: vagrant.py's
    pin_checked, which fails unless libvirt shows them so) and says so. A failed swap is recorded and the load goes
    on: the trial is then one of fixed cores, and run.json says which."""

    def __init__(self, cpusets: dict[str, str], at_s: float, pin: Callable[[str, str, str], None],
                 log=print) -> None:
        self.cpusets, self.at_s, self.pin, self.log = dict(cpusets), at_s, pin, log
        self.result: dict = {"mode": "swap", "at_s": at_s, "swapped_at": None, "error": None}
        self._cancel = threading.Event()
        self._lock = threading.Lock()
        self._swapped = False
        self._thread = threading.Thread(target=self._wait_then_swap, name="core-swap", daemon=True)

    def started(self, pid: int) -> None:     # noqa: ARG002 - load.run's `beside` interface
        self._launched = time.monotonic()
        self._thread.start()

    def _wait_then_swap(self) -> None:
        if self._cancel.wait(self.at_s):
            return
        with self._lock:
            if self._cancel.is_set():
                return
            self._move(traded(self.cpusets), "swap")
            if self.result["error"] is None:
                self._swapped = True
                self.result["swapped_at"] = round(time.time(), 3)
                self.result["after_s"] = round(time.monotonic() - self._launched, 1)
                self.log("cores swapped half-way through the measured window: "
                         + "; ".join(f"{vm} now on {c}" for vm, c in traded(self.cpusets).items()))

    def _move(self, cpusets: dict[str, str], what: str) -> None:
        try:
            for vm, cores in cpusets.items():
                self.pin(vm, cores, f" after the {what}")
        except Exception as failure:    # noqa: BLE001 - the load goes on; run.json says what happened
            self.result["error"] = f"{what}: {failure}"
            self.log(f"WARNING: the machines' cores could not be swapped ({what}): {failure}")

    def stop(self) -> dict:
        """The swap cancelled if it has not happened; each machine on its own cores again if it has."""
        self._cancel.set()
        with self._lock:
            if self._swapped:
                self._move(self.cpusets, "back")
                self._swapped = False
        if self._thread.is_alive():
            self._thread.join(5)
        if self.result["swapped_at"] is None and self.result["error"] is None:
            self.result["error"] = "the load ended before the swap"
        return dict(self.result)


class Beside:
    """Several watches as load.run's one `beside`: each told JMeter's pid."""

    def __init__(self, *watches) -> None:
        self.watches = [w for w in watches if w is not None]

    def started(self, pid: int) -> None:
        for watch in self.watches:
            watch.started(pid)
