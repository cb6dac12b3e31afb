"""`./start.sh service check NAME|PATH`: a service brought to the lab, checked on this host before any machine is
used (issue 38). The descriptor, its jar, its stubs and its plan are checked as a run would (service.py); then the
service starts once here, natively, with the tuning kit on its class path as the machines will have it, and its
mock when it has one: the health URL must answer 200 within the descriptor's start_timeout_s. It says how long
the start took and what the JVM held once ready (resident memory, threads), the first figures of what the
service needs on a 512 MB machine.

The service and its mock run confined (lab/confine.py): as the lab's user, in the sandbox network namespace
(loopback only: the service's main() reaches its mock and nothing else), in a cgroup of their own that is ended
whole afterwards, with the lab's user's environment alone; the lab's probes reach them from a thread inside that
namespace. Everything listens on 127.0.0.1 there, on ports free a moment before, and is stopped by its PID.
"""
from __future__ import annotations

import contextlib
import os
import pwd
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lab import confine, paths, unprivileged
from lab.errors import LabError
from lab.experiment import service
from lab.provision import jarinfo, jars

POLL_S = 0.5


class CheckFailed(LabError):
    """The service did not come up as the lab needs it; the message says what it did instead."""


@dataclass
class Started:
    pid: int
    ready_after_s: float
    rss_mb: float
    threads: int
    port: int
    metrics_families: int          # families on the kit's metrics page (the names PCP reads)
    metaspace_mb: float | None = None   # what the JVM's class metadata took once ready (the kit's page)
    check_status: int | None = None   # what the descriptor's check path answered, straight from the service
    unmatched: dict | None = None     # requests the mock's stubs did not match: {"METHOD path": count}
    uid: int | None = None            # the user the kernel showed running the service (never root's 0 as root)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def java_command(svc: service.Service, kit: Path, port: int, mock_url: str | None, metrics_port: int = 0,
                 ajp_port: int = 0, java: str = "java") -> list[str]:
    """The service's own jar, started by Boot's PropertiesLauncher with the kit on loader.path (appended to the jar's
    class path: the service's classes always win) and its AJP connector on, as HTTPD will speak to it; every setting
    a system property, so a main() that drops its arguments still gets them."""
    props = {"server.port": port, "server.address": "127.0.0.1", "loader.path": kit,
             "loader.main": svc.facts.start_class, "lab.kit.metrics.port": metrics_port,
             "lab.kit.ajp.enabled": "true", "lab.kit.ajp.port": ajp_port, "lab.kit.ajp.secret": secrets.token_hex(16)}
    for key, value in svc.properties.items():
        text = str(value).lower() if isinstance(value, bool) else str(value)
        props[key] = text.replace("{mock}", mock_url or "http://127.0.0.1:9")
    return [java, *(f"-D{k}={v}" for k, v in props.items()), "-cp", str(svc.jar),
            jarinfo.PROPERTIES_LAUNCHER[svc.facts.loader]]


def _answers(url: str) -> int | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as answer:
            return answer.status
    except urllib.error.HTTPError as e:
        return e.code
    except (OSError, ValueError):
        return None


def _footprint(pid: int) -> tuple[float, int]:
    fields = dict(line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line)
    return int(fields["VmRSS"].split()[0]) / 1024, int(fields["Threads"])


@dataclass(frozen=True)
class Confinement:
    """How start_once runs what it starts: as whom (None: as the lab runs, where it is not root), in which network
    namespace and cgroup, seeing which paths (the jar, the kit, the stubs, the mock's Python) and from which folder
    of that user's own (the JVM's working folder: whatever it writes lands there)."""
    account: unprivileged.Account | None = None
    netns: Path | None = None
    cgroup: confine.Cgroup | None = None
    needed: tuple[Path, ...] = ()
    folder: Path | None = None

    def argv(self, argv: list[str]) -> list[str]:
        if self.account is None:
            return argv
        return self.account.command(argv, list(self.needed), netns=self.netns, cgroup=self.cgroup)


@contextlib.contextmanager
def confined(svc: service.Service, kit: Path) -> Iterator[Confinement]:
    """The confinement of one check: as the lab's user where the lab is root, else as the lab runs (then no namespace
    or cgroup: nothing to take away)."""
    account = unprivileged.ensure()
    if account is None:
        yield Confinement()
        return
    folder = account.home / "service-check"
    if folder.is_symlink() or (folder.exists() and not folder.is_dir()):
        folder.unlink()
    folder.mkdir(exist_ok=True)
    account.give(folder)
    needed = (svc.jar, kit, *([svc.mock.stubs] if svc.mock and svc.mock.stubs else []), *confine.python(),
              paths.ROOT / "mock-service", folder)
    with confine.Cgroup.make("service-check").held() as cgroup:
        yield Confinement(account, confine.sandbox(), cgroup, needed, folder)


