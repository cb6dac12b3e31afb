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




def run_trial(opts: Options, t: trial.Trial, s: settings.Settings, label: str,
              log=steps.note) -> tuple[int, Path]:
    """One trial in its own run folder; returns (exit code, run folder)."""
    run_id = new_run_id(label)
    run_dir = paths.RESULTS / run_id
    run_dir.mkdir(parents=True, exist_ok=False)
    record = Record(run_dir, {
        "run_id": run_id, "label": label or None, "started": _utc_now(), "ended": None,
        "status": "running", "phase": "start", "stopped_at": None, "error": None,
        "git_commit": _git_commit(), "command": sys.argv[1:], "design": t.record(),
        "load": _load_record(opts),
        "overrides": {c: o for c, o in opts.sets.items() if o}, "host": _host(), "phases": {}})
    print(f"run {run_id}: results in {run_dir}", flush=True)
    marked_at = None
    watch = None            # the load generator's watch, once the load starts
    alive = None            # the machines' liveness watch, while the load runs
    addresses: dict[str, str] = {}      # machine → address, once known
    ssh_ports: dict[str, int] = {}      # machine → its SSH port where it is not 22 (real hosts)
    exit_code = 0

    @contextlib.contextmanager
    def phase(name: str, title: str):
        """A phase of the run: run.json says which is running, and phases.<name>_s how long each took."""
        record.update(phase=name)
        started = time.monotonic()
        try:
            with steps.step(title):
                yield
        finally:
            record.data["phases"][f"{name}_s"] = round(time.monotonic() - started)
            record.save()

    try:
        t0 = time.monotonic()
        overrides = t.overrides(opts.sets)
        jars = provision.jars_beside(overrides, log)      # Maven beside the box build and the boot
        if opts.reached:        # real hosts, checked before the knobs were validated
            resolved = opts.reached
            record.update(provider="hosts", inventory=resolved["inventory_source"],
                          hosts={side: {"host": resolved["hosts"][side], "address": resolved["machines"][side],
                                        **resolved["facts"][side]} for side in machines.NAMES},
                          loadgens={name: {**g, **resolved["facts"].get(name, {})}
                                    for name, g in resolved["loadgens"].items()} or None,
                          machine_memory_mb=resolved["memory_mb"])
        else:
            with phase("up", "machines up"):
                resolved = lifecycle.ensure_up(s)
            record.update(provider="libvirt", accelerator=resolved.get("accelerator"),
                          accelerator_reason=resolved.get("accelerator_reason"),
                          placement=resolved.get("cpusets"), machine_memory_mb=resolved.get("memory_mb"))
        addresses.update(resolved.get("machines", {}))
        ssh_ports.update(resolved.get("ssh_ports") or {})
        targets = t.targets(resolved["machines"], scheme=opts.scheme)
        with phase("provision", "build and provision both machines (Ansible)"):
            record.update(machine_overrides={m: o for m, o in overrides.items() if o})
            # the app is left stopped: the equal start below starts it (one JVM start, not two)
            ran = provision.run(resolved, overrides, log=log, force=opts.provision, start_services=False, jars=jars)
        record.update(provisioned=f"ran: {ran.describe()}" if ran else
                      "skipped (nothing changed since the last provisioning)")
        if ran:   # issue 15: a machine that has just run a full load must come through provisioning
            record.update(provision_memory=provision.report_memory(list(ran.machines), log))
        # the twins' vCPUs share all their host cores while they start (machines.cores_shared), theirs again after
        cpusets = {} if opts.reached else resolved.get("cpusets") or {}
        record.update(start_cores=placement.shared(cpusets) if cpusets else None)
        with machines.cores_shared(cpusets, log=log):
            with phase("restart", "equal start: both machines' services restarted together"):
                starts = services.restart_together()
                record.update(service_starts={"services": list(next(iter(starts.values()), {})), "spread_s": None, **{
                    side: {"machine": vm, "units": starts.get(vm), "ready_after_s": None} for side, vm in t.machines.items()}})
            with phase("check", "both machines answer through HTTPD"):
                ready = check_answers(targets, log, diagnose=lambda side: f"(machine {t.machines[side]})\n"
                                      + services.diagnose(t.machines[side]))
                for side in t.machines:
                    record.data["service_starts"][side]["ready_after_s"] = ready[side]
                record.data["service_starts"]["spread_s"] = max(ready.values()) - min(ready.values())
                record.save()
        record.data["phases"]["to_load_s"] = round(time.monotonic() - t0)
        with phase("load", "the load, on both machines at once"):
            collect.mark(run_id, log=log)
            marked_at = time.time()
            watch = instruments.LoadGeneratorWatch(run_dir)
            alive = liveness.MachineWatch(run_dir, resolved["machines"], wrap=machines.wrap,
                                          on_change=lambda vm, state, since: _said_liveness(vm, state, since, log),
                                          ports=ssh_ports)
            alive.start()
            remote = recording = None
            try:
                with contextlib.ExitStack() as on_generators:
                    remote, recording = _on_generators(run_id, run_dir, resolved, on_generators, log)
                    result = load.run(run_dir, targets, opts.profile, wrap=machines.wrap, progress=log,
                                      beside=watch, engines=remote)
            finally:    # what the generators could not do is kept whatever the load did
                if remote is not None:
                    record.update(loadgen_problems={**remote.problems, **recording.problems} or None)
            record.update(load=_load_record(opts, result))
            if result.interrupted:
                record.update(status="interrupted", stopped_at="load")
                exit_code = 130
        record.data["phases"]["to_end_of_load_s"] = round(time.monotonic() - t0)
    except KeyboardInterrupt:
        record.update(status="interrupted", stopped_at=record.data["phase"])
        print(f"\nstart.sh: interrupted during {record.data['phase']}; collecting what there is", file=sys.stderr)
        exit_code = 130
    except load.LoadError as failure:
        if failure.result is not None:
            record.update(load=_load_record(opts, failure.result))
        record.update(status="failed", stopped_at="load", error=str(failure))
        print(f"start.sh: the load failed: {failure}", file=sys.stderr)
        exit_code = 1
    except Exception as failure:      # noqa: BLE001 - any failure is recorded, then the run folder is finished
        record.update(status="failed", stopped_at=record.data["phase"], error=f"{type(failure).__name__}: {failure}")
        print(f"start.sh: {record.data['phase']} failed: {failure}", file=sys.stderr)
        exit_code = 1
    finally:
        if watch is not None:
            record.update(load_generator=watch.stop())
        dead = {}
        if alive is not None:
            dead = alive.dead()
            record.update(liveness=alive.stop())
        _finish(t, record, run_dir, run_id, marked_at, log, addresses=addresses, dead=dead, ports=ssh_ports)
    if exit_code == 0 and record.data["status"] == "interrupted":     # Ctrl-C after the load
        exit_code = 130
    return exit_code, run_dir


