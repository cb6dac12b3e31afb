"""The load: JMeter runs jmeter/plan.jmx against both machines at once and writes one JTL per machine.

What the run orchestration calls:

    profile = load.Profile(users=150, ramp_up_s=150, duration_s=1200)    # validated; ValueError names the field
    result = load.run(run_dir, {"default": "http://192.168.56.11", "tuned": "http://192.168.56.12"},
                      profile, wrap=netns.wrap)
    load.dashboards(run_dir)                                              # never raises; says what it skipped
    run_json["load"] = result.to_dict()

- `ensure_jmeter()` assembles JMeter from Maven Central (jmeter/pom.xml) into .lab/jmeter/home, once per
  content of that pom (a hash stamp), and returns the home.
- `run()` starts JMeter as `wrap(argv)` (the orchestrator's wrap runs it inside the lab's namespace, where
  the guests are reachable) in a session of its own, so a Ctrl-C on the terminal reaches only us. Every
  `progress_every_s` it prints the phase (ramp-up/hold), elapsed and remaining time, and per machine the
  req/s and error % of the last interval, read from the JTLs as they grow (JMeter flushes every line).
  Ctrl-C stops the load with JMeter's own mechanism (a "Shutdown" datagram: samples in flight finish),
  escalating on a second Ctrl-C or a timeout to "StopTestNow", SIGTERM (JMeter's shutdown hook still
  flushes the JTLs) and SIGKILL; a half-written last line is cut off, so every JTL stays a valid CSV.
  It then *returns* with `interrupted=True`: the caller collects and reports, then exits as it sees fit.
  A JMeter that fails on its own raises LoadError, which carries the LoadResult (`.result`).
  If our process dies, the kernel sends JMeter SIGTERM (parent-death signal): no orphaned load.
  `LoadResult.test_start_ms` is the origin of JMeter's schedule (ramp-up, hold) for the report.
- `dashboards()` writes JMeter's HTML dashboard of each machine's JTL into <run-dir>/jmeter-dashboard/<machine>/.

Files in the run folder: <machine>/jmeter.jtl, jmeter.log (JMeter's log), jmeter.out (its console),
jmeter-dashboard/<machine>/ and jmeter-dashboard/<machine>.log.
"""
from __future__ import annotations

import csv
import ctypes
import datetime
import hashlib
import io
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable
from urllib.parse import urlsplit

from lab import paths

JMETER_DIR = paths.ROOT / "jmeter"
PLAN = JMETER_DIR / "plan.jmx"
LAB_PROPERTIES = JMETER_DIR / "lab.properties"
POM = JMETER_DIR / "pom.xml"
HOME = paths.STATE_DIR / "jmeter" / "home"
STAMP_NAME = ".lab-pom.sha256"              # in the home: the hash of the pom it was built from
MAVEN_WRAPPER = paths.ROOT / "app" / "mvnw"  # Maven 3.9 from the app's wrapper; needs only Java

MACHINES = ("default", "tuned")              # the plan's thread groups
MIX_KEYS = ("get", "summary", "post", "delete")
LABELS = {
    "get": "GET /api/customers/{id}",
    "summary": "GET /api/customers/{id}/summary",
    "post": "POST /api/customers",
    "delete": "DELETE /api/customers/{id}",
}
JTL_COLUMNS = ("timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,"
               "failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect").split(",")
JVM_OPTIONS = ["-Xms256m", "-Xmx1g", "-XX:MaxMetaspaceSize=256m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=100",
               "-Djava.awt.headless=true"]
PROGRESS_EVERY_S = 5.0
STOP_GRACE_S = 15.0     # after "StopTestNow" and after SIGTERM, before the next step

Wrap = Callable[[list[str]], list[str]]
Progress = Callable[[str], None]


class LoadError(RuntimeError):
    """JMeter could not be assembled or the load failed; the message says why and where to look."""

    def __init__(self, message: str, result: "LoadResult | None" = None) -> None:
        super().__init__(message)
        self.result = result


