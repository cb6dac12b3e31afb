"""The end of a trial, whatever it got to: collection from both machines, JMeter's dashboards, the report. Each
step runs on its own: a failure or Ctrl-C in one is recorded in run.json (status, stopped_at, finish_errors) and
the next still runs on what there is."""
from __future__ import annotations

import contextlib
import datetime
import sys
import time
from pathlib import Path

from lab import machines, steps
from lab.experiment import collect, design, disk, liveness, load, record, reporting
from lab.machines import reach
from runfolder import read_json


def finish(t: design.Trial, rec: record.Record, run_dir: Path, run_id: str, marked_at: float | None, log,
            addresses: dict[str, str] | None = None, dead: dict[str, float] | None = None,
            ports: dict[str, int] | None = None, dashboards: bool = True, report: bool = True) -> None:
    """Collect, dashboards, report: whatever the run got to, each step on its own. The run folder's
    default/ and tuned/ are the configurations; each says which machine ran it. A step that fails is
    recorded and the next one runs; Ctrl-C during collection or the dashboards skips to the report, and
    during the report ends it: run.json says so either way (status, stopped_at, finish_errors). report=False:
    the report and the index are left to report_later (run.json's report says so meanwhile)."""
    if marked_at is not None:
        def pull():
            problems = collect.pull(run_id, run_dir, since_epoch=int(marked_at) - 5, folders=t.folders(), log=log,
                                    profile_window=record.measured_window(rec.data),
                                    skip=unreachable(dead, addresses, ports) if dead else None)
            rec.update(collect_errors={m: p for m, p in problems.items() if p} or None)
        finish_step(rec, "collect", "collect logs, configs and the PCP archives from both machines", pull)
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
            machines_info[side]["versions"]["jmeter"] = rec.data.get("load", {}).get("jmeter_version")
    with contextlib.suppress(record.DiskFull):      # run.json says so; the steps below are then skipped
        rec.update(machines=machines_info, knob_diff=record.knob_diff(knobs), ended=record.utc_now())
        if rec.data["status"] == "running":      # everything is gathered; the report is derived from it
            rec.update(status="complete")
    if not dashboards:
        rec.update(dashboards=DEFERRED)
    elif any((run_dir / m / "jmeter.jtl").exists() for m in machines.NAMES) and not interrupted_after_load(rec):
        finish_step(rec, "dashboards", "JMeter dashboards", lambda: load.dashboards(run_dir, progress=log))

    if not report:
        rec.update(report=LATER)
        return
    report_steps(rec, run_dir, log)
    reporting.print_outcome(run_dir)
    if rec.full_at:
        listed = rec.data.get("incomplete") or []
        print(f"start.sh: the disk filled during {rec.full_at} (run.json says so); "
              + (f"may be incomplete: {', '.join(listed)}" if listed else "no file was left half-written")
              + f". Everything gathered is kept in {run_dir}: free some space, then ./start.sh report {run_dir}",
              file=sys.stderr)


def report_steps(rec: record.Record, run_dir: Path, log, own_session: bool = False) -> None:
    """The report, then the run into the index (results/index.sqlite), each a step of its own."""
    def write_report():
        if reporting.report_command("run", run_dir, log=log, own_session=own_session) == 0:
            log(f"{run_dir / 'report.html'}")
            log(f"{run_dir / 'summary.md'}")
    finish_step(rec, "report", "report", write_report)
    finish_step(rec, "index", "the run into results/index.sqlite", lambda: reporting.index_add(run_dir))


def report_later(run_dir: Path) -> None:
    """A run's report and index entry after its finish left them (report=False): a tune's search run, its report
    written while the next run is provisioned (tune/overlap.py). Quiet (the console is the next run's), in a session
    of its own (a Ctrl-C on the terminal is the tune's to handle: it waits for this report, then stops)."""
    data = read_json(run_dir / "run.json")
    with steps.quiet():
        if data is None:        # its run.json unreadable: the report still, run.json left as it is
            reporting.report_command("run", run_dir, log=lambda line: None, own_session=True)
            return
        data.pop("report", None)
        rec = record.Record(run_dir, data)
        report_steps(rec, run_dir, log=lambda line: None, own_session=True)
    if rec.full_at:
        print(f"start.sh: the disk filled during {rec.full_at} of {run_dir.name}'s report", file=sys.stderr)


FINISH_STEPS = ("collect", "dashboards", "report")
LATER = "written after the next run began its provisioning (a tune's search run: lab/experiment/tune/overlap.py)"
DEFERRED = "not made (a tune's search run): ./start.sh report RUN --dashboards makes them"


def interrupted_after_load(rec: record.Record) -> bool:
    return rec.data.get("status") == "interrupted" and rec.data.get("stopped_at") in FINISH_STEPS


def finish_step(rec: record.Record, name: str, title: str, work) -> bool:
    """One step after the load: a failure or Ctrl-C is recorded (status, stopped_at, finish_errors) and does
    not stop the steps after it; the run's status keeps the first thing that went wrong. True when it ran.
    phases.<name>_s: how long it took. On a full disk (below disk.FLOOR_BYTES) a step is skipped: nothing
    more is written, what is there stays whole; a step that fills it is named in run.json with the files it
    was writing."""
    run_dir = rec.path.parent
    started, since = time.monotonic(), time.time()
    error = None
    try:
        rec.update(phase=name)
        full = disk.low(run_dir)
        if full:
            error = f"skipped: the disk is full ({full})"
            print(f"start.sh: {name} skipped: the disk is full ({full})", file=sys.stderr)
            rec.disk_full(name)
        else:
            with steps.step(title):
                work()
            if disk.low(run_dir):       # it ran, and filled the disk: what it wrote is complete only if it says so
                rec.disk_full(name, since=None if name == "collect" and not rec.data.get("collect_errors")
                              else since)
    except KeyboardInterrupt:
        print(f"\nstart.sh: interrupted during {name}"
              + ("; writing the report from what was gathered" if name != "report" else "; no report written"),
              file=sys.stderr)
        if rec.data.get("status") in ("running", "complete"):
            rec.update(status="interrupted", stopped_at=name)
        error = "interrupted (Ctrl-C)"
    except Exception as failure:      # noqa: BLE001 - the next steps still run on what there is
        print(f"start.sh: {name} failed: {failure}", file=sys.stderr)
        error = f"{type(failure).__name__}: {failure}"
        if disk.is_full(failure) or disk.low(run_dir):
            rec.disk_full(name, since=since)
    rec.data.setdefault("phases", {})[f"{name}_s"] = round(time.monotonic() - started)
    if error is not None:
        rec.data["finish_errors"] = {**(rec.data.get("finish_errors") or {}), name: error}
    with contextlib.suppress(record.DiskFull):
        rec.save()
    return error is None


def unreachable(dead: dict[str, float], addresses: dict[str, str],
                ports: dict[str, int] | None = None) -> dict[str, str]:
    """{machine: why collection skips it} for the machines dead at the end of the load that still do not
    answer one more probe now, on their SSH port (collection would otherwise wait on SSH for many minutes)."""
    out = {}
    for vm, since in dead.items():
        if not liveness.probe_once(addresses.get(vm, ""), wrap=reach.wrap, port=(ports or {}).get(vm, liveness.PORT)):
            clock = datetime.datetime.fromtimestamp(since, datetime.UTC).strftime("%H:%M:%S")
            out[vm] = f"{vm} has not answered since {clock} UTC (liveness probe): not collected"
    return out
