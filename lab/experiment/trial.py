"""One trial in its own run folder, as its phases: machines (up, or the real hosts as checked) → provision →
equal start (both machines' services restarted together) → check (both answer through HTTPD) → load (both at
once) → finish (collect, dashboards, report: lab/experiment/finish.py). The knobs were validated before any
trial began (run.validate).

run.json is rewritten at every phase (lab/experiment/record.py): an interrupted or failed trial still leaves
what it gathered and says where it stopped. Ctrl-C during the load stops JMeter; collection and the report
still run (exit 130 afterwards).
"""
from __future__ import annotations

import contextlib
import datetime
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path

import runfolder
from lab import lock, machines, paths, redact, steps
from lab.experiment import (
    check,
    collect,
    core_swap,
    design,
    disk,
    finish,
    host_watch,
    instruments,
    jit_watch,
    liveness,
    load,
    record,
    service,
    services,
)
from lab.experiment.load import engines, generator_pcp
from lab.experiment.options import Options
from lab.machines import lifecycle, memory, placement, reach, settings, vagrant
from lab.provision import hosts, jars, lines, playbook


class TrialRun:
    """What the phases of one trial share: its options and design, its run.json, and what each phase learnt
    for the next (the machines' addresses, the load's watches, when the load began)."""

    def __init__(self, opts: Options, t: design.Trial, s: settings.Settings, label: str, log=steps.note) -> None:
        self.opts, self.t, self.s, self.log = opts, t, s, log
        # what the phases derive from the options, read once here (issue 51: the options are not walked back to)
        self.scheme, self.warmup_s = opts.scheme, opts.effective_warmup_s
        self.run_dir = record.make_run_dir(label, paths.RESULTS)     # never another run's, even in one second
        self.run_id = self.run_dir.name
        lock.note(self.run_id)
        self.phase_started = time.time()         # when the running phase began (a full disk's incomplete files)
        record.write_catalog(self.run_dir)
        self.overrides = t.overrides(opts.service)      # each machine's knobs: resolved once for the trial
        self.record = record.Record(self.run_dir, runfolder.stamped("run.json", {
            "run_id": self.run_id, "label": label or None, "started": record.utc_now(), "ended": None,
            "status": "running", "phase": "start", "stopped_at": None, "error": None,
            "git_commit": record.git_commit(), "command": redact.argv(sys.argv[1:]), "design": t.record(),
            "load": self.load_said(),
            "overrides": t.given(), "host": record.host_facts(), "phases": {},
            **service_record(opts.service, t, self.overrides)}))
        self.record.reserve()
        self.resolved: dict = {}
        self.addresses: dict[str, str] = {}      # machine → address, once known
        self.ssh_ports: dict[str, int] = {}      # machine → its SSH port where it is not 22 (real hosts)
        self.marked_at: float | None = None      # when the run's recording began on the machines
        self.watch = None                        # the load generator's watch, once the load starts
        self.host = None                         # the host's other processes' watch (host_watch.py), likewise
        self.alive = None                        # the machines' liveness watch, while the load runs
        self.exit_code = 0

    @contextlib.contextmanager
    def phase(self, name: str, title: str) -> Iterator[None]:
        """A phase of the run: run.json says which is running, and phases.<name>_s how long each took."""
        self.phase_started = time.time()
        self.record.update(phase=name)
        started = time.monotonic()
        try:
            with steps.step(title):
                yield
        finally:
            self.record.data["phases"][f"{name}_s"] = round(time.monotonic() - started)
            self.record.save()

    # -- the phases, in order --------------------------------------------------------------------------------

    def machines(self) -> None:
        """The VMs brought up (or found up), or the real hosts as hosts.prepare checked them."""
        if self.opts.reached:
            resolved = self.opts.reached
            self.record.update(
                provider="hosts", inventory=resolved["inventory_source"],
                hosts={side: {"host": resolved["hosts"][side], "address": resolved["machines"][side],
                              **resolved["facts"][side]} for side in machines.NAMES},
                loadgens={name: {**g, **resolved["facts"].get(name, {})}
                          for name, g in resolved["loadgens"].items()} or None,
                machine_memory_mb=resolved["memory_mb"])
        else:
            with self.phase("up", "machines up"):
                resolved = lifecycle.ensure_up(self.s, self.t.suites(self.opts.service))
            self.record.update(provider=resolved.get("provider") or "libvirt",
                               provider_reason=resolved.get("provider_reason"),
                               boxes={side: (resolved.get("suites") or {}).get(vm)
                                      for side, vm in self.t.machines.items()},
                               accelerator=resolved.get("accelerator"),
                               accelerator_reason=resolved.get("accelerator_reason"),
                               placement=resolved.get("cpusets"), machine_memory_mb=resolved.get("memory_mb"))
        self.resolved = resolved
        self.addresses.update(resolved.get("machines", {}))
        self.ssh_ports.update(resolved.get("ssh_ports") or {})

    def provision(self, built: Future) -> None:
        """Ansible, for what changed since the last provisioning; the app left stopped for the equal start."""
        with self.phase("provision", "build and provision both machines (Ansible)"):
            # what each machine was given beyond the catalog: its side's knob set and --set values (design.py)
            self.record.update(machine_overrides={m: o for m, o in self.overrides.items() if o})
            ran = playbook.run(self.resolved, self.overrides, log=self.log, force=self.opts.provision,
                               start_services=False, jars=built, insist_memory=self.opts.insist_memory,
                               service_vars=service.ansible_vars(self.opts.service, self.overrides))
        self.record.update(provisioned=f"ran: {ran.describe()}" if ran else
                           "skipped (nothing changed since the last provisioning)")
        if ran:   # issue 15: a machine that has just run a full load must come through provisioning
            self.record.update(provision_memory=memory.report_memory(list(ran.machines), self.log))

    def equal_start_and_check(self) -> None:
        """Both machines' services restarted together, then both must answer. The twins' vCPUs share all
        their host cores while they start (vagrant.cores_shared), each machine's own again after."""
        cpusets = {} if self.opts.reached else self.resolved.get("cpusets") or {}
        self.record.update(start_cores=placement.shared(cpusets) if cpusets else None)
        with vagrant.cores_shared(cpusets, log=self.log):
            self.equal_start()
            self.check()

    def equal_start(self) -> None:
        with self.phase("restart", "equal start: both machines' services restarted together"):
            starts = services.restart_together()
            units = list(next(iter(starts.values()), {}))
            self.record.update(service_starts={"services": units, "spread_s": None, **{
                side: {"machine": vm, "units": starts.get(vm), "ready_after_s": None}
                for side, vm in self.t.machines.items()}})

    def check(self) -> None:
        t = self.t
        with self.phase("check", "both machines answer through HTTPD"):
            svc = self.opts.service
            ready = check.check_answers(self.targets(), svc.check_path, svc.check_status, self.log,
                                        diagnose=lambda side: (f"(machine {t.machines[side]})\n"
                                                               + services.diagnose(t.machines[side])),
                                        looping=lambda side: services.crash_looping(t.machines[side]))
            starts = self.record.data["service_starts"]
            for side in t.machines:
                starts[side]["ready_after_s"] = ready[side]
            starts["spread_s"] = max(ready.values()) - min(ready.values())
            self.record.save()

    def load(self) -> None:
        """The same load on both machines at once, watched: the load generator (instruments) and each machine's
        liveness; on real hosts with a loadgen group, JMeter's remote engines there, recorded by PCP."""
        opts = self.opts
        with self.phase("load", "the load, on both machines at once"):
            collect.mark(self.run_id, log=self.log)
            self.marked_at = time.time()
            self.watch = instruments.LoadGeneratorWatch(self.run_dir)
            self.host = host_watch.HostWatch(self.run_dir)
            self.alive = liveness.MachineWatch(self.run_dir, self.resolved["machines"], wrap=reach.wrap,
                                               on_change=lambda vm, state, since: said_liveness(vm, state, since,
                                                                                                self.log),
                                               ports=self.ssh_ports)
            self.alive.start()
            swap = self.swap_cores()
            # --until-settled, a race: the steady state counts from where each JIT went quiet (jit_watch.py)
            jit = None if opts.until_settled_s is None and opts.race is None else \
                jit_watch.watching(self.run_dir, self.resolved["machines"])
            remote = recording = None
            try:
                with contextlib.ExitStack() as on_generators:
                    remote, recording = on_generators_of(self.run_id, self.run_dir, self.resolved, on_generators,
                                                         self.log)
                    result = load.run(self.run_dir, self.targets(), opts.profile, wrap=reach.wrap,
                                      progress=self.log, beside=core_swap.Beside(self.watch, self.host, swap),
                                      engines=remote,
                                      plan=None if opts.service.lab_plan else Path(opts.service.plan.path),
                                      until_settled_s=opts.until_settled_s, compiled=jit and jit.compiled,
                                      race=opts.race)
            finally:    # what the generators could not do is kept whatever the load did
                if jit is not None:
                    self.record.update(jit_watch=jit.stop())
                if swap is not None:        # each machine on its own cores again, whatever the load did
                    self.record.update(core_swap=swap.stop())
                if remote is not None:
                    self.record.update(loadgen_problems={**remote.problems, **recording.problems} or None)
            self.record.update(load=self.load_said(result))
            if result.interrupted:
                self.record.update(status="interrupted", stopped_at="load")
                self.exit_code = 130

    def finish(self) -> None:
        """The watches stopped, then collection, dashboards and the report, whatever the trial got to."""
        dead = {}
        with contextlib.suppress(record.DiskFull):      # run.json says so; the finish goes on from what there is
            if self.watch is not None:
                self.record.update(load_generator=self.watch.stop())
            if self.host is not None:
                self.record.update(host_outside=self.host.stop())
            if self.alive is not None:
                dead = self.alive.dead()
                self.record.update(liveness=self.alive.stop())
            cut = [str(w.file.path.relative_to(self.run_dir)) for w in (self.watch, self.host, self.alive)
                   if w is not None and w.file is not None and w.file.cut]
            if cut:         # a watch that could not write its CSV went on counting: run.json has its summary
                self.record.update(incomplete=self.record.with_incomplete(cut))
        finish.finish(self.t, self.record, self.run_dir, self.run_id, self.marked_at, self.log,
                      addresses=self.addresses, dead=dead, ports=self.ssh_ports, dashboards=self.opts.dashboards,
                      report=self.opts.report)

    def swap_cores(self) -> core_swap.CoreSwap | None:
        """The machines' cores traded half-way through the measured window (core_swap.py), or kept and why:
        run.json's core_swap says which before the load begins."""
        cpusets = {} if self.opts.reached else self.resolved.get("cpusets") or {}
        planned = core_swap.plan(self.opts.cores, cpusets, self.opts.profile, self.warmup_s,
                                 self.opts.until_settled_s, raced=self.opts.race is not None)
        self.record.update(core_swap=planned)
        if planned["mode"] != "swap":
            return None
        return core_swap.CoreSwap(cpusets, planned["at_s"], vagrant.pin_checked, log=self.log)

    # -- what the phases derive --------------------------------------------------------------------------------

    def targets(self) -> dict[str, str]:
        return self.t.targets(self.resolved["machines"], scheme=self.scheme)

    def load_said(self, result: load.LoadResult | None = None) -> dict:
        """run.json's load: what was asked, and (once it ran) what the load did."""
        return record.load_record(self.opts.profile, self.scheme, self.warmup_s, result)


