"""The jars the lab builds on the host with the Maven wrapper when missing or older than their sources: the tuning kit
(kit/README.md; on a thread of its own while the machines come up) and a service's builds its descriptor's `build:`
names (the sample app's stacks: app/camel3, app/camel4), the latter as the lab's user (lab/unprivileged.py): a
build runs the project's plugins."""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
import xml.etree.ElementTree as ET
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from lab import confine, machines, maven, paths, shell, unprivileged
from lab.errors import LabError
from lab.machines import build_netns
from lab.provision import catalog, profiler


class BuildError(LabError):
    """An app jar could not be built; the message says which and why."""


APP_DIR = paths.ROOT / "app"
KIT_DIR = paths.ROOT / "kit" / "core"
KIT_JAR = KIT_DIR / "target" / "lab-kit.jar"
_BUILDING = threading.Lock()


def _fresh(jar: Path, folders: list[Path], extra: list[Path]) -> bool:
    sources = [p for d in folders for p in d.rglob("*") if p.is_file() and "target" not in p.parts] + extra
    return jar.exists() and jar.stat().st_mtime >= max(p.stat().st_mtime for p in sources)


def ensure_kit(log=print) -> Path:
    """kit/core/target/lab-kit.jar, built when missing or older than its sources (~20 s)."""
    if _fresh(KIT_JAR, [KIT_DIR], []):
        return KIT_JAR
    log("building the tuning kit (Maven)")
    shell.run(["./mvnw", "-B", "-ntp", "-q", "-f", str(KIT_DIR / "pom.xml"), "package", "-DskipTests"],
              "building the tuning kit failed", error=BuildError, lines=40, cwd=APP_DIR, env=maven.environment())
    if not KIT_JAR.exists():
        raise BuildError(f"building the tuning kit: Maven succeeded but left no {KIT_JAR}")
    return KIT_JAR


def ensure_build(project: Path, stack: str, jar: Path, log=print, within: Path | None = None) -> Path:
    """A build of a service's Maven project (its module `stack`), made with its Maven wrapper or the lab's (maven_for)
    when missing or older than the sources of the project and of the modules it names outside itself: a
    descriptor's `build:` (service.py), whose modules stay `within` its root:. One Maven at a time: two writing
    one jar leave it broken."""
    with _BUILDING:
        folders = reactor(project, within or project)
        if _fresh(jar, folders, []):
            return jar
        return _build(project, folders[1:], stack, jar, log)


def reactor(project: Path, within: Path) -> list[Path]:
    """The project's folder, then each module folder outside it that its poms name (followed through those modules'
    own poms: the sample app's ../kit/core), every one inside `within` (the descriptor's root:): the build reads
    them, and as root the lab copies them for the lab's user. BuildError naming the pom otherwise."""
    project, within = project.resolve(), within.resolve()
    folders, todo, read = [project], [project], {project}
    while todo:
        pom = todo.pop() / "pom.xml"
        try:
            named = [m.text.strip() for m in ET.parse(pom).iter() if m.tag.rsplit("}", 1)[-1] == "module" and m.text]
        except (OSError, ET.ParseError) as e:
            raise BuildError(f"{pom}: cannot be read as a Maven pom ({e})") from None
        for module in named:
            folder = (pom.parent / module).resolve()
            if not folder.is_relative_to(within):
                raise BuildError(f"{pom}: module {module} is {folder}, outside {within}: a build's modules stay in the "
                                 "folder the descriptor's root: names")
            if folder in read or not (folder / "pom.xml").is_file():
                continue        # Maven names a missing module itself
            read.add(folder)
            todo.append(folder)
            if not any(folder.is_relative_to(f) for f in folders):
                folders.append(folder)
    return folders


def maven_for(project: Path) -> Path:
    """The project's own Maven wrapper, else the lab's (app/mvnw): never a folder above the project's, which is not
    the customer's to choose and would run as root whatever it holds."""
    own = project / "mvnw"
    return own if own.is_file() else maven.MAVEN_WRAPPER


def _build(project: Path, outside: list[Path], stack: str, jar: Path, log) -> Path:
    mvnw = maven_for(project)
    log(f"building {jar.name} (Maven, {project.name} module {stack}, ~1–2 min)")
    account = unprivileged.ensure()
    if account is None:         # the lab is not root: Maven runs as the lab does, in the project
        shell.run([str(mvnw), *_package(project, stack)], f"building {jar.name} failed", error=BuildError, lines=40,
                  cwd=project, env=maven.environment())
    else:
        _build_as(account, project, outside, mvnw, stack, jar)
    if not jar.exists():
        raise BuildError(f"building {jar.name}: Maven succeeded but left no {jar}")
    return jar