# --- the profile ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Profile:
    """One load scenario; each field is a JMeter property of the plan (same name; mix → mix_<key>).

    Defaults are the article's scenario: 150 users per machine, one more each second, then 20 minutes.
    """
    model: str = "closed"               # closed: `users` threads loop; open: arrivals at rate_per_s
    users: int = 150                    # closed model: threads per machine
    ramp_up_s: int = 150                # closed: time to start all users; open: rate rises 0 → rate_per_s
    duration_s: int = 1200              # the hold after the ramp-up (the run lasts ramp_up_s + duration_s, +drain_s)
    rate_per_s: float = 50.0            # open model: requests per second per machine during the hold
    keep_alive: bool = True             # closed model: reuse connections (open: each arrival connects anew)
    connect_timeout_ms: int = 5000
    response_timeout_ms: int = 30000
    mix: dict = field(default_factory=lambda: {"get": 60, "summary": 25, "post": 10, "delete": 5})
    id_min: int = 1                     # customers read are drawn from id_min..id_max (the backend's ids)
    id_max: int = 1000
    customers_path: str = "/api/customers"   # where the API's customers are (the benchmark: the mock's /customers)

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem:
            raise ValueError(problem)

    def problem(self) -> str | None:
        """The first bad field as 'field: what is wrong, got value', or None."""
        def bad(name: str, want: str, got) -> str:
            return f"{name}: {want}, got {got!r}"

        def is_int(v) -> bool:
            return isinstance(v, int) and not isinstance(v, bool)

        if self.model not in ("closed", "open"):
            return bad("model", "must be 'closed' or 'open'", self.model)
        if not is_int(self.users) or not 1 <= self.users <= 10000:
            return bad("users", "must be a whole number from 1 to 10000", self.users)
        if not is_int(self.ramp_up_s) or not 0 <= self.ramp_up_s <= 86400:
            return bad("ramp_up_s", "must be whole seconds from 0 to 86400", self.ramp_up_s)
        if not is_int(self.duration_s) or not 1 <= self.duration_s <= 7 * 86400:
            return bad("duration_s", "must be whole seconds from 1 to 604800", self.duration_s)
        if isinstance(self.rate_per_s, bool) or not isinstance(self.rate_per_s, (int, float)) \
                or not 0 < self.rate_per_s <= 100000:
            return bad("rate_per_s", "must be a number above 0 and at most 100000", self.rate_per_s)
        if not isinstance(self.keep_alive, bool):
            return bad("keep_alive", "must be true or false", self.keep_alive)
        for name in ("connect_timeout_ms", "response_timeout_ms"):
            value = getattr(self, name)
            if not is_int(value) or not 1 <= value <= 3600000:
                return bad(name, "must be whole milliseconds from 1 to 3600000", value)
        if not isinstance(self.mix, dict) or set(self.mix) != set(MIX_KEYS):
            return bad("mix", f"must have exactly the weights {', '.join(MIX_KEYS)}", self.mix)
        for key in MIX_KEYS:
            if not is_int(self.mix[key]) or not 0 <= self.mix[key] <= 1000000:
                return bad(f"mix.{key}", "must be a whole number from 0 to 1000000", self.mix[key])
        if sum(self.mix.values()) == 0:
            return bad("mix", "must have at least one weight above 0", self.mix)
        if self.mix["delete"] > self.mix["post"]:
            return bad("mix.delete", f"must not exceed mix.post ({self.mix['post']}): a DELETE removes a "
                       "customer the load created", self.mix["delete"])
        if not is_int(self.id_min) or self.id_min < 1:
            return bad("id_min", "must be a whole number from 1", self.id_min)
        if not is_int(self.id_max) or self.id_max < self.id_min or self.id_max > 2**31 - 2:
            return bad("id_max", f"must be a whole number from id_min ({self.id_min}) to 2147483646", self.id_max)
        if not isinstance(self.customers_path, str) or not re.fullmatch(r"(/[\w.~-]+)+", self.customers_path):
            return bad("customers_path", "must be a path like /api/customers (no trailing slash)", self.customers_path)
        return None

    @property
    def drain_s(self) -> int:
        """Open model: the schedule's closing pause, so requests in flight finish rather than being cut."""
        return -(-self.response_timeout_ms // 1000) if self.model == "open" else 0

    @property
    def planned_s(self) -> int:
        return self.ramp_up_s + self.duration_s + self.drain_s

    def jmeter_properties(self) -> dict[str, str]:
        props = {
            "model": self.model, "users": str(self.users), "ramp_up_s": str(self.ramp_up_s),
            "duration_s": str(self.duration_s), "rate_per_s": f"{self.rate_per_s:g}",
            "keep_alive": "true" if self.keep_alive else "false",
            "connect_timeout_ms": str(self.connect_timeout_ms), "response_timeout_ms": str(self.response_timeout_ms),
            "id_min": str(self.id_min), "id_max": str(self.id_max), "customers_path": self.customers_path,
        }
        props.update({f"mix_{key}": str(self.mix[key]) for key in MIX_KEYS})
        return props


def target_properties(targets: dict[str, str]) -> dict[str, str]:
    """machine → "http://host[:port]" as the plan's <machine>_host/_port/_scheme; ValueError names the bad one."""
    if set(targets) != set(MACHINES):
        raise ValueError(f"targets: need exactly {' and '.join(MACHINES)}, got {sorted(targets)}")
    props = {}
    for machine in MACHINES:
        url = targets[machine]
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            port = -1
        if parts.scheme not in ("http", "https") or not parts.hostname or port == -1 \
                or parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ValueError(f"targets.{machine}: must be http(s)://host[:port] without a path, got {url!r}")
        props[f"{machine}_host"] = parts.hostname
        props[f"{machine}_port"] = str(port or (443 if parts.scheme == "https" else 80))
        props[f"{machine}_scheme"] = parts.scheme
    return props


# --- JMeter home ------------------------------------------------------------------------------------

def pom_hash(pom: Path = POM) -> str:
    return hashlib.sha256(pom.read_bytes()).hexdigest()


def _is_built(home: Path, want: str) -> bool:
    try:
        return (home / STAMP_NAME).read_text().strip() == want and (home / "bin" / "ApacheJMeter.jar").is_file()
    except OSError:
        return False


def ensure_jmeter(home: Path = HOME, pom: Path = POM, progress: Progress = print) -> Path:
    """The JMeter home for this pom, assembled from Maven Central when missing or built from another pom."""
    want = pom_hash(pom)
    if _is_built(home, want):
        return home
    progress(f"load: assembling JMeter from Maven Central into {home} (jmeter/pom.xml changed or first use)")
    maven = [str(MAVEN_WRAPPER)] if MAVEN_WRAPPER.exists() else ["mvn"]
    for stale in home.parent.glob(f"{home.name}.building-*"):    # left by an interrupted build
        shutil.rmtree(stale, ignore_errors=True)
    building = home.with_name(f"{home.name}.building-{os.getpid()}")
    cmd = [*maven, "-B", "-ntp", "-q", "-f", str(pom), "package", f"-Dlab.jmeter.home={building}"]
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, cwd=pom.parent)
    except FileNotFoundError:
        raise LoadError(f"assembling JMeter needs Maven: neither {MAVEN_WRAPPER} nor mvn was found") from None
    shutil.rmtree(pom.parent / "target", ignore_errors=True)   # Maven's empty build dir, nothing in it
    if done.returncode != 0 or not (building / "bin" / "ApacheJMeter.jar").is_file():
        shutil.rmtree(building, ignore_errors=True)
        tail = "\n  ".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise LoadError(f"assembling JMeter failed ({' '.join(cmd[:6])} … exited {done.returncode}):\n  {tail}")
    # JMeter's launcher warns when lib/junit is missing (a folder the distribution ships empty).
    (building / "lib" / "junit").mkdir(exist_ok=True)
    (building / STAMP_NAME).write_text(want + "\n")
    shutil.rmtree(home, ignore_errors=True)
    building.rename(home)
    return home


