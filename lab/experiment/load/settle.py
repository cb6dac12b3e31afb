"""--until-settled WINDOW: the hold is a cap, and the load ends once both machines' throughput has settled and WINDOW
of steady state is measured on each (issue 54, item 4: a trial waits for the steady state, with a cap, instead of a
fixed hold). Settled is the report's own rule (report/stats/steady.py: the first 10 s bin from which the rest's
fitted line changes by at most 10 %, with at least a minute and a third of the run left), applied to the JTLs as
JMeter writes them, so the report finds the run settled where the load saw it settle, or a bin or two later: it
sees the seconds the shutdown took as well (petclinic, 20261202T013737Z-s74-petclinic-tune-t1: default at 100 s
for the load, 110 s for the report). The looks are repeated (every EVERY_S) and the first that holds ends the
load: a plateau of WINDOW may still precede a later rise (a C2 compiler's next batch), so WINDOW is the steady
state a run claims, no more.

The report's rule counts the steady state only from where the JIT went quiet, where it knows the JIT's compiling
time; so does the load, from what the trial reads of each machine's JIT while it runs (lab/experiment/jit_watch.py:
the kit's jvm_compilation_time_ms_total every 10 s). A machine whose JIT could not be read is judged by its
throughput alone, and the record says so.

A JVM's warm-up depends on its knobs (a C1-only candidate settles in a minute, the default's C2 compiler took most of
a 6-minute hold in the petclinic tune of 20261201T072331Z on 2 shared cores): a fixed hold either cuts the slow
one's steady window short or waits for nothing on the fast one.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from lab.experiment.load.jtl import JtlTail

EVERY_S = 10.0          # how often the rule is applied to what the JTLs hold (a few ms each time): every bin, so that
                        # a hold ends within a bin of where it could (every 30 s cost a raced run 15 s on average)
MODELS = ("closed",)    # open and steps: the arrival rate is the schedule's, so a flat throughput says nothing


Compiled = dict[str, tuple[list[float], list[float]]]
"""Each machine's JIT as read so far: (epoch seconds, compiling seconds since the JVM started) per reading."""


@dataclass(frozen=True)
class Settled:
    """Where each machine settled (seconds from its first sample), the steady time measured since, and where its JIT
    went quiet (None: not read, judged by its throughput alone)."""
    at_s: dict[str, float]
    steady_s: dict[str, float]
    quiet_s: dict[str, float | None]

    def said(self) -> str:
        def where(m: str) -> str:
            quiet = self.quiet_s.get(m)
            return f"{m} at {self.at_s[m]:.0f} s" + (" (its JIT not read)" if quiet is None else
                                                     f" (its JIT quiet from {quiet:.0f} s)")
        return (f"both machines settled ({', '.join(map(where, self.at_s))}) and ran "
                f"{min(self.steady_s.values()):.0f} s at steady state")

    def record(self) -> dict:
        return {"at_s": self.at_s, "steady_s": self.steady_s, "jit_quiet_s": self.quiet_s}


def settled(tails: dict[str, JtlTail], window_s: float, compiled: Compiled | None = None) -> Settled | None:
    """Settled when every machine's JTL so far has a steady state (the report's rule) at least window_s long, counted
    from where its JIT went quiet where `compiled` holds two readings of it or more."""
    # the report's rule, loaded only for a run that asks for it (numpy: the report's dependency too)
    from report.stats.steady import BIN_S, binned, steady_start
    at, steady, quiet = {}, {}, {}
    for machine, tail in tails.items():
        tail.read()
        if not tail.starts:
            return None
        start, ok = np.asarray(tail.starts), np.asarray(tail.oks, dtype=bool)
        t0 = float(start.min())
        rates = binned(start, ok, t0)
        times, seconds = (compiled or {}).get(machine) or ([], [])
        jit = (np.asarray(times) - t0, np.asarray(seconds)) if len(times) >= 2 else None
        k, first = steady_start(rates, jit)
        if k is None or (len(rates) - k) * BIN_S < window_s:
            return None
        at[machine], steady[machine] = k * BIN_S, (len(rates) - k) * BIN_S
        quiet[machine] = None if jit is None else first * BIN_S
    return Settled(at, steady, quiet)


def paired(tails: dict[str, JtlTail], settled: Settled, machines: tuple[str, str] = ("default", "tuned")
           ) -> list[float]:
    """The paired windows at steady state: each whole bin's tuned ÷ default successful throughput, on one clock (the
    earlier machine's first sample), from where the later machine settled (a race's evidence: tune/race.py)."""
    from report.stats.steady import BIN_S, binned
    starts = {m: np.asarray(tails[m].starts) for m in machines}
    t0 = float(min(s.min() for s in starts.values()))
    rates = {m: binned(starts[m], np.asarray(tails[m].oks, dtype=bool), t0) for m in machines}
    first = int(max(settled.at_s.values()) // BIN_S)
    n = min(len(r) for r in rates.values())
    default, tuned = (rates[m] for m in machines)
    return [float(tuned[i] / default[i]) for i in range(first, n) if default[i] > 0 and tuned[i] > 0]


def check(window_s: int | None, profile) -> str | None:
    """Why --until-settled cannot end this load, or None."""
    if window_s is None:
        return None
    if profile.model not in MODELS:
        return (f"--until-settled: the {profile.model} model's throughput is its arrival schedule's, whatever the "
                "machine does (a closed model only)")
    if not 60 <= window_s < profile.duration_s:
        return (f"--until-settled {window_s} s: at least 60 s (the steady rule's shortest rest) and shorter than the "
                f"hold ({profile.duration_s} s), its cap")
    return None