@contextlib.contextmanager
def running(argv: list[str], log_file: Path, cwd: Path | None = None) -> Iterator[subprocess.Popen]:
    """A process of ours, stopped by its PID when done (SIGTERM, then SIGKILL after 20 s). Its output goes to
    log_file, opened here (the process itself need not reach it)."""
    with open(log_file, "wb") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, cwd=cwd or log_file.parent)   # its files land there
        try:
            yield proc
        finally:
            if proc.poll() is None:
                os.kill(proc.pid, signal.SIGTERM)
                try:
                    proc.wait(20)
                except subprocess.TimeoutExpired:
                    os.kill(proc.pid, signal.SIGKILL)
                    proc.wait()


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no output)"


def start_once(svc: service.Service, kit: Path, work: Path, log=print) -> Started:
    """The service up confined with the kit (and its mock), its health answered, its footprint read, stopped."""
    work.mkdir(parents=True, exist_ok=True)
    with confined(svc, kit) as jail, confine.netns_thread(jail.netns) as inside, contextlib.ExitStack() as stack:
        mock_url = None
        if svc.mock is not None:
            mock_port = inside(free_port)
            argv = [sys.executable, "-m", "mock_service", "--port", str(mock_port),
                    "--builtin", "on" if svc.mock.builtin else "off",
                    *(["--stubs", str(svc.mock.stubs)] if svc.mock.stubs else []),
                    *(["--extra-ports", ",".join(map(str, svc.mock.extra_ports))] if svc.mock.extra_ports else [])]
            mock = stack.enter_context(running(jail.argv(argv), work / "mock.log", jail.folder))
            mock_url = f"http://127.0.0.1:{mock_port}"
            _wait(lambda: inside(_answers, f"{mock_url}/__mock/health") == 200, 30, mock, work / "mock.log",
                  "the mock")
        port, metrics_port, ajp_port = inside(free_port), inside(free_port), inside(free_port)
        started = time.monotonic()
        proc = stack.enter_context(running(jail.argv(java_command(svc, kit, port, mock_url, metrics_port, ajp_port)),
                                           work / "service.log", jail.folder))
        health = f"http://127.0.0.1:{port}{svc.health}"
        where = f"as {jail.account.name}, in the sandbox network namespace" if jail.account else "natively"
        log(f"{svc.name}: started {where} with the kit (PID {proc.pid}); waiting for {health} to answer 200")
        _wait(lambda: inside(_answers, health) == 200, svc.start_timeout_s, proc, work / "service.log", svc.name)
        ready = time.monotonic() - started
        rss, threads = _footprint(proc.pid)
        page = inside(_metrics_page, metrics_port, work)
        result = Started(proc.pid, round(ready, 1), round(rss), threads, port,
                         sum(1 for line in page.splitlines() if line.startswith("# TYPE ")),
                         metaspace_mb=_metaspace_mb(page))
        result.check_status = inside(_answers, f"http://127.0.0.1:{port}{svc.check_path}")
        if mock_url is not None:
            result.unmatched = inside(_unmatched, f"{mock_url}/__mock/metrics")
        result.uid = _uid(proc.pid)
        return result


def _uid(pid: int) -> int | None:
    """The real user ID the kernel shows for pid (what ran the service), or None when it is gone."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Uid:"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def _unmatched(url: str) -> dict:
    """The mock's mock_unmatched_requests_total samples: {"GET /path": count}."""
    with urllib.request.urlopen(url, timeout=10) as answer:
        page = answer.read().decode()
    found = {}
    for line in page.splitlines():
        match = re.match(r'mock_unmatched_requests_total\{method="([^"]*)",path="([^"]*)"} (\d+)', line)
        if match:
            found[f"{match[1]} {match[2]}"] = int(match[3])
    return found


def _metaspace_mb(page: str) -> float | None:
    """jvm_memory_used_bytes of the Metaspace pool, in MB, from the kit's page; None when it has none."""
    match = re.search(r'^jvm_memory_used_bytes\{[^}]*id="Metaspace"[^}]*} ([0-9.eE+]+)$', page, re.M)
    return round(float(match[1]) / 2**20, 1) if match else None


