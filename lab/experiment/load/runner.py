"""Running the load: JMeter started on the plan against both machines at once, watched (a progress line
every few seconds from the growing JTLs, what may end its hold early: watch.py), stopped on Ctrl-C, and what it did
summed up (LoadResult)."""
from __future__ import annotations

import contextlib
import ctypes
import datetime
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from lab import confine, unprivileged
from lab.experiment.load import settle, user_plan, watch
from lab.experiment.load.jmeter import (
    LAB_PROPERTIES,
    PLAN,
    LoadError,
    Progress,
    ensure_jmeter,
    jmeter_command,
    jmeter_version,
)
from lab.experiment.load.jtl import JTL_COLUMNS, JtlTail
from lab.experiment.load.process_stats import ProcessStats
from lab.experiment.load.profile import MACHINES, Profile, target_properties

PROGRESS_EVERY_S = 5.0
STOP_GRACE_S = 15.0     # after "StopTestNow" and after SIGTERM, before the next step

Wrap = Callable[[list[str]], list[str]]


@dataclass
class LoadResult:
    """What ran and what it gave: for run.json and the report."""
    jmeter_version: str
    command: list[str]
    profile: dict
    targets: dict[str, str]
    started_at: str                     # ISO 8601 UTC, JMeter launched
    test_start_ms: int | None = None    # JMeter's test start (epoch ms), the origin of its schedule:
                                        # the hold runs from +ramp_up_s to +ramp_up_s+duration_s
    ended_at: str = ""
    interrupted: bool = False           # stopped by Ctrl-C before its planned end
    ended_by: str = "completed"         # completed | settled (--until-settled) | raced (a tune's) | shutdown |
                                        # stoptestnow | sigterm | sigkill | failed | disk full
    exit_code: int | None = None
    samples: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    by_label: dict[str, dict[str, int]] = field(default_factory=dict)
    jtl: dict[str, str] = field(default_factory=dict)
    trimmed_bytes: dict[str, int] = field(default_factory=dict)
    log: str = ""
    engines: list[dict] = field(default_factory=list)   # JMeter's remote engines, when the load ran on generators
    jmeter_peak_rss_mb: float | None = None   # of the launched process (the JVM when wrap execs it)
    jmeter_cpu_s: float | None = None
    runs_as: dict = field(default_factory=dict)  # who JMeter ran as (unprivileged.Account.reading): never root
    jmeter_uid: int | None = None       # the user the kernel saw running it (/proc), the proof of runs_as
    until_settled_s: int | None = None  # --until-settled: the steady window that ends the hold (settle.py)
    settled: dict | None = None         # where each machine settled and the steady time run, when that ended it
    race: dict | None = None            # a tune's race (what it was against; why it ended the hold, where it did)

    def to_dict(self) -> dict:
        return asdict(self)


def _utc_now() -> str:
    return datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds")


class _Console:
    """JMeter's stdout: kept in jmeter.out, its last lines in memory, the start and the UDP port noticed."""

    def __init__(self, stream, out_file: Path) -> None:
        self.tail: deque[str] = deque(maxlen=40)
        self.started_at: float | None = None   # monotonic, when JMeter said it started
        self.test_start_ms: int | None = None
        self.port: int | None = None
        self._thread = threading.Thread(target=self._pump, args=(stream, out_file), daemon=True)
        self._thread.start()

    def _pump(self, stream, out_file: Path) -> None:
        with contextlib.ExitStack() as files:
            try:
                out = files.enter_context(open(out_file, "a", encoding="utf-8"))
            except OSError:
                out = None
            for line in stream:     # drained whatever becomes of jmeter.out: JMeter must never block on its console
                if out is not None:
                    try:
                        out.write(line)
                        out.flush()
                    except OSError:         # a full disk: jmeter.out ends here, its tail is still kept
                        out = None
                self.tail.append(line.rstrip())
                if line.startswith(("Starting standalone test", "Starting distributed test")):
                    self.started_at = time.monotonic()
                    stamp = re.search(r"\((\d{10,})\)", line)
                    self.test_start_ms = int(stamp.group(1)) if stamp else None
                match = re.search(r"message on port (\d+)", line)
                if match:
                    self.port = int(match.group(1))

    def join(self, timeout: float = 5) -> None:
        self._thread.join(timeout)


def _die_with_parent() -> None:
    """In the child before exec: own session (Ctrl-C on the terminal is not JMeter's), SIGTERM if we die."""
    os.setsid()
    try:
        ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM))   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


_UDP_SEND = ("import socket,sys; "
             "socket.socket(socket.AF_INET,socket.SOCK_DGRAM).sendto(sys.argv[2].encode(),('127.0.0.1',int(sys.argv[1])))")


