"""The full run (`./start.sh` with no command): up if needed → build and provision → restart both machines'
services together (equal start) → check that each machine answers → the same load on both at once →
collect → JMeter dashboards → report. `--repeat N` runs N such trials, the machines' roles swapped on every
second one (lab/trial.py), and writes a combined report over them; `--aa` gives both machines one
configuration (an A/A calibration).

Everything lands in results/<UTC timestamp>[-label]/ and run.json is rewritten after every phase, so an
interrupted or failed run still leaves what it gathered and says where it stopped. Ctrl-C during the load
stops JMeter, then collection and the report still run (exit 130 afterwards). The machines stay up for
the next try unless --down.
"""
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

LABEL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,39}")
CHECK_PATH = "/api/customers/1"
CHECK_TIMEOUT_S = 600       # both JVMs start at once (equal start): ~2–3.5 min under TCG, then slow first requests


class RunError(RuntimeError):
    """The run could not go on; the message says which phase and why."""


@dataclass
class Options:
    profile: load.Profile = field(default_factory=load.Profile)
    warmup_s: int | None = None          # excluded from the summary; default: the ramp-up
    label: str = ""
    overrides: list[str] = field(default_factory=list)   # --set items as typed
    down: bool = False
    provision: bool = False      # provision even when nothing changed since the last time
    repeat: int = 1              # trials; from the second on the machines swap configurations (crossover)
    aa: str | None = None        # A/A: both machines run this configuration
    tls: bool = False            # the load over HTTPS, through HTTPD's TLS front (443)
    knob_sets: dict = field(default_factory=dict)   # side -> knob set, where a side runs another set than its name
    hosts: Path | None = None    # --hosts: an Ansible inventory of real hosts instead of the VMs (lab/hosts.py)
    reached: dict | None = field(default=None, repr=False)   # those hosts once checked (hosts.prepare)
    sets: dict = field(init=False, repr=False)   # the --set items parsed (once): {configuration: {knob: value}}

    def __post_init__(self) -> None:
        # a bad --repeat, --aa or --knob-set, or a --set for a configuration no machine runs: refused here
        first = self.trials()[0]
        self.sets = provision.parse_overrides(self.overrides, sorted(set(first.configurations.values())),
                                              prefixes=knob_sets.names(), what="knob set")
        first.overrides(self.sets)

        if self.label and not LABEL_RE.fullmatch(self.label):
            raise ValueError(f"--label {self.label!r}: use 1–40 letters, digits, '.', '_' or '-' "
                             "(it becomes part of the folder name)")
        if self.warmup_s is not None and not 0 <= self.warmup_s <= self.profile.planned_s:
            raise ValueError(f"--warmup {self.warmup_s}: must be from 0 to the planned length of the load "
                             f"({self.profile.planned_s} s)")

    def trials(self, series: str | None = None, repeat: int | None = None) -> list[trial.Trial]:
        return trial.plan(self.repeat if repeat is None else repeat, self.aa, series, chosen=self.knob_sets)

    @property
    def scheme(self) -> str:
        return "https" if self.tls else "http"

    @property
    def effective_warmup_s(self) -> int:
        return self.profile.ramp_up_s if self.warmup_s is None else self.warmup_s


def new_run_id(label: str = "", now: datetime.datetime | None = None) -> str:
    stamp = (now or datetime.datetime.now(datetime.timezone.utc)).strftime("%Y%m%dT%H%M%SZ")
    return f"{stamp}-{label}" if label else stamp


def _utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


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


def _git_commit() -> str | None:
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=paths.ROOT, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=paths.ROOT,
                               capture_output=True, text=True)
    except OSError:
        return None
    if head.returncode != 0:
        return None
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def _host() -> dict:
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


