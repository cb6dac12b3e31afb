"""What a run folder says about itself: its id, run.json (rewritten whole, atomically, at every change), the
host and commit it ran on, what the load was and did, and the knob catalog's defaults as they were
(knobs-catalog.json: the report reads defaults there, never from a copy of its own)."""
from __future__ import annotations

import contextlib
import datetime
import errno
import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path

from lab import paths
from lab.experiment import disk, load
from lab.provision import catalog

CATALOG_SNAPSHOT = "knobs-catalog.json"
RESERVE = "run.json.reserve"        # room kept for the last run.json on a disk that fills up
RESERVE_BYTES = 1024 * 1024         # a full run.json is ~20 KB
# what run.json keeps when even a full record no longer fits: what the run was and how it ended
ESSENTIAL = ("run_id", "label", "started", "ended", "status", "phase", "stopped_at", "error", "incomplete", "command",
             "design", "load", "phases")


def new_run_id(label: str = "", now: datetime.datetime | None = None) -> str:
    stamp = (now or datetime.datetime.now(datetime.UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{label}" if label else stamp


def make_run_dir(label: str = "", parent: Path | None = None, now: datetime.datetime | None = None) -> Path:
    """A new folder <parent>/<run id> (parent: results/), made here: a folder of the same name (another run
    started in the same second) is never shared, the new one takes the first free suffix -2, -3, …"""
    parent = paths.RESULTS if parent is None else parent
    parent.mkdir(parents=True, exist_ok=True)
    base = new_run_id(label, now)
    for n in range(1, 1000):
        folder = parent / (base if n == 1 else f"{base}-{n}")
        try:
            folder.mkdir()
            return folder
        except FileExistsError:
            continue
    raise FileExistsError(f"{parent / base}: 999 folders of that name exist")


def write_catalog(run_dir: Path) -> Path:
    """knobs-catalog.json: every knob's out-of-the-box value as ansible/knobs.yml had it for this run, and for a
    knob whose default is null what null means there (`unset`, e.g. HTTPD's own 150 workers)."""
    unset = {name: str(spec["unset"]) for name, spec in catalog.specs().items()
             if "unset" in spec and not spec.get("inventory")}
    path = run_dir / CATALOG_SNAPSHOT
    path.write_text(json.dumps({"source": "ansible/knobs.yml", "defaults": catalog.defaults(), "unset": unset},
                               indent=2, sort_keys=True, default=str) + "\n")
    return path


def utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class DiskFull(OSError):
    """The disk filled while run.json was saved: run.json says where (status failed, error "disk full at …")."""


class Record:
    """run.json, rewritten whole (atomically) at every change. On a full disk the previous run.json stays whole
    (the new one goes to a temporary file first, removed when it cannot be written): the reserve kept beside it
    is freed, then the record is written again, whole or cut to its essentials, saying the disk filled (the
    first time, DiskFull stops the phase that was running)."""

    def __init__(self, run_dir: Path, data: dict) -> None:
        self.path = run_dir / "run.json"
        self.data = data
        self.full_at: str | None = None     # the phase during which the disk filled
        self.save()

    def update(self, **changes) -> None:
        self.data.update(changes)
        self.save()

    def _write(self, data: dict) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        try:
            tmp.write_text(json.dumps(data, indent=2, default=str) + "\n")
            os.replace(tmp, self.path)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise

    def save(self) -> None:
        try:
            self._write(self.data)
            return
        except OSError as failure:
            if not disk.is_full(failure):
                raise
        first = self.full_at is None
        if first:
            self.disk_full(self.data.get("phase") or "start", save=False)
        self.release_reserve()
        for data in (self.data, {**{k: self.data[k] for k in ESSENTIAL if k in self.data},
                                 "cut": "the disk was full: run.json keeps only its essentials"}):
            try:
                self._write(data)
                break
            except OSError as failure:
                if not disk.is_full(failure):
                    raise
        else:
            print(f"start.sh: {self.path} could not be saved (disk full): it keeps its previous state",
                  file=sys.stderr)
        if first:
            raise DiskFull(errno.ENOSPC, f"disk full at {self.full_at}", str(self.path))

    def disk_full(self, phase: str, since: float | None = None, save: bool = True) -> None:
        """The disk filled during `phase`: the run failed there (unless it already had), and the files written
        since `since` (epoch s; the phase's start) may be incomplete."""
        self.full_at = self.full_at or phase
        changes = {"incomplete": self.with_incomplete(written_since(self.path.parent, since)) or None}
        if self.data.get("status") in ("running", "complete"):     # else the first thing that went wrong stays
            changes.update(status="failed", stopped_at=phase, error=f"disk full at {phase}: "
                           + (disk.low(self.path.parent) or "no space left on the device"))
        self.data.update(changes)
        if save:
            self.save()

    def with_incomplete(self, names: list[str]) -> list[str]:
        """run.json's incomplete files (paths inside the run folder) and these, sorted, each once."""
        return sorted(set(self.data.get("incomplete") or []) | set(names))

    def reserve(self, size: int = RESERVE_BYTES) -> None:
        """Room for the last run.json, freed when the disk fills (release_reserve)."""
        with contextlib.suppress(OSError), open(self.path.parent / RESERVE, "wb") as f:
            os.posix_fallocate(f.fileno(), 0, size)

    def release_reserve(self) -> None:
        (self.path.parent / RESERVE).unlink(missing_ok=True)


def written_since(run_dir: Path, since: float | None) -> list[str]:
    """The files of a run folder changed since `since` (epoch s), as paths inside it; run.json and the reserve
    left out (they are the lab's own record)."""
    if since is None:
        return []
    own = {"run.json", "run.json.tmp", RESERVE}
    return sorted(str(p.relative_to(run_dir)) for p in run_dir.rglob("*")
                  if p.is_file() and p.name not in own and p.stat().st_mtime >= since - 1)


def git_commit() -> str | None:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=paths.ROOT, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=paths.ROOT,
                               capture_output=True, text=True)
    except OSError:
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def host_facts() -> dict:
    memory_kb = next((int(line.split()[1]) for line in Path("/proc/meminfo").read_text().splitlines()
                      if line.startswith("MemTotal:")), 0)
    return {"cpus": os.cpu_count(), "memory_mb": memory_kb // 1024}


def knob_diff(knobs: dict[str, dict | None]) -> dict:
    """{knob: {machine: value}} for the knobs whose values differ between the machines."""
    known = [k for k in knobs.values() if k]
    if len(known) < 2:
        return {}
    names = sorted(set().union(*known))
    return {n: {m: (k or {}).get(n) for m, k in knobs.items()} for n in names
            if len({json.dumps((k or {}).get(n), sort_keys=True) for k in knobs.values()}) > 1}


def load_record(profile: load.Profile, scheme: str, warmup_s: int, result: load.LoadResult | None = None) -> dict:
    """run.json's load: the profile, the scheme, the warm-up, and (once it ran) what the load did (samples,
    errors, …)."""
    done = {} if result is None else {k: v for k, v in result.to_dict().items() if k != "profile"}
    return {**asdict(profile), "scheme": scheme, "warmup_s": warmup_s, **done}


def measured_window(data: dict) -> tuple[int, int | None] | None:
    """(from, to) epoch ms of the load's measured window: JMeter's test start + the warm-up, to the load's
    end; None when JMeter never started (the profiles are then kept whole)."""
    load_data = data.get("load", {})
    start_ms = load_data.get("test_start_ms")
    if not start_ms:
        return None
    ended = load_data.get("ended_at")
    end_ms = int(datetime.datetime.fromisoformat(ended).timestamp() * 1000) if ended else None
    return start_ms + int(load_data.get("warmup_s", 0)) * 1000, end_ms