def jmeter_version(home: Path) -> str:
    """The version of the JMeter in this home (from its core jar's name)."""
    for jar in (home / "lib" / "ext").glob("ApacheJMeter_core-*.jar"):
        return jar.name[len("ApacheJMeter_core-"):-len(".jar")]
    raise LoadError(f"{home} holds no ApacheJMeter_core jar: not a JMeter home")


def jmeter_command(home: Path, *args: str, java: str = "java") -> list[str]:
    return [java, *JVM_OPTIONS, "-jar", str(home / "bin" / "ApacheJMeter.jar"), *args]


# --- JTL tailing --------------------------------------------------------------------------------------

def split_records(buf: bytes) -> tuple[list[bytes], int]:
    """Complete CSV records at the start of buf (a quoted field may hold newlines) and where they end."""
    records, start, pos, quotes = [], 0, 0, 0
    while True:
        newline = buf.find(b"\n", pos)
        if newline < 0:
            return records, start
        quotes += buf.count(b'"', pos, newline)
        pos = newline + 1
        if quotes % 2 == 0:
            records.append(buf[start:pos])
            start, quotes = pos, 0


class JtlTail:
    """Reads a JTL while JMeter writes it: whole records only, counted in total and since the last look."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0             # end of the last whole record read
        self.header: list[str] | None = None
        self.samples = self.errors = 0
        self.by_label: dict[str, int] = {}
        self.interval_samples = self.interval_errors = 0
        self.threads = 0            # grpThreads of the newest sample: the group's active threads

    def read(self) -> None:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return
        records, used = split_records(chunk)
        if not records:
            return
        samples = errors = 0
        by_label = dict(self.by_label)
        threads = self.threads
        for row in csv.reader(io.StringIO(b"".join(records).decode("utf-8", errors="replace"))):
            if self.header is None:
                self.header = row
                continue
            if len(row) != len(JTL_COLUMNS):
                continue
            samples += 1
            errors += row[7] != "true"
            by_label[row[2]] = by_label.get(row[2], 0) + 1
            threads = int(row[11]) if row[11].isdigit() else threads
        # all at once: an interrupt in the loop above leaves the counts as they were
        self.offset += used
        self.samples += samples
        self.errors += errors
        self.interval_samples += samples
        self.interval_errors += errors
        self.by_label, self.threads = by_label, threads

    @property
    def header_ok(self) -> bool:
        return self.header is None or self.header == JTL_COLUMNS

    def take_interval(self) -> tuple[int, int]:
        counts = (self.interval_samples, self.interval_errors)
        self.interval_samples = self.interval_errors = 0
        return counts

    def trim_partial_tail(self) -> int:
        """Cuts a half-written last record off the file (JMeter was killed mid-line); returns bytes cut."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return 0
        if size > self.offset:
            with open(self.path, "r+b") as f:
                f.truncate(self.offset)
        return max(0, size - self.offset)