def run_trial(opts: Options, t: design.Trial, s: settings.Settings, label: str, log=steps.note,
              before_start: Callable[[], None] | None = None) -> tuple[int, Path]:
    """One trial in its own run folder, phase by phase; returns (exit code, run folder). before_start: called once both
    machines are provisioned, before their equal start (a tune tells the previous run's outcome there, its report
    made beside this provisioning: nothing of the lab's runs on the host from the equal start on)."""
    trial = TrialRun(opts, t, s, label, log)
    rec = trial.record
    print(f"run {trial.run_id}: results in {trial.run_dir}", flush=True)
    try:
        started = time.monotonic()
        built = jars.jars_beside(log)       # Maven beside the box build and the boot
        if not opts.reached:                # JMeter too (real hosts have booted already: nothing to overlap)
            load.jmeter_beside(log)
        trial.machines()
        trial.provision(built)
        if before_start is not None:
            before_start()
        trial.equal_start_and_check()
        rec.data["phases"]["to_load_s"] = round(time.monotonic() - started)
        trial.load()
        rec.data["phases"]["to_end_of_load_s"] = round(time.monotonic() - started)
    except KeyboardInterrupt:
        rec.update(status="interrupted", stopped_at=rec.data["phase"])
        print(f"\nstart.sh: interrupted during {rec.data['phase']}; collecting what there is", file=sys.stderr)
        trial.exit_code = 130
    except Exception as failure:      # noqa: BLE001 - any failure is recorded, then the run folder is finished
        trial.exit_code = 1
        with contextlib.suppress(record.DiskFull):      # run.json already says the disk filled
            failed(trial, failure)
    finally:
        try:
            trial.finish()
        finally:
            rec.release_reserve()
    if trial.exit_code == 0 and rec.data["status"] == "interrupted":     # Ctrl-C after the load
        trial.exit_code = 130
    return trial.exit_code, trial.run_dir