def _on_generators(run_id: str, run_dir: Path, resolved: dict, stack: contextlib.ExitStack, log):
    """Real hosts with a `loadgen` group: JMeter's remote engines there, each recorded by PCP while the load runs
    (both stopped when the stack closes): (engines, recording); (None, None) otherwise (this machine loads the
    targets itself)."""
    generators = resolved.get("loadgens") or {}
    if not generators:
        return None, None
    def remote_for(engine):
        local = generators[engine.name]["connection"] == "local"
        return engines.Remote.local() if local else engines.Remote.ssh(engine.name)
    started = [engines.Engine(name, g["address"]) for name, g in generators.items()]
    controller = hosts.source_address(started[0].address)
    running = stack.enter_context(engines.Engines(run_id, run_dir, started, remote_for, controller, log=log))
    recording = stack.enter_context(generator_pcp.GeneratorRecording(run_id, run_dir, started, remote_for, log=log))
    return running, recording


def _said_liveness(vm: str, state: str, since: float, log) -> None:
    clock = datetime.datetime.fromtimestamp(since, datetime.timezone.utc).strftime("%H:%M:%S")
    if state == "dead":
        log(f"WARNING: {vm} has not answered since {clock} UTC (liveness probe, SSH port): the machine looks dead; "
            "the other machine's load goes on")
    else:
        log(f"{vm} answers again ({clock} UTC)")


def _unreachable(dead: dict[str, float], addresses: dict[str, str], ports: dict[str, int] | None = None) -> dict[str, str]:
    """{machine: why collection skips it} for the machines dead at the end of the load that still do not
    answer one more probe now, on their SSH port (collection would otherwise wait on SSH for many minutes)."""
    out = {}
    for vm, since in dead.items():
        if not liveness.probe_once(addresses.get(vm, ""), wrap=machines.wrap, port=(ports or {}).get(vm, liveness.PORT)):
            clock = datetime.datetime.fromtimestamp(since, datetime.timezone.utc).strftime("%H:%M:%S")
            out[vm] = f"{vm} has not answered since {clock} UTC (liveness probe): not collected"
    return out