def run(run_dir: Path, targets: dict[str, str], profile: Profile, wrap: Wrap = lambda argv: argv,
        progress: Progress = print, progress_every_s: float = PROGRESS_EVERY_S, java: str = "java",
        beside=None, engines=None, plan: Path | None = None, until_settled_s: int | None = None,
        compiled=None, race=None) -> LoadResult:
    """Runs the plan against targets (machine → "http://host[:port]"); see lab/experiment/load/__init__.py. beside: what
    watches beside the load (lab/experiment/instruments.py), told JMeter's pid once it is launched. engines: JMeter's
    remote engines (lab/experiment/load/engines.py Engines, started), which then run the plan, each with its share of
    `profile` (Profile.per_engine); this JMeter is their controller and writes the JTLs. plan: a user's own plan
    (a service's), run two-sided (user_plan.py; the plan run is kept in the run folder as plan.jmx) instead of the
    lab's. until_settled_s: the hold is a cap, ended once both machines settled with that much steady state
    (settle.py), counted from where each JIT went quiet as compiled() reads it (lab/experiment/jit_watch.py). race: a
    tune's search run (tune/race.py), its hold ended once its paired windows at steady state have said what they
    can."""
    refused = settle.check(until_settled_s, profile)
    if refused:
        raise LoadError(refused)
    properties = target_properties(targets)
    run_dir = Path(run_dir).resolve()
    jtls = {m: run_dir / m / "jmeter.jtl" for m in MACHINES}
    for jtl in jtls.values():
        if jtl.exists():
            raise LoadError(f"{jtl} exists: a run folder takes one load (JMeter would append to it)")
    home = ensure_jmeter(progress=progress)
    for jtl in jtls.values():
        jtl.parent.mkdir(parents=True, exist_ok=True)
    chosen = PLAN if plan is None else user_plan.two_sided(plan, run_dir / "plan.jmx")
    # each remote engine runs the whole plan: it gets its share of the load
    properties.update((profile.per_engine(len(engines.engines)) if engines else profile).jmeter_properties())
    log = run_dir / "jmeter.log"
    local = {"run_dir": str(run_dir), "summariser.out": "false"}      # the controller's: its listeners write the JTLs
    if engines is None:
        plan_args = [f"-J{k}={v}" for k, v in {**properties, **local}.items()]
    else:   # the plan's properties (and the lab's JMeter settings) go to every engine, as global properties
        plan_args = [*engines.controller_arguments(), f"-G{LAB_PROPERTIES}",
                     *[f"-G{k}={v}" for k, v in properties.items()], *[f"-J{k}={v}" for k, v in local.items()]]
    argv = jmeter_command(home, "-n", "-t", str(chosen), "-q", str(LAB_PROPERTIES), "-j", str(log), *plan_args,
                          java=java)
    # JMeter runs a plan's samplers and functions (a customer's text): as the lab's user, never as root
    account = unprivileged.ensure()
    # what it reads and writes, each named: the run folder itself may be closed to it (a tmp_path's 0700)
    log.touch()
    reads = [home, chosen, LAB_PROPERTIES, log, *{jtl.parent for jtl in jtls.values()},
             *(engines.private_files if engines else [])]
    runs_as = unprivileged.current_reading() if account is None else account.reading(reads)
    cgroup = None if account is None else confine.Cgroup.make("jmeter")     # what it forks ends with it
    if account is not None:
        argv = account.command(argv, reads, cgroup=cgroup)
        account.give(log)
    command = wrap(argv)
    result = LoadResult(jmeter_version=jmeter_version(home), command=command, profile=asdict(profile),
                        targets=dict(targets), started_at=_utc_now(), log=str(log),
                        jtl={m: str(p) for m, p in jtls.items()}, engines=engines.record() if engines else [],
                        runs_as=runs_as, until_settled_s=until_settled_s)
    result.race = None if race is None else {"said": race.said()}
    progress(f"load: {profile.model} model, {profile.describe()}, {watch.clock(profile.planned_s)} planned; "
             f"JMeter {result.jmeter_version}, log {log}"
             + (f"; on {len(engines.engines)} remote engine(s), each with 1/{len(engines.engines)} of it"
                if engines else ""))
    with contextlib.ExitStack() as lent:
        if account is not None:         # JMeter makes each JTL in its machine's folder
            lent.enter_context(account.lent(*{jtl.parent for jtl in jtls.values()}))
            lent.enter_context(cgroup.held())   # ended first: nothing of its own writes there once it is given back
        return _load(command, run_dir, jtls, profile, progress, progress_every_s, beside, wrap, log, result,
                     None if account is None else account.environment(), compiled, race)