def service_record(svc, t: design.Trial, overrides: dict) -> dict:
    """run.json's service and, per configuration, the knobs of its knob set that the service could not take on the
    build it ran (left out, with why); both said on the console too. overrides: the trial's per-machine knobs (the
    builds they run)."""
    configs = {c.base: c for c in sorted(t.configurations.values(), key=lambda c: c.base)}
    left = {name: c.left_out(svc) for name, c in configs.items()}
    said = service.record(svc, overrides)
    facts = svc.facts_of(None) if said["facts"] is None else None
    built = (f"{Path(said['jar']).name} ({_facts_words(said['facts'])})" if said["facts"] else
             f"builds {', '.join(said['stacks'])} (app_stack; the first: {_facts_words(facts.to_dict())})")
    plan = "the lab's own plan" if svc.lab_plan else f"its plan {Path(svc.plan.path).name}"
    print(f"service {svc.name}: {built}, {plan}", flush=True)
    for config, knobs in left.items():
        if knobs:
            print(f"  left out of {config}, which {svc.name} (or the machines' kind) cannot take:", flush=True)
            for why in knobs.values():
                print(f"    {why}", flush=True)
    moved = {name: found for name, c in configs.items() if (found := lines.upgrade(c, svc))}
    for config, found in moved.items():     # the migration question: what the set becomes on its new line
        print("\n".join(f"  {line}" for line in lines.words(config, found)), flush=True)
    return {"service": {**said, "left_out": {c: k for c, k in left.items() if k}, "upgrade": moved or None}}