def check_answers(targets: dict[str, str], log=print, timeout_s: float = CHECK_TIMEOUT_S,
                  diagnose=services.diagnose) -> dict[str, float]:
    """Each machine answers GET /api/customers/1 through HTTPD with 200, from inside the lab namespace; both
    probed at once. Returns {machine: seconds until it answered}. One that does not answer fails the check
    with what diagnose(its name) finds on it (its services' states, the journal of those not running)."""
    probe = ("import ssl, sys, time, urllib.request\n"
             "deadline = time.time() + float(sys.argv[2]); last = ''\n"
             "tls = ssl._create_unverified_context()  # the lab's own self-signed front, as JMeter takes it\n"
             "while time.time() < deadline:\n"
             "    try:\n"
             "        with urllib.request.urlopen(sys.argv[1], timeout=60, context=tls) as r:\n"
             "            print(r.status, round(time.time() - deadline + float(sys.argv[2]), 1)); sys.exit(0)\n"
             "    except Exception as e:\n"
             "        last = str(e); time.sleep(2)\n"
             "print(last); sys.exit(1)\n")

    def one(item):
        name, base = item
        url = base + CHECK_PATH
        try:
            done = shell.run(machines.wrap([sys.executable, "-c", probe, url, str(timeout_s)]),
                             f"{name} does not answer {url} through HTTPD", error=RunError)
        except RunError as silent:
            raise RunError(f"{silent}\n  its services now:\n  " + diagnose(name).replace("\n", "\n  ")) from None
        status, after = done.stdout.split()[:2]
        log(f"{name}: {url} answers {status} after {float(after):.0f} s")
        return name, float(after)
    with ThreadPoolExecutor(len(targets)) as pool:
        return dict(pool.map(one, targets.items()))


def validate(opts: Options, s: settings.Settings) -> None:
    """Every knob of every trial's machines checked (ansible/validate.yml, on this host) before anything is
    built, booted or changed; ValueError naming each bad value. Real hosts are checked first (opts.reached):
    their memory is what the knobs must fit."""
    known = opts.reached or {"machines": s.machines, "management_network": s.management_network,
                             "memory_mb": s.memory_mb}
    checked = []
    for t in opts.trials():
        overrides = t.overrides(opts.sets)
        if overrides not in checked:        # a series repeats at most two designs (roles swapped or not)
            checked.append(overrides)
            provision.validate(known, overrides, load_id_max=opts.profile.id_max)


def execute(opts: Options, s: settings.Settings, log=steps.note) -> int:
    """The whole run, one trial or a series, on the lab made with settings s (brought up when it is not);
    returns the exit code (0, 1 failed, 130 interrupted). The knobs are validated before (validate())."""
    if opts.repeat == 1:
        exit_code, _ = run_trial(opts, opts.trials(repeat=1)[0], s, opts.label, log)
    else:
        exit_code = run_series(opts, s, log)
    if opts.down:
        lifecycle.down()
    return exit_code


def run_series(opts: Options, s: settings.Settings, log=steps.note) -> int:
    """--repeat N: N trials (each its own run folder), then the combined report in the series folder. An
    interrupted or failed trial ends the series; the trials done so far are still combined."""
    series_id = new_run_id(f"{opts.label}-series" if opts.label else "series")
    series_dir = paths.RESULTS / series_id
    series_dir.mkdir(parents=True, exist_ok=False)
    trials = opts.trials(series_id)
    print(f"series {series_id}: {opts.repeat} trials, the machines' roles swapped on every second one; "
          f"combined report in {series_dir}", flush=True)
    done, exit_code = [], 0
    for t in trials:
        print(f"\n==== trial {t.number} of {t.of}" + (" (roles swapped)" if t.swapped else ""), flush=True)
        label = f"{opts.label}-t{t.number}" if opts.label else f"t{t.number}"
        exit_code, run_dir = run_trial(opts, t, s, label, log)
        done.append(run_dir)
        if exit_code != 0:
            print(f"start.sh: trial {t.number} did not complete; the series stops here", file=sys.stderr)
            break
    with steps.step(f"combined report over {len(done)} trial(s)"):
        reporting.python_m("report.combine", series_dir, *done, log=log, what="combined report")
    reporting.print_outcome(series_dir)
    return exit_code


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


def _load_record(opts: Options, result: load.LoadResult | None = None) -> dict:
    """run.json's load: the profile, the warm-up, and (once it ran) what the load did (samples, errors, …)."""
    done = {} if result is None else {k: v for k, v in result.to_dict().items() if k != "profile"}
    return {**asdict(opts.profile), "scheme": opts.scheme, "warmup_s": opts.effective_warmup_s, **done}


def _measured_window(data: dict) -> tuple[int, int | None] | None:
    """(from, to) epoch ms of the load's measured window: JMeter's test start + the warm-up, to the load's
    end; None when JMeter never started (the profiles are then kept whole)."""
    load_data = data.get("load", {})
    start_ms = load_data.get("test_start_ms")
    if not start_ms:
        return None
    ended = load_data.get("ended_at")
    end_ms = int(datetime.datetime.fromisoformat(ended).timestamp() * 1000) if ended else None
    return start_ms + int(load_data.get("warmup_s", 0)) * 1000, end_ms


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
