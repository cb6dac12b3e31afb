"""JMeter's remote engines on the load generators (`loadgen` hosts): started by the lab before the load, stopped
by it after, each by the PID it started.

JMeter's distributed mode, secured as JMeter documents (RMI over TLS): one keystore per run (a new RSA key and a
random password, made here with keytool), copied with a properties file naming it to the same path on every
generator and given to the controller and the engines alike; both are removed at the end. Every engine runs
the whole plan, so the caller divides the load between them (Profile.per_engine). Ports: each engine's RMI
registry (`port`, 1099) and its remote object (`object_port`, 4000) must be open to the controller; the
controller takes an ephemeral port for the results the engines send back (client.rmi.localport=0).

    with Engines(run_id, run_dir, [Engine("gen1", "10.0.0.21")], remote_for, controller_address="10.0.0.5") as e:
        load.run(run_dir, targets, profile.per_engine(len(e.engines)), engines=e)

Files: <run_dir>/loadgen/<name>/engine.out (the engine's console) and jmeter-server.log, brought back at the end.
"""
from __future__ import annotations

import io
import os
import secrets
import shlex
import shutil
import stat
import subprocess
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from lab import unprivileged
from lab.experiment.load.jmeter import (
    HOME,
    JVM_OPTIONS,
    LAUNCHER,
    LoadError,
    ensure_jmeter,
    pom_hash,
)
from lab.machines import reach

WORK = "/tmp/camel-lab-engines"            # on every generator and here: <run_id>/ keystore, properties, logs
JMETER_ON_GENERATOR = "/var/tmp/camel-lab-jmeter"   # <pom hash>/: the controller's JMeter home, copied once
READY_TIMEOUT_S = 120
STOP_GRACE_S = 10
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
KEY_ALIAS = "rmi"                           # JMeter's default server.rmi.ssl.keystore.alias
# `private DIR MASK` (a shell function, for the generators): DIR made 0700, or taken when it is a folder of this user
# with none of MASK's mode bits; else DIR is named and the script exits 3. /tmp and /var/tmp are everyone's: a folder
# or symlink planted there would receive the run's keystore and password, or hold a JMeter the engine would run.
PRIVATE_SH = ('private() { mkdir -m 700 "$1" 2>/dev/null && return 0; [ -d "$1" ] && [ ! -L "$1" ] && '
              '[ "$(stat -c %u "$1")" = "$(id -u)" ] && [ $(( 0$(stat -c %a "$1") & $2 )) -eq 0 ] && return 0; '
              'echo "$1 is a symlink, not $(id -un)\'s or open to others: the lab will not use it; remove it"; '
              'exit 3; }; ')


class EngineError(LoadError):
    """A generator could not take or start its engine; the message names it and quotes its output."""


@dataclass
class Engine:
    name: str                   # the generator's name in the inventory
    address: str                # where the controller reaches it (and what its RMI stubs say)
    port: int = 1099            # its RMI registry
    object_port: int = 4000     # its remote engine object
    pid: int | None = None      # of the engine's JVM on the generator, once started
    runs_as: dict | None = None  # on this machine: who it ran as (unprivileged.Account.reading); else the SSH user

    @property
    def endpoint(self) -> str:
        return f"{self.address}:{self.port}"


