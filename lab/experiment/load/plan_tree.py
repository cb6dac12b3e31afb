"""A JMeter plan as JMeter's own loader builds it: jmeter/inspect/PlanInspect.java loads it with SaveService.loadTree in
the lab's JMeter home, as the lab's user (confined: lab/confine.py's sandbox network namespace, loopback only, and a
cgroup of its own; PATH and LANG its whole environment; the plan on stdin), and prints every element it made — its
real Java class (from a `class` attribute or a qualified tag alike), whether JMeter takes it as enabled (a
`TestElement.enabled` child property included) and its properties with character and entity references decoded.
plan_check.py judges what it prints.

The inspector is compiled once per content of its source and of jmeter/pom.xml (a hash stamp, as maven.is_built
stamps a home), with the host's javac against the home's jars. Where JMeter cannot be assembled or the inspector
cannot run, the check fails (TreeError), never falls back to reading the plan's text."""
from __future__ import annotations

import fcntl
import hashlib
import itertools
import json
import os
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from lab import confine, paths, unprivileged
from lab.errors import LabError
from lab.experiment.load import jmeter

SOURCE = jmeter.JMETER_DIR / "inspect" / "PlanInspect.java"
BUILD = paths.STATE_DIR / "jmeter" / "inspect"          # the compiled class, stamped
STAMP = ".lab-source.sha256"
LOADER_FAILED = "PLAN-INSPECT-ERROR "                   # PlanInspect's line on stderr when the loader refuses a plan
# a short JVM: C1 only, one GC thread, JMeter's own logging off (the loader's failure comes back on stderr)
JVM_OPTIONS = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m", "-Djava.awt.headless=true",
               "-Dorg.apache.logging.log4j.level=OFF"]
KEPT_ENVIRONMENT = ("PATH", "LANG", "LC_ALL", "JAVA_HOME")   # nothing else of the lab's (no password) reaches it
TIMEOUT_S = 60
_checks = itertools.count()         # the checks this process ran: each its own cgroup
_seen: dict[str, list] = {}         # plan bytes' hash → its records (a descriptor is checked more than once a run)


class TreeError(LabError):
    """JMeter's loader could not be run (no JMeter home, no javac, the JVM failed): the plan stays unchecked."""


class LoaderRefused(Exception):
    """JMeter's loader refused the plan itself; the message is its own."""


@dataclass
class Element:
    """One object JMeter's loader made: an element of the tree (via "") or one a property of its parent holds."""
    id: int
    parent: Element | None
    via: str                        # the property of the parent that holds it ("" for the tree's elements)
    cls: str                        # its Java class, fully qualified
    is_element: bool                # a TestElement (else any object the loader made: judged by its class alone)
    own_enabled: bool               # TestElement.isEnabled()
    name: str
    props: dict[str, str]
    children: list[Element] = field(default_factory=list)

    @property
    def short(self) -> str:
        return self.cls.rsplit(".", 1)[-1]

    @property
    def in_tree(self) -> bool:
        return self.via == ""

    @property
    def owner(self) -> Element:
        """The tree element this one belongs to (itself when it is one)."""
        element = self
        while not element.in_tree and element.parent is not None:
            element = element.parent
        return element

    @property
    def enabled(self) -> bool:
        """Whether JMeter runs it: JMeter drops a disabled tree element with all below it; an element a property
        holds goes with its owner, whatever its own flag."""
        element = self.owner
        while element is not None:
            if not element.own_enabled:
                return False
            element = element.parent
        return True

    @property
    def label(self) -> str:
        """How a message names it: the tree element's testname, and the property for one held in a property."""
        vias, element = [], self
        while not element.in_tree and element.parent is not None:
            vias.insert(0, element.via)
            element = element.parent
        said = repr(element.name or element.short)
        return f"{said} ({'/'.join(vias)})" if vias else said


def _stamp() -> str:
    return hashlib.sha256(SOURCE.read_bytes() + jmeter.pom_hash().encode()).hexdigest()


def _class_path(home: Path, classes: Path | None = None) -> str:
    return ":".join(([str(classes)] if classes else []) + [str(home / "lib" / "*"), str(home / "lib" / "ext" / "*")])