def _load(command: list[str], run_dir: Path, jtls: dict[str, Path], profile: Profile, progress: Progress,
          progress_every_s: float, beside, wrap: Wrap, log: Path, result: LoadResult, env, compiled, race=None
          ) -> LoadResult:
    proc = subprocess.Popen(command, cwd=run_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, preexec_fn=_die_with_parent, env=env)
    console = _Console(proc.stdout, run_dir / "jmeter.out")
    stats = ProcessStats(proc.pid)
    tails = {m: JtlTail(p, keep_starts=result.until_settled_s is not None or race is not None)
             for m, p in jtls.items()}
    if beside is not None:
        beside.started(proc.pid)
    full = None
    try:
        watch.watch(proc, console, tails, stats, profile, progress, progress_every_s, run_dir,
                    result.until_settled_s, compiled, race)
    except watch.Raced as done:
        progress(f"load: {done}: the hold ends here (a tune's race)")
        result.race["ended"] = str(done)
        result.ended_by = "raced" if _stop(proc, console, stats, wrap, profile, progress) == "shutdown" \
            else "raced, then stopped hard"
    except watch.Settled as done:
        progress(f"load: {done.settled.said()}: the hold ends here (--until-settled {result.until_settled_s} s)")
        result.settled = done.settled.record()
        result.ended_by = "settled" if _stop(proc, console, stats, wrap, profile, progress) == "shutdown" \
            else "settled, then stopped hard"
    except KeyboardInterrupt:
        result.interrupted = True
        result.ended_by = _stop(proc, console, stats, wrap, profile, progress)
    except watch.DiskLow as low:      # JMeter's own writes fail silently: the load stops while its JTLs are whole
        full = f"disk full at load: {low}; JMeter stopped ({_stop(proc, console, stats, wrap, profile, progress)})"
        progress(f"load: {full}")
        result.ended_by = "disk full"
    except BaseException:
        _stop(proc, console, stats, wrap, profile, progress)    # never leave JMeter running behind
        raise
    result.exit_code = proc.wait()
    console.join()
    result.test_start_ms = console.test_start_ms
    result.ended_at = _utc_now()
    for machine, jtl in jtls.items():
        final = JtlTail(jtl)         # a fresh count of the whole file: exact whatever the progress saw
        final.read()
        result.trimmed_bytes[machine] = final.trim_partial_tail()
        result.samples[machine], result.errors[machine] = final.samples, final.errors
        result.by_label[machine] = dict(sorted(final.by_label.items()))
        if not final.header_ok and not full:
            raise LoadError(f"{jtl}: unexpected JTL header {final.header} (want {','.join(JTL_COLUMNS)}): "
                            f"were the saveservice properties of {LAB_PROPERTIES} applied?", result)
    result.jmeter_peak_rss_mb, result.jmeter_cpu_s, result.jmeter_uid = stats.peak_rss_mb, stats.cpu_s, stats.uid
    if full:
        raise LoadError(f"{full}; the JTLs keep {sum(result.samples.values())} samples, cut where the disk "
                        "filled", result)
    progress("load: " + ("stopped early" if result.interrupted else "done") + "; " + "; ".join(
        f"{m} {result.samples[m]} samples, {watch.percent(result.errors[m], result.samples[m])} errors"
        for m in MACHINES))
    if not result.interrupted and (result.exit_code != 0 or not sum(result.samples.values())):
        result.ended_by = "failed"
        why = f"exited {result.exit_code}" if result.exit_code != 0 else "recorded no sample"
        raise LoadError(f"JMeter {why} (log: {log}); its last words:\n  " + "\n  ".join(list(console.tail)[-12:]),
                        result)
    return result


def _stop(proc, console: _Console, stats: ProcessStats, wrap: Wrap, profile: Profile, progress: Progress) -> str:
    """Ctrl-C: asks JMeter to stop, then insists. Each further Ctrl-C skips to the next step. Returns the last step."""
    grace = min(profile.response_timeout_ms / 1000 + 5, 60)
    steps = [("shutdown", grace), ("stoptestnow", STOP_GRACE_S), ("sigterm", STOP_GRACE_S), ("sigkill", 10)]
    for step, wait_s in steps:
        if proc.poll() is not None:
            break
        try:
            if step in ("shutdown", "stoptestnow"):
                if console.port is None:
                    continue        # JMeter is not listening yet: signals only
                message = "Shutdown" if step == "shutdown" else "StopTestNow"
                progress(f"load: stopping: asking JMeter to {message} (samples in flight "
                         f"{'finish' if step == 'shutdown' else 'are cut'}; Ctrl-C again to insist)")
                subprocess.run(wrap([sys.executable, "-c", _UDP_SEND, str(console.port), message]),
                               capture_output=True, timeout=10)
            else:
                progress(f"load: stopping: {step.upper()} to JMeter (pid {proc.pid})")
                os.killpg(proc.pid, signal.SIGTERM if step == "sigterm" else signal.SIGKILL)
            deadline = time.monotonic() + wait_s
            while proc.poll() is None and time.monotonic() < deadline:
                time.sleep(0.2)
                stats.sample()
        except KeyboardInterrupt:
            continue
        except (OSError, subprocess.SubprocessError) as e:
            progress(f"load: stopping: {step} did not work ({e})")
            continue
        if proc.poll() is not None:
            return step
    return steps[-1][0]
