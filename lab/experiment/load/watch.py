"""What watches a load while it runs (lab/experiment/load/runner.py): a progress line every few seconds from the
growing JTLs, the run folder's disk, and what may end the hold before its planned end: --until-settled (settle.py)
and a tune's race (lab/experiment/tune/race.py)."""
from __future__ import annotations

import time
from pathlib import Path

from lab.experiment import disk
from lab.experiment.load import settle
from lab.experiment.load.jmeter import Progress
from lab.experiment.load.jtl import JtlTail
from lab.experiment.load.process_stats import ProcessStats
from lab.experiment.load.profile import Profile


def clock(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


def percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "-"


class DiskLow(Exception):
    """The run folder's disk fell below disk.FLOOR_BYTES during the load."""


class Raced(Exception):
    """A tune's search run has said what it can (tune/race.py): the hold ends."""


class Settled(Exception):
    """Both machines settled with the steady window --until-settled asks for: the hold ends."""

    def __init__(self, settled: settle.Settled) -> None:
        super().__init__(settled.said())
        self.settled = settled


def watch(proc, console, tails: dict[str, JtlTail], stats: ProcessStats, profile: Profile,
           progress: Progress, every_s: float, run_dir: Path, until_settled_s: int | None = None,
           compiled=None, race=None) -> None:
    """Waits for JMeter to end, printing a progress line every every_s seconds; DiskLow when the run folder's
    disk runs low (looked at every second); _Settled once both machines settled (until_settled_s, looked at every
    settle.EVERY_S after the ramp-up); _Raced once a race is decided (race, looked at as often, once both machines
    settled with a minute of steady state)."""
    last = looked = judged = time.monotonic()
    while proc.poll() is None:
        time.sleep(0.2)
        now = time.monotonic()
        if now - looked >= 1:
            looked = now
            low = disk.low(run_dir)
            if low:
                raise DiskLow(low)
        watched = until_settled_s is not None or race is not None
        if watched and now - judged >= settle.EVERY_S and console.started_at is not None \
                and now - console.started_at >= profile.ramp_up_s:
            judged = now
            if race is not None:
                steady = settle.settled(tails, race.steady_s, compiled() if compiled else None)
                why = race.decided(settle.paired(tails, steady)) if steady is not None else None
                if why:
                    raise Raced(why)
            done = None if until_settled_s is None else settle.settled(tails, until_settled_s,
                                                                      compiled() if compiled else None)
            if done is not None:
                raise Settled(done)
        if now - last < every_s:
            continue
        stats.sample()
        progress(progress_line(console, tails, profile, now - last))
        last = now


def progress_line(console, tails: dict[str, JtlTail], profile: Profile, interval_s: float) -> str:
    if console.started_at is None:
        return "load: JMeter starting"
    elapsed = time.monotonic() - console.started_at
    hold_end = profile.ramp_up_s + profile.duration_s
    phase = "ramp-up" if elapsed < profile.ramp_up_s else "hold" if elapsed < hold_end else "ending"
    if profile.model == "steps":
        stage = next((k for k, (_, start, end) in enumerate(profile.stages(), 1) if start <= elapsed < end), None)
        phase = f"stage {stage}/{len(profile.step_rates)} ({profile.step_rates[stage - 1]:g} req/s)" if stage else \
            "warm-up" if elapsed < profile.ramp_up_s else "ending"
    parts = [f"load: {phase:7} {clock(elapsed)} elapsed, {clock(profile.planned_s - elapsed)} left"]
    for machine, tail in tails.items():
        tail.read()
        count, errors = tail.take_interval()
        parts.append(f"{machine} {count / interval_s:7.1f} req/s {percent(errors, count):>7} err "
                     f"{tail.threads:4d} threads")
    return " | ".join(parts)