def keep_footprint(svc: service.Service, started: Started) -> Path:
    """What the service took once ready, for the machines' memory estimate (service.footprint reads it back)."""
    return service.write_footprint(svc, {"metaspace_mb": started.metaspace_mb, "threads": started.threads,
                                         "rss_mb": started.rss_mb, "ready_after_s": started.ready_after_s})


def _metrics_page(port: int, work: Path, wait_s: float = 30) -> str:
    """The kit's metrics page once it answers (kept in work/metrics.txt)."""
    url, until = f"http://127.0.0.1:{port}/metrics", time.monotonic() + wait_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as answer:
                page = answer.read().decode()
            break
        except OSError as e:
            if time.monotonic() > until:
                raise CheckFailed(f"the kit's metrics did not answer on {url} within {wait_s:g} s ({e})") from None
            time.sleep(POLL_S)
    (work / "metrics.txt").write_text(page)
    return page


def _wait(ready, timeout_s: float, proc: subprocess.Popen, log_file: Path, what: str) -> None:
    until = time.monotonic() + timeout_s
    while time.monotonic() < until:
        if ready():
            return
        if proc.poll() is not None:
            raise CheckFailed(f"{what} stopped (exit {proc.returncode}) before it answered; its last lines "
                              f"({log_file}):\n{_tail(log_file)}")
        time.sleep(POLL_S)
    raise CheckFailed(f"{what} did not answer within {timeout_s:g} s; its last lines ({log_file}):\n{_tail(log_file)}")


def _user(uid: int | None) -> str:
    if uid is None:
        return "an unknown user"
    try:
        return f"{pwd.getpwuid(uid).pw_name} (uid {uid})"
    except KeyError:
        return f"uid {uid}"


def describe(svc: service.Service) -> list[str]:
    f = svc.facts
    lines = [f"service {svc.name} ({svc.source})",
             f"  jar          {svc.jar}: Spring Boot {f.boot_version} ({f.loader} loader), Java {f.java_release}, "
             f"{f.server} {f.tomcat_version or ''}".rstrip() + (f", Camel {f.camel_version}" if f.camel_version else "")
             + (", actuator" if f.actuator else "") + (", Micrometer" if f.micrometer else ""),
             f"  HTTP         port {svc.port}, HTTPD forwards {svc.proxy_path}, health {svc.health}, checked by "
             f"{svc.check_path} → {svc.check_status}"]
    if svc.mock:
        lines.append(f"  backends     the mock: {svc.mock.stubs or 'no stubs'}"
                     + (", the built-in API" if svc.mock.builtin else "")
                     + (f", also on ports {', '.join(map(str, svc.mock.extra_ports))}" if svc.mock.extra_ports else ""))
    if svc.plan:
        lines.append(f"  load         {svc.plan.path}: samplers {', '.join(svc.plan.samplers)}")
    return lines


def check(name: str, log=print, allow_plan_code: bool = False, root: Path | None = None) -> int:
    """The command: 0 when the service is ready for the lab, 1 (and why) otherwise (allow_plan_code, root: the
    command line's --allow-plan-code and --service-root)."""
    svc = service.load(name, allow_plan_code, root)
    print("\n".join(describe(svc)), flush=True)
    kit = jars.ensure_kit(log)
    work = paths.STATE_DIR / "services" / svc.name
    started = start_once(svc, kit, work, log)
    metaspace = started.metaspace_mb if started.metaspace_mb is not None else "?"
    print(f"  started      as {_user(started.uid)}; health answered after {started.ready_after_s:g} s; then "
          f"{started.rss_mb:g} MB resident, "
          f"{started.threads} threads, metaspace {metaspace} MB "
          f"(JVM flags of its own; the machines have 512 MB); the kit's metrics: {started.metrics_families} families",
          flush=True)
    kept = keep_footprint(svc, started)
    print(f"  footprint    kept in {kept}: the machines' memory estimate takes the service's metaspace and threads "
          "from it", flush=True)
    problems = []
    if started.check_status != svc.check_status:
        problems.append(f"its check {svc.check_path} answered {started.check_status or 'nothing'}, not "
                        f"{svc.check_status} (the service's own log: {work / 'service.log'})")
    if started.unmatched:
        problems.append("the mock's stubs matched none of: " + ", ".join(f"{k} (×{n})" for k, n in
                                                                       started.unmatched.items()))
    for problem in problems:
        print(f"  PROBLEM      {problem}", flush=True)
    print(f"{'not ready' if problems else 'ok'}: {svc.name} {'cannot run' if problems else 'can run'} in the lab "
          f"{'as described' if problems else ''}".rstrip(), flush=True)
    return 1 if problems else 0