class Remote:
    """How the lab runs a shell script on one generator: over SSH (the lab's ssh_config) or here (local)."""

    def __init__(self, argv_for: Callable[[str], list[str]], account: unprivileged.Account | None = None) -> None:
        self._argv_for = argv_for
        self.account = account          # this machine's: the engine runs as the lab's user, not as root

    @classmethod
    def ssh(cls, name: str) -> Remote:
        """A generator the lab reaches as it reaches the machines (reach.ssh_command: the hosts' ssh_config)."""
        return cls(lambda script: reach.ssh_command(name, "bash -c " + shlex.quote(script)))

    @classmethod
    def local(cls) -> Remote:
        """This machine as a generator, with the system's PATH as a login there would have (PCP's tools run on
        the system's python3, not on one a user put first in PATH). Its engine runs as the lab's user."""
        return cls(lambda script: ["env", f"PATH={SYSTEM_PATH}", "bash", "-c", script], unprivileged.ensure())

    def run(self, script: str, data: bytes | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run(self._argv_for(script), input=data, capture_output=True, timeout=timeout)


def _text(result: subprocess.CompletedProcess) -> str:
    out = (result.stderr or b"") + (result.stdout or b"")
    return "\n    ".join(out.decode(errors="replace").strip().splitlines()[-12:])


class Engines:
    """The run's engines, up while the context lasts; see the module's docstring."""

    def __init__(self, run_id: str, run_dir: Path, engines: list[Engine], remote_for: Callable[[Engine], Remote],
                 controller_address: str, java: str = "java", home: Path = HOME, log=print) -> None:
        if not engines:
            raise ValueError("Engines: no generator given")
        self.run_id, self.run_dir, self.engines = run_id, Path(run_dir), engines
        self.remote_for, self.controller_address, self.java, self.log = remote_for, controller_address, java, log
        self.home = home
        self.work = f"{WORK}/{run_id}"
        self.remote_home = f"{JMETER_ON_GENERATOR}/{pom_hash()}"     # the same JMeter on every generator
        self.local_work = Path(self.work)
        self.problems: dict[str, str] = {}      # what stopping or fetching could not do, per generator
        self._made = False                      # local_work is the lab's: made by this run (only then removed)
        self._prepared: set[str] = set()        # the generators whose run folder this run made or took

    # -- the controller's side ---------------------------------------------------------------------------------

    @property
    def properties_file(self) -> Path:
        return self.local_work / "rmi.properties"

    @property
    def private_files(self) -> list[Path]:
        """What JMeter reads of the run's folder (the controller's and an engine on this machine): the properties
        and the keystore they name."""
        return [self.properties_file, self.local_work / "rmi_keystore.jks"]

    def controller_arguments(self) -> list[str]:
        """What the controller's JMeter adds: its address for the engines' callbacks, the engines, exit them at
        the end (-X), the TLS settings, results sent back as they come without response data."""
        return [f"-Djava.rmi.server.hostname={self.controller_address}", "-q", str(self.properties_file),
                "-R", ",".join(e.endpoint for e in self.engines), "-X",
                "-Jclient.rmi.localport=0", "-Jmode=StrippedAsynch", "-Jtime_threshold=2000"]

    # -- lifecycle -----------------------------------------------------------------------------------------------

    def __enter__(self) -> Engines:
        try:
            self._make_keystore()
            home = ensure_jmeter(self.home, progress=self.log)
            for engine in self.engines:
                self._prepare(engine, home)
            for engine in self.engines:
                self._start(engine)
            for engine in self.engines:
                self._wait_ready(engine)
        except BaseException:
            self._stop_all()
            raise
        self.log("load: remote engines ready: "
                 + ", ".join(f"{e.name} ({e.endpoint}, pid {e.pid})" for e in self.engines))
        return self

    def __exit__(self, *exc) -> None:
        self._stop_all()

    def _make_private_work(self) -> None:
        """local_work made anew, 0700, in a parent only this user can change; EngineError naming the path when the
        parent is a symlink, another user's or writable by others, or local_work exists already (nothing made)."""
        parent = self.local_work.parent
        try:
            parent.mkdir(mode=0o700)
        except FileExistsError:
            pass
        found = os.lstat(parent)
        if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.geteuid() or found.st_mode & 0o022:
            raise EngineError(f"{parent} is a symlink, not this user's or writable by others: the lab keeps the run's "
                              "RMI keystore and its password there and will not use it; remove it and run again")
        try:
            self.local_work.mkdir(mode=0o700)
        except FileExistsError:
            raise EngineError(f"{self.local_work} exists already (a symlink, or left by another run?): the lab makes "
                              "this folder anew for the run's keystore; remove it and run again") from None
        self._made = True
        self.local_work.chmod(0o700)

    def _make_keystore(self) -> None:
        self._make_private_work()
        password = secrets.token_urlsafe(24)
        keystore = self.local_work / "rmi_keystore.jks"
        done = subprocess.run(["keytool", "-genkeypair", "-alias", KEY_ALIAS, "-keyalg", "RSA", "-keysize", "2048",
                               "-validity", "7", "-dname", f"CN={KEY_ALIAS}, O=camel-lab {self.run_id}",
                               "-keystore", str(keystore), "-storetype", "JKS", "-storepass:env", "LAB_RMI_PASSWORD",
                               "-keypass:env", "LAB_RMI_PASSWORD"],     # not on a command line others can read
                              capture_output=True, text=True, env={**os.environ, "LAB_RMI_PASSWORD": password})
        if done.returncode != 0:
            raise EngineError(f"keytool could not make the run's RMI keystore: {done.stderr.strip()[-300:]}")
        keystore.chmod(0o600)
        self._for_the_labs_user(keystore)
        self.properties_file.write_text(
            "# JMeter's RMI over TLS for this run only (lab/experiment/load/engines.py); removed at its end\n"
            f"server.rmi.ssl.keystore.file={keystore}\nserver.rmi.ssl.keystore.password={password}\n"
            f"server.rmi.ssl.keystore.alias={KEY_ALIAS}\nserver.rmi.ssl.truststore.file={keystore}\n"
            f"server.rmi.ssl.truststore.password={password}\nserver.rmi.ssl.disable=false\n")
        self.properties_file.chmod(0o600)
        self._for_the_labs_user(self.properties_file)

    @staticmethod
    def _for_the_labs_user(path: Path) -> None:
        """Where the lab is root, JMeter (the controller, an engine here) runs as its user and reads nothing past
        permissions: the run's own keystore and its password are that user's (0600), nobody else's."""
        account = unprivileged.find() if os.geteuid() == 0 else None
        if account is not None:
            account.give(path)

    def _bundle(self, home: Path | None) -> bytes:
        """A tar of the run's keystore and properties (and the JMeter home when the generator lacks it)."""
        buffer = io.BytesIO()
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            for path in sorted(self.local_work.glob("rmi*")):
                tar.add(path, arcname=f"run/{path.name}")
            if home is not None:
                tar.add(home, arcname="home")
        return buffer.getvalue()

    def _prepare(self, engine: Engine, home: Path) -> None:
        """The keystore and properties at the same path on the generator, its JMeter home copied once per pom,
        and Java there."""
        remote = self.remote_for(engine)
        target_home = self.remote_home
        probe = remote.run(f"{PRIVATE_SH}command -v {shlex.quote(self.java)} >/dev/null || echo no-java; "
                           f"private {JMETER_ON_GENERATOR} 022; private {target_home} 022; "
                           f"test -f {target_home}/{LAUNCHER} || echo no-home")
        if probe.returncode != 0:
            raise EngineError(f"load generator {engine.name} ({engine.address}) "
                              + ("" if probe.returncode == 3 else "does not answer: ") + _text(probe))
        said = probe.stdout.decode()
        if "no-java" in said:
            raise EngineError(f"load generator {engine.name} ({engine.address}) has no `{self.java}`: JMeter's engine "
                              "needs Java 17 there (provisioning's loadgen play installs openjdk-17-jre-headless)")
        copy_home = "no-home" in said
        if copy_home:
            self.log(f"load: copying JMeter to {engine.name}:{target_home}")
        # the run's folder: this run's own (the controller's, when a generator is this machine)
        script = (f"set -e; umask 077; {PRIVATE_SH}private {WORK} 022; private {self.work} 077; "
                  f"tmp=$(mktemp -d {self.work}/in.XXXX); "
                  "tar -x -C \"$tmp\"; mv \"$tmp\"/run/* " + self.work + "/; "
                  + (f"chmod 755 \"$tmp\"; rm -rf {target_home}; "
                     f"mv \"$tmp\"/home {target_home}; " if copy_home else "") + "rm -rf \"$tmp\"")
        done = remote.run(script, data=self._bundle(home if copy_home else None), timeout=600)
        if done.returncode != 0:
            raise EngineError(f"load generator {engine.name}: could not copy the run's files: {_text(done)}")
        self._prepared.add(engine.name)

    def _engine_dir(self, engine: Engine) -> str:
        return f"{self.work}/{engine.name}"

    def _start(self, engine: Engine) -> None:
        home = self.remote_home
        d = self._engine_dir(engine)
        remote = self.remote_for(engine)
        argv = [self.java, *JVM_OPTIONS, f"-Djava.rmi.server.hostname={engine.address}", "-jar", f"{home}/{LAUNCHER}",
                "-s", "-q", f"{self.work}/rmi.properties", "-j", f"{d}/jmeter-server.log",
                f"-Jserver_port={engine.port}", f"-Jserver.rmi.localport={engine.object_port}",
                "-Jjmeterengine.remote.system.exit=true"]
        give = ""
        if remote.account is not None:      # it writes its log in its folder; it outlives the shell that starts it
            Path(d).mkdir(parents=True, exist_ok=True)      # this machine's: shown to it, so made before
            reads = [Path(home), *self.private_files, Path(d)]
            argv = remote.account.command(argv, reads, die_with_parent=False)
            give = f"chown {remote.account.uid}:{remote.account.gid} {d}; "
            engine.runs_as = remote.account.reading(reads)
        java = " ".join(shlex.quote(a) for a in argv)
        script = (f"set -e; mkdir -p {d}; {give}cd {d}; "
                  f"setsid nohup {java} > {d}/engine.out 2>&1 < /dev/null & echo $!")
        done = remote.run(script)
        said = done.stdout.decode().strip()
        if done.returncode != 0 or not said.isdigit():
            raise EngineError(f"load generator {engine.name}: the engine did not start: {_text(done)}")
        engine.pid = int(said)

    def _wait_ready(self, engine: Engine) -> None:
        """Ready when the engine has bound its remote object in its RMI registry (its log says so: the console's
        "Created remote object" comes before the registry, which may still fail); a dead or silent one is an
        error with its last words."""
        d = self._engine_dir(engine)
        deadline = time.monotonic() + READY_TIMEOUT_S
        while True:
            done = self.remote_for(engine).run(
                f"kill -0 {engine.pid} 2>/dev/null || {{ echo dead; exit 0; }}; "
                f"grep -q 'Bound to RMI registry' {d}/jmeter-server.log 2>/dev/null && echo ready; "
                # the registry port taken: JMeter goes on to look for a registry there, and waits forever
                f"grep -q 'Problem creating registry' {d}/engine.out && echo taken")
            said = done.stdout.decode()
            if "ready" in said:
                return
            if "dead" in said or "taken" in said or time.monotonic() > deadline:
                tail = self.remote_for(engine).run(f"tail -n 15 {d}/engine.out")
                why = ("ended" if "dead" in said else f"could not open its RMI registry on port {engine.port}"
                       if "taken" in said else f"was not ready after {READY_TIMEOUT_S} s")
                raise EngineError(f"load generator {engine.name} ({engine.endpoint}): its JMeter engine {why}; "
                                  f"its console:\n    {_text(tail)}")
            time.sleep(1)

    def _stop_all(self) -> None:
        """Every engine stopped by its PID (TERM, then KILL), then each one's logs fetched into the run folder,
        then the run's files removed from every generator and from here (two engines may share a host)."""
        def attempt(engine: Engine, what: str, work) -> subprocess.CompletedProcess | None:
            try:
                return work(self.remote_for(engine))
            except (OSError, subprocess.SubprocessError, tarfile.TarError) as failure:
                self.problems.setdefault(engine.name, f"{what}: {failure}")
                return None

        for engine in self.engines:
            if engine.pid is not None:
                attempt(engine, "not stopped", lambda remote, pid=engine.pid: remote.run(
                    f"kill {pid} 2>/dev/null || exit 0; for i in $(seq {STOP_GRACE_S * 5}); do "
                    f"kill -0 {pid} 2>/dev/null || exit 0; sleep 0.2; done; kill -9 {pid}", timeout=STOP_GRACE_S + 30))
        for engine in self.engines:
            engine_dir = self._engine_dir(engine)
            logs = attempt(engine, "logs not fetched", lambda remote, d=engine_dir: remote.run(
                f"cd {d} 2>/dev/null && tar -c engine.out jmeter-server.log 2>/dev/null"))
            if logs is not None and logs.stdout:
                into = self.run_dir / "loadgen" / engine.name
                into.mkdir(parents=True, exist_ok=True)
                try:
                    with tarfile.open(fileobj=io.BytesIO(logs.stdout)) as tar:
                        tar.extractall(into, filter="data")
                except tarfile.TarError as failure:
                    self.problems.setdefault(engine.name, f"logs not unpacked: {failure}")
        for engine in self.engines:     # only where this run made or took the folder: never a planted one
            if engine.name in self._prepared:
                attempt(engine, "its run files not removed", lambda remote: remote.run(f"rm -rf {self.work}"))
        if self._made and self.local_work.is_dir() and not self.local_work.is_symlink():
            shutil.rmtree(self.local_work)      # symlinks in it are removed, never followed

    def record(self) -> list[dict]:
        """For run.json: each engine, where it ran, and what could not be done at its end."""
        return [{"name": e.name, "address": e.address, "port": e.port, "object_port": e.object_port, "pid": e.pid,
                 **({"runs_as": e.runs_as} if e.runs_as else {}),
                 **({"problem": self.problems[e.name]} if e.name in self.problems else {})} for e in self.engines]