def _facts_words(facts: dict) -> str:
    return (f"Spring Boot {facts['boot_version']}, Tomcat {facts['tomcat_version']}"
            + (f", Camel {facts['camel_version']}" if facts.get("camel_version") else ""))


def failed(trial: TrialRun, failure: Exception) -> None:
    """A phase that failed, in run.json: where and why; a full disk as such (a failure with the disk below its
    floor is one too: Ansible's or JMeter's error then only says what the full disk did to it), with the files
    it left incomplete."""
    rec, phase = trial.record, trial.record.data["phase"]
    if isinstance(failure, load.LoadError) and failure.result is not None:
        rec.update(load=trial.load_said(failure.result))
    if disk.is_full(failure) or rec.full_at or disk.low(trial.run_dir):
        rec.disk_full(phase, since=trial.phase_started)
        print(f"start.sh: the disk filled during {phase}: {failure}", file=sys.stderr)
    elif isinstance(failure, load.LoadError):
        rec.update(status="failed", stopped_at="load", error=str(failure))
        print(f"start.sh: the load failed: {failure}", file=sys.stderr)
    else:
        rec.update(status="failed", stopped_at=phase, error=f"{type(failure).__name__}: {failure}")
        print(f"start.sh: {phase} failed: {failure}", file=sys.stderr)


def on_generators_of(run_id: str, run_dir: Path, resolved: dict, stack: contextlib.ExitStack, log):
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


def said_liveness(vm: str, state: str, since: float, log) -> None:
    clock = datetime.datetime.fromtimestamp(since, datetime.UTC).strftime("%H:%M:%S")
    if state == "dead":
        log(f"WARNING: {vm} has not answered since {clock} UTC (liveness probe, SSH port): the machine looks dead; "
            "the other machine's load goes on")
    else:
        log(f"{vm} answers again ({clock} UTC)")
