"""TODO docstring"""
from __future__ import annotations
import contextlib
import datetime
import json
import os
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from lab import (collect, hosts, instruments, knob_sets, lifecycle, liveness, load, machines, paths, placement,
                 provision, reporting, services, settings, shell, steps, trial)
from lab.load import engines, generator_pcp




def _finish(t: trial.Trial, record: Record, run_dir: Path, run_id: str, marked_at: float | None, log,
            addresses: dict[str, str] | None = None, dead: dict[str, float] | None = None,
            ports: dict[str, int] | None = None) -> None:
    """Collect, dashboards, report: whatever the run got to, each step on its own. The run folder's
    default/ and tuned/ are the configurations; each says which machine ran it. A step that fails is
    recorded and the next one runs; Ctrl-C during collection or the dashboards skips to the report, and
    during the report ends it: run.json says so either way (status, stopped_at, finish_errors)."""
    if marked_at is not None:
        def pull():
            problems = collect.pull(run_id, run_dir, since_epoch=int(marked_at) - 5, folders=t.folders(), log=log,
                                    profile_window=_measured_window(record.data),
                                    skip=_unreachable(dead, addresses, ports) if dead else None)
            record.update(collect_errors={m: p for m, p in problems.items() if p} or None)
        _finish_step(record, "collect", "collect logs, configs and the PCP archives from both machines", pull)
    else:   # stopped before the load (e.g. a machine that stopped answering while provisioned): its last words
        for side, vm in t.machines.items():
            if collect.copy_serial_console(vm, run_dir / side):
                log(f"{side}: serial console of {vm} kept in {side}/logs/serial-console.log")
    machines_info = {}
    knobs = {}
    addresses = addresses or {}
    for side, vm in t.machines.items():
        mdir = run_dir / side
        knobs[side] = collect.read_knobs(mdir)
        machines_info[side] = {"machine": vm, "ip": addresses.get(vm),
                               "knobs": knobs[side], "versions": collect.read_versions(mdir)}
        if machines_info[side]["versions"] and load.HOME.exists():
            machines_info[side]["versions"]["jmeter"] = record.data.get("load", {}).get("jmeter_version")
    record.update(machines=machines_info, knob_diff=knob_diff(knobs), ended=_utc_now())
    if record.data["status"] == "running":      # everything is gathered; the report is derived from it
        record.update(status="complete")
    if any((run_dir / m / "jmeter.jtl").exists() for m in machines.NAMES) and not _interrupted_after_load(record):
        _finish_step(record, "dashboards", "JMeter dashboards", lambda: load.dashboards(run_dir, progress=log))

    def write_report():
        if reporting.python_m("report", run_dir, log=log) == 0:
            log(f"{run_dir / 'report.html'}")
            log(f"{run_dir / 'summary.md'}")
    _finish_step(record, "report", "report", write_report)
    reporting.print_outcome(run_dir)


FINISH_STEPS = ("collect", "dashboards", "report")


def _interrupted_after_load(record: Record) -> bool:
    return record.data.get("status") == "interrupted" and record.data.get("stopped_at") in FINISH_STEPS


def _finish_step(record: Record, name: str, title: str, work) -> bool:
    """One step after the load: a failure or Ctrl-C is recorded (status, stopped_at, finish_errors) and does
    not stop the steps after it; the run's status keeps the first thing that went wrong. True when it ran.
    phases.<name>_s: how long it took."""
    record.update(phase=name)
    started = time.monotonic()
    error = None
    try:
        with steps.step(title):
            work()
    except KeyboardInterrupt:
        print(f"\nstart.sh: interrupted during {name}"
              + ("; writing the report from what was gathered" if name != "report" else "; no report written"),
              file=sys.stderr)
        if record.data.get("status") in ("running", "complete"):
            record.update(status="interrupted", stopped_at=name)
        error = "interrupted (Ctrl-C)"
    except Exception as failure:      # noqa: BLE001 - the next steps still run on what there is
        print(f"start.sh: {name} failed: {failure}", file=sys.stderr)
        error = f"{type(failure).__name__}: {failure}"
    record.data.setdefault("phases", {})[f"{name}_s"] = round(time.monotonic() - started)
    if error is not None:
        record.data["finish_errors"] = {**(record.data.get("finish_errors") or {}), name: error}
    record.save()
    return error is None