def _package(project: Path, stack: str) -> list[str]:
    return ["-B", "-ntp", "-q", "-f", str(project / "pom.xml"), "package", "-DskipTests", "-pl", stack, "-am"]


def _build_as(account: unprivileged.Account, project: Path, outside: list[Path], mvnw: Path, stack: str,
              jar: Path) -> None:
    """A project's build runs its plugins, a customer's code: as the lab's user, on a copy in a folder of that user's
    home of the project and of the modules it names outside itself, where they stand to each other (the originals
    are only read), with the user's own Maven repository. Not chained to root's (maven.repo.local.tail): behind
    /root (0700) the user reads it only by CAP_DAC_READ_SEARCH, which javac's access(2) checks ignore ("cannot
    access org.apache.catalina …/root/.m2/…", a new host's camel4 build). The jar is copied back where the
    descriptor names it."""
    project = project.resolve()
    if not jar.resolve().is_relative_to(project):
        raise BuildError(f"building {jar.name}: {jar} is not inside the project {project} that builds it")
    repository = account.home / ".m2" / "repository"
    base = Path(os.path.commonpath([project, *outside])).parent     # each copied under its own name
    with tempfile.TemporaryDirectory(dir=account.home, prefix="build-") as scratch:
        for folder in (project, *outside):
            shutil.copytree(folder, Path(scratch) / folder.relative_to(base), symlinks=True,
                            ignore=shutil.ignore_patterns("target"))
        copy = Path(scratch) / project.relative_to(base)
        for folder, dirs, files in os.walk(scratch):
            account.give(Path(folder), *(Path(folder) / name for name in dirs + files))
        wrapper = copy / "mvnw" if mvnw == project / "mvnw" else mvnw
        argv = [str(wrapper), *_package(copy, stack), f"-Dmaven.repo.local={repository}"]
        # its own environment alone (Maven's options among it), in a cgroup whose every process ends with the build,
        # in a network namespace of its own that reaches Maven Central and nothing of the host's
        with confine.Cgroup.make("build").held() as cgroup, build_netns.for_a_build() as (network, resolv):
            shell.run(account.command(argv, [wrapper, Path(scratch)], env=maven.environment(account.environment()),
                                      cgroup=cgroup, netns=network, binds={Path("/etc/resolv.conf"): resolv}),
                      f"building {jar.name} failed", error=BuildError, lines=40, cwd=copy)
        # what the build made is the user's: read back without following links
        unprivileged.take_back(Path(scratch), copy.relative_to(scratch) / jar.resolve().relative_to(project), jar)
        _kit_from(Path(scratch), base, (project, *outside))


def _kit_from(scratch: Path, base: Path, folders: tuple[Path, ...]) -> None:
    """The tuning kit, where the reactor just built it (the sample app's names ../kit/core), copied back too: else
    ensure_kit ran a second Maven on the same sources beside the root file system (11 CPU-seconds, 2026-12-03)."""
    kit = KIT_DIR.resolve()
    if kit in folders:
        unprivileged.take_back(scratch, kit.relative_to(base) / KIT_JAR.relative_to(KIT_DIR), KIT_JAR)


def host_files(log=print) -> list[Path]:
    """What the machines get from the host beside the service's jar: the tuning kit, built, and async-profiler's
    agent, fetched. (A service's own builds are made when its descriptor's facts are first read:
    service.Service.facts_of.)"""
    return [ensure_kit(log), profiler.ensure(log=log) / profiler.LIBRARY]


def jars_beside(log=print) -> Future:
    """host_files() made on a thread of its own while the caller brings the machines up (playbook.run(jars=...)
    waits for it): a cold run's base box build leaves a host core to Maven, and the agent's fetch no longer waits
    for `up` (4 s of a cold start on containers)."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="jars")
    try:
        return pool.submit(host_files, log)
    finally:
        pool.shutdown(wait=False)


def stacks_in_use(overrides: dict[str, dict]) -> set[str]:
    """app_stack of each machine: this run's overrides, which carry each machine's whole configuration where it is not
    the catalog's (lab/experiment/design.py machine_overrides), else the catalog's."""
    default = catalog.defaults()["app_stack"]
    return {overrides.get(name, {}).get("app_stack", default) for name in machines.NAMES}
