"""The results' disk: what a run needs, checked before anything starts, and how low it may run while the run goes
(below FLOOR_BYTES the lab stops writing: the load is stopped, the steps after it are skipped, run.json says so).

The estimate comes from measured run folders: report/tests/fixtures/20261122T215957Z-fixture (10 users, 165 s of
load under TCG, ~38 req/s per machine) and a 20-user, 210 s run of 2026-11-27 (results/20261127T112440Z-…):
- a JTL line took 118–143 B: JTL_BYTES_PER_SAMPLE;
- the closed model's rate is whatever the servers give: the fixture's 3.8 req/s per user, rounded up to
  CLOSED_REQ_PER_USER_S (a faster host gives more: this is an estimate of the need, not a bound);
- the PCP archive with its metrics.csv took 0.33–0.46 MB per machine-minute and the logs 0.06–0.16 MB:
  PCP_LOGS_BYTES_PER_MIN together, over the load and the minute around it;
- JMeter's dashboard ~3.1 MB per machine, the configs and the report well under 1 MB: FIXED_BYTES per machine.
"""
from __future__ import annotations

import contextlib
import csv
import errno
import shutil
from pathlib import Path

from lab.errors import LabError

MB = 1024 * 1024
JTL_BYTES_PER_SAMPLE = 150
CLOSED_REQ_PER_USER_S = 5
PCP_LOGS_BYTES_PER_MIN = int(0.7 * MB)
FIXED_BYTES = 4 * MB
MACHINES = 2
FLOOR_BYTES = 64 * MB        # kept free: below it the lab stops writing (a run's last run.json still fits)


class NoSpace(LabError):
    """Not enough free space for the run; the message shows the estimate and what is free."""


def is_full(error: BaseException) -> bool:
    """An error that means the disk (or the user's quota) is full."""
    return isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT)


def _existing(path: Path) -> Path:
    path = Path(path).absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def free_bytes(path: Path) -> int:
    """Free space (for an unprivileged writer: root's reserved blocks are left for the last run.json) where path
    is, or would be created."""
    return shutil.disk_usage(_existing(path)).free


def low(path: Path) -> str | None:
    """'N MB free on FOLDER' when the free space where path is has fallen below FLOOR_BYTES, else None."""
    free = free_bytes(path)
    if free >= FLOOR_BYTES:
        return None
    return f"{free / MB:.1f} MB free on {_existing(path)} (the lab stops writing below {FLOOR_BYTES // MB} MB)"


def estimate(profile) -> tuple[int, str]:
    """(bytes, how they were estimated) one trial of this load profile (lab.experiment.load.Profile) leaves."""
    if profile.model == "steps":
        samples = profile.step_rates[0] * profile.ramp_up_s + sum(r * profile.step_s for r in profile.step_rates)
        rate = "the stages' rates"
    elif profile.model == "open":
        samples = profile.rate_per_s * profile.planned_s
        rate = f"{profile.rate_per_s:g} req/s"
    else:
        samples = profile.users * CLOSED_REQ_PER_USER_S * profile.planned_s
        rate = f"≤ {CLOSED_REQ_PER_USER_S} req/s per user × {profile.users} users"
    minutes = profile.planned_s / 60 + 1
    jtl = int(samples * JTL_BYTES_PER_SAMPLE)
    pcp = int(minutes * PCP_LOGS_BYTES_PER_MIN)
    need = MACHINES * (jtl + pcp + FIXED_BYTES)
    return need, (f"{MACHINES} machines × {minutes:.0f} min: JTL ~{jtl / MB:.0f} MB at {rate}, PCP and logs "
                  f"~{pcp / MB:.0f} MB, dashboard and report ~{FIXED_BYTES // MB} MB, each")


def check(profile, trials: int, where: Path) -> None:
    """NoSpace when the disk of `where` (results/) has less free than `trials` trials of `profile` need plus
    FLOOR_BYTES; the message shows the estimate."""
    one, how = estimate(profile)
    need = trials * one + FLOOR_BYTES
    free = free_bytes(where)
    if free < need:
        per = f"{trials} trials × " if trials > 1 else ""
        raise NoSpace(f"not enough free disk for this run: {_existing(where)} has {free / MB:.0f} MB free, the run "
                      f"needs ~{need / MB:.0f} MB ({per}{one / MB:.0f} MB: {how}; plus {FLOOR_BYTES // MB} MB kept "
                      "free). Free some space (old run folders in results/) or shorten the load; nothing was "
                      "started")


class CsvFile:
    """A watch's CSV, one row at a time, flushed: when the disk fills (or the file cannot be written for another
    reason) it stops writing and says why in `cut`, and the watch beside it goes on counting in memory, so
    run.json still gets its summary and lists the file as incomplete."""

    def __init__(self, path: Path, header: list[str]) -> None:
        self.path = Path(path)
        self.cut: str | None = None
        self._file = None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._file = open(self.path, "w", newline="")      # noqa: SIM115 (closed in close())
            self._out = csv.writer(self._file)
        except OSError as failure:
            self._stop(failure)
            return
        self.write(header)

    def write(self, row) -> None:
        if self._file is None:
            return
        try:
            self._out.writerow(row)
            self._file.flush()
        except OSError as failure:
            self._stop(failure)

    def _stop(self, failure: OSError) -> None:
        self.cut = ("the disk filled" if is_full(failure) else f"not writable: {failure.strerror or failure}")
        self.close()

    def close(self) -> None:
        if self._file is not None:
            with contextlib.suppress(OSError):      # its last buffered row on a full disk: already said in cut
                self._file.close()
            self._file = None