def ensure_inspector(home: Path) -> Path:
    """The folder of PlanInspect.class for this source and this JMeter, compiled when missing or stale (one compile
    at a time across processes: test workers share a checkout)."""
    BUILD.parent.mkdir(parents=True, exist_ok=True)
    with open(BUILD.parent / f"{BUILD.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _ensure_inspector(home, _stamp())


def _ensure_inspector(home: Path, stamp: str) -> Path:
    try:
        if (BUILD / STAMP).read_text().strip() == stamp and (BUILD / "PlanInspect.class").is_file():
            return BUILD
    except OSError:
        pass
    javac = shutil.which("javac")
    if javac is None:
        raise TreeError("the plan check loads the plan with JMeter's own loader, compiled with javac: no javac on "
                        "the PATH (install a JDK: ./start.sh prereqs installs default-jdk-headless)")
    building = BUILD.with_name(f"{BUILD.name}.building-{os.getpid()}")
    shutil.rmtree(building, ignore_errors=True)
    building.mkdir(parents=True)
    try:
        result = subprocess.run([javac, "-nowarn", "-d", str(building), "-cp", _class_path(home), str(SOURCE)],
                                capture_output=True, text=True, timeout=120)
        if result.returncode != 0:
            raise TreeError(f"compiling {SOURCE.relative_to(paths.ROOT)} against {home} failed:\n  "
                            + "\n  ".join(result.stderr.strip().splitlines()[-10:]))
        (building / STAMP).write_text(stamp + "\n")
        for entry in building.iterdir():
            entry.chmod(0o644)
        building.chmod(0o755)
        shutil.rmtree(BUILD, ignore_errors=True)
        building.rename(BUILD)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return BUILD


def _command(home: Path, classes: Path, cgroup: confine.Cgroup | None = None) -> tuple[list[str], dict[str, str]]:
    """The loader's command line and environment: as the lab's user, confined (lab/confine.py: the sandbox network
    namespace, loopback only, and the cgroup given), PATH/LANG alone; as the caller where the lab is not root."""
    argv = ["java", *JVM_OPTIONS, "-cp", _class_path(home, classes), "PlanInspect", str(home)]
    env = {name: os.environ[name] for name in KEPT_ENVIRONMENT if name in os.environ}
    account = unprivileged.ensure()
    if account is None:             # the lab is not root: what it starts runs as its caller already
        return argv, env
    env = account.environment(env)
    return account.command(argv, reads=[home, classes], env=env, netns=confine.sandbox(), cgroup=cgroup), env


def _run(home: Path, classes: Path, plan: bytes) -> subprocess.CompletedProcess:
    try:
        if unprivileged.ensure() is None:
            argv, env = _command(home, classes)
            return subprocess.run(argv, input=plan, capture_output=True, env=env, cwd="/", timeout=TIMEOUT_S)
        # whatever the loader forked ends with it; a cgroup per check (two threads' checks apart)
        with confine.Cgroup.make(f"plan-check-{next(_checks)}").held() as cgroup:
            argv, env = _command(home, classes, cgroup)
            return subprocess.run(argv, input=plan, capture_output=True, env=env, cwd="/", timeout=TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired, confine.ConfineError) as e:
        raise TreeError(f"JMeter's loader could not check the plan: {e}") from None


def load(plan: bytes, progress=print) -> list[Element]:
    """The elements JMeter's loader builds from the plan's bytes (given on stdin: the lab's user need not be able to
    open the file), in the tree's order. LoaderRefused: the loader's own message; TreeError: it could not run."""
    key = hashlib.sha256(plan).hexdigest()
    if key in _seen:
        return _seen[key]
    try:
        home = jmeter.ensure_jmeter(progress=progress)
    except LabError as e:
        raise TreeError(f"the plan check loads the plan with JMeter's own loader, and JMeter could not be "
                        f"assembled: {e}") from None
    result = _run(home, ensure_inspector(home), plan)
    stderr = result.stderr.decode(errors="replace")
    if result.returncode == 3 and LOADER_FAILED in stderr:
        raise LoaderRefused(stderr.split(LOADER_FAILED, 1)[1].strip().splitlines()[0][:400])
    if result.returncode != 0:
        raise TreeError(f"JMeter's loader could not check the plan (exit {result.returncode}):\n  "
                        + "\n  ".join(stderr.strip().splitlines()[-10:]))
    elements: dict[int, Element] = {}
    for line in result.stdout.decode(errors="replace").splitlines():
        try:
            raw = json.loads(line)
            parent = elements.get(raw["parent"])
            element = Element(raw["id"], parent, raw["via"], raw["class"], raw["element"], raw["enabled"],
                              raw["name"] or "", {k: v or "" for k, v in raw["props"].items()})
        except (ValueError, KeyError, TypeError, AttributeError):
            raise TreeError(f"JMeter's loader printed what the check cannot read: {line[:200]!r}") from None
        if parent is not None:
            parent.children.append(element)
        elements[element.id] = element
    _seen[key] = list(elements.values())
    return _seen[key]