def read_jtl(path: Path) -> list[dict[str, str]]:
    """All samples of a JTL as dicts (column → text)."""
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# --- the run --------------------------------------------------------------------------------------------

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
    ended_by: str = "completed"         # completed | shutdown | stoptestnow | sigterm | sigkill | failed
    exit_code: int | None = None
    samples: dict[str, int] = field(default_factory=dict)
    errors: dict[str, int] = field(default_factory=dict)
    by_label: dict[str, dict[str, int]] = field(default_factory=dict)
    jtl: dict[str, str] = field(default_factory=dict)
    trimmed_bytes: dict[str, int] = field(default_factory=dict)
    log: str = ""
    jmeter_peak_rss_mb: float | None = None   # of the launched process (the JVM when wrap execs it)
    jmeter_cpu_s: float | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def _utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def _clock(seconds: float) -> str:
    s = max(0, int(seconds))
    return f"{s // 3600}:{s % 3600 // 60:02d}:{s % 60:02d}" if s >= 3600 else f"{s // 60}:{s % 60:02d}"


class _ProcessStats:
    """Peak RSS and CPU time of a running process, sampled from /proc (gone once it exits)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_rss_mb: float | None = None
        self.cpu_s: float | None = None

    def sample(self) -> None:
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return
        match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
        if match:
            self.peak_rss_mb = round(int(match.group(1)) / 1024, 1)
        fields = stat.rsplit(")", 1)[1].split()
        self.cpu_s = round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 1)


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
        with open(out_file, "a", encoding="utf-8") as out:
            for line in stream:
                out.write(line)
                out.flush()
                self.tail.append(line.rstrip())
                if line.startswith("Starting standalone test"):
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


_UDP_SEND = "import socket,sys; socket.socket(socket.AF_INET,socket.SOCK_DGRAM).sendto(sys.argv[2].encode(),('127.0.0.1',int(sys.argv[1])))"


def run(run_dir: Path, targets: dict[str, str], profile: Profile, wrap: Wrap = lambda argv: argv,
        progress: Progress = print, progress_every_s: float = PROGRESS_EVERY_S, java: str = "java") -> LoadResult:
    """Runs the plan against targets (machine → "http://host[:port]"); see the module doc."""
    properties = target_properties(targets)
    run_dir = Path(run_dir).resolve()
    jtls = {m: run_dir / m / "jmeter.jtl" for m in MACHINES}
    for jtl in jtls.values():
        if jtl.exists():
            raise LoadError(f"{jtl} exists: a run folder takes one load (JMeter would append to it)")
    home = ensure_jmeter(progress=progress)
    for jtl in jtls.values():
        jtl.parent.mkdir(parents=True, exist_ok=True)
    properties.update(profile.jmeter_properties())
    properties.update({"run_dir": str(run_dir), "summariser.out": "false"})
    log = run_dir / "jmeter.log"
    argv = jmeter_command(home, "-n", "-t", str(PLAN), "-q", str(LAB_PROPERTIES), "-j", str(log),
                          *[f"-J{k}={v}" for k, v in properties.items()], java=java)
    command = wrap(argv)
    result = LoadResult(jmeter_version=jmeter_version(home), command=command, profile=asdict(profile),
                        targets=dict(targets), started_at=_utc_now(), log=str(log),
                        jtl={m: str(p) for m, p in jtls.items()})
    progress(f"load: {profile.model} model, {_describe(profile)}, {_clock(profile.planned_s)} planned; "
             f"JMeter {result.jmeter_version}, log {log}")
    proc = subprocess.Popen(command, cwd=run_dir, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            stdin=subprocess.DEVNULL, text=True, preexec_fn=_die_with_parent)
    console = _Console(proc.stdout, run_dir / "jmeter.out")
    stats = _ProcessStats(proc.pid)
    tails = {m: JtlTail(p) for m, p in jtls.items()}
    try:
        _watch(proc, console, tails, stats, profile, progress, progress_every_s)
    except KeyboardInterrupt:
        result.interrupted = True
        result.ended_by = _stop(proc, console, stats, wrap, profile, progress)
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
        if not final.header_ok:
            raise LoadError(f"{jtl}: unexpected JTL header {final.header} (want {','.join(JTL_COLUMNS)}): "
                            f"were the saveservice properties of {LAB_PROPERTIES} applied?", result)
    result.jmeter_peak_rss_mb, result.jmeter_cpu_s = stats.peak_rss_mb, stats.cpu_s
    progress("load: " + ("stopped early" if result.interrupted else "done") + "; " + "; ".join(
        f"{m} {result.samples[m]} samples, {_percent(result.errors[m], result.samples[m])} errors" for m in MACHINES))
    if not result.interrupted and (result.exit_code != 0 or not sum(result.samples.values())):
        result.ended_by = "failed"
        why = f"exited {result.exit_code}" if result.exit_code != 0 else "recorded no sample"
        raise LoadError(f"JMeter {why} (log: {log}); its last words:\n  " + "\n  ".join(list(console.tail)[-12:]),
                        result)
    return result


def _describe(profile: Profile) -> str:
    if profile.model == "open":
        return f"{profile.rate_per_s:g} req/s per machine after a {profile.ramp_up_s} s ramp"
    return f"{profile.users} users per machine over {profile.ramp_up_s} s"


def _percent(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f} %" if whole else "-"


def _watch(proc, console: _Console, tails: dict[str, JtlTail], stats: _ProcessStats, profile: Profile,
           progress: Progress, every_s: float) -> None:
    """Waits for JMeter to end, printing a progress line every every_s seconds."""
    last = time.monotonic()
    while proc.poll() is None:
        time.sleep(0.2)
        now = time.monotonic()
        if now - last < every_s:
            continue
        stats.sample()
        progress(_progress_line(console, tails, profile, now - last))
        last = now


def _progress_line(console: _Console, tails: dict[str, JtlTail], profile: Profile, interval_s: float) -> str:
    if console.started_at is None:
        return "load: JMeter starting"
    elapsed = time.monotonic() - console.started_at
    hold_end = profile.ramp_up_s + profile.duration_s
    phase = "ramp-up" if elapsed < profile.ramp_up_s else "hold" if elapsed < hold_end else "ending"
    parts = [f"load: {phase:7} {_clock(elapsed)} elapsed, {_clock(profile.planned_s - elapsed)} left"]
    for machine, tail in tails.items():
        tail.read()
        count, errors = tail.take_interval()
        parts.append(f"{machine} {count / interval_s:7.1f} req/s {_percent(errors, count):>7} err "
                     f"{tail.threads:4d} threads")
    return " | ".join(parts)


def _stop(proc, console: _Console, stats: _ProcessStats, wrap: Wrap, profile: Profile, progress: Progress) -> str:
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


# --- dashboards -------------------------------------------------------------------------------------------

def dashboards(run_dir: Path, machines: tuple[str, ...] = MACHINES, progress: Progress = print,
               java: str = "java") -> dict[str, Path | None]:
    """JMeter's HTML dashboard per machine in <run-dir>/jmeter-dashboard/<machine>/ (index.html).

    Never raises: a machine whose JTL is missing or has no sample, or whose generation fails, gets None
    and a line saying so.
    """
    run_dir = Path(run_dir)
    out_root = run_dir / "jmeter-dashboard"
    made: dict[str, Path | None] = {}
    try:
        home = ensure_jmeter(progress=progress)
    except LoadError as e:
        progress(f"dashboards: skipped, no JMeter ({e})")
        return {m: None for m in machines}
    for machine in machines:
        made[machine] = None
        jtl = run_dir / machine / "jmeter.jtl"
        try:
            with open(jtl, "rb") as f:
                has_samples = len(f.readline()) > 0 and len(f.readline()) > 0
        except OSError:
            progress(f"dashboard {machine}: skipped, {jtl} is missing")
            continue
        if not has_samples:
            progress(f"dashboard {machine}: skipped, {jtl} has no sample")
            continue
        out = out_root / machine
        log = out_root / f"{machine}.log"
        shutil.rmtree(out, ignore_errors=True)     # JMeter wants an empty or new folder; it is derived data
        out_root.mkdir(parents=True, exist_ok=True)
        cmd = jmeter_command(home, "-g", str(jtl), "-o", str(out), "-q", str(LAB_PROPERTIES), "-j", str(log),
                             f"-Jjmeter.reportgenerator.report_title=Camel Tuning Lab: {machine}", java=java)
        try:
            done = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
        except (OSError, subprocess.TimeoutExpired) as e:
            progress(f"dashboard {machine}: failed ({e}); log {log}")
            continue
        if done.returncode != 0 or not (out / "index.html").is_file():
            last = (done.stdout + done.stderr).strip().splitlines()[-1:] or ["no output"]
            progress(f"dashboard {machine}: failed (exit {done.returncode}: {last[0]}); log {log}")
            continue
        made[machine] = out
        progress(f"dashboard {machine}: {out / 'index.html'}")
    return made
