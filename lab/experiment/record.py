"""What a run folder says about itself: its id, run.json (rewritten whole, atomically, at every change), the
host and commit it ran on, what the load was and did, and the knob catalog's defaults as they were
(knobs-catalog.json: the report reads defaults there, never from a copy of its own)."""
from __future__ import annotations

import datetime
import json
import os
import subprocess
from dataclasses import asdict
from pathlib import Path

from lab import paths
from lab.experiment import load
from lab.provision import knobs

CATALOG_SNAPSHOT = "knobs-catalog.json"


def new_run_id(label: str = "", now: datetime.datetime | None = None) -> str:
    stamp = (now or datetime.datetime.now(datetime.UTC)).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{label}" if label else stamp


def write_catalog(run_dir: Path) -> Path:
    """knobs-catalog.json: every knob's out-of-the-box value as ansible/knobs.yml had it for this run, and for a
    knob whose default is null what null means there (`unset`, e.g. HTTPD's own 150 workers)."""
    unset = {name: str(spec["unset"]) for name, spec in knobs.specs().items()
             if "unset" in spec and not spec.get("inventory")}
    path = run_dir / CATALOG_SNAPSHOT
    path.write_text(json.dumps({"source": "ansible/knobs.yml", "defaults": knobs.defaults(), "unset": unset},
                               indent=2, sort_keys=True, default=str) + "\n")
    return path


def utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Record:
    """run.json, rewritten whole (atomically) at every change."""

    def __init__(self, run_dir: Path, data: dict) -> None:
        self.path = run_dir / "run.json"
        self.data = data
        self.save()

    def update(self, **changes) -> None:
        self.data.update(changes)
        self.save()

    def save(self) -> None:
        tmp = self.path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(self.data, indent=2, default=str) + "\n")
        os.replace(tmp, self.path)


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


def load_record(opts, result: load.LoadResult | None = None) -> dict:
    """run.json's load: the profile, the warm-up, and (once it ran) what the load did (samples, errors, …)."""
    done = {} if result is None else {k: v for k, v in result.to_dict().items() if k != "profile"}
    return {**asdict(opts.profile), "scheme": opts.scheme, "warmup_s": opts.effective_warmup_s, **done}


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
