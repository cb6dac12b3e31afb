"""A folder assembled from Maven Central by a pom (JMeter's home, async-profiler), once per content of that
pom: the pom's hash is stamped in the folder, and a folder stamped by another pom is assembled again; and one
artifact by its coordinates (a service's jar: artifact())."""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import shutil
from collections.abc import Callable
from pathlib import Path

from lab import paths, shell

MAVEN_WRAPPER = paths.ROOT / "app" / "mvnw"  # Maven 3.9 from the app's wrapper; needs only Java
STAMP_NAME = ".lab-pom.sha256"              # in the folder: the hash of the pom it was built from
# Maven's own JVM for a short build: C1 only and one GC thread. Its C2 compiler doubled a build's CPU (the sample
# app: 28-30 s of CPU, 12-14 with these; 2026-12-03), and on a cold start the builds share the host's cores with
# the machines' root file system. The output is the same; the user's own MAVEN_OPTS come after these and win.
JVM_OPTIONS = "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"


def environment(base: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a Maven the lab runs: `base` (the lab's own by default) with JVM_OPTIONS in MAVEN_OPTS."""
    base = dict(os.environ if base is None else base)
    return {**base, "MAVEN_OPTS": f"{JVM_OPTIONS} {base.get('MAVEN_OPTS', '')}".strip()}


def pom_hash(pom: Path) -> str:
    return hashlib.sha256(pom.read_bytes()).hexdigest()


def is_built(home: Path, pom: Path, marker: str) -> bool:
    """home was assembled from this pom and holds marker (a file the assembly must leave)."""
    try:
        return (home / STAMP_NAME).read_text().strip() == pom_hash(pom) and (home / marker).is_file()
    except OSError:
        return False


def assemble(pom: Path, home: Path, home_property: str, marker: str, error: type[Exception],
             finish: Callable[[Path], None] = lambda building: None) -> Path:
    """Runs `mvn package -D<home_property>=<a fresh folder>` on pom, then finish(folder), checks marker is
    there, stamps it and moves it to home (a half-built folder never becomes home). Returns home."""
    # one assembly of a folder at a time, across threads and processes (a run assembles JMeter beside the boot while
    # its load may ask for it; test workers share a checkout): a second one would remove the first's half-built
    # folder, or replace the home under a JMeter starting from it. flock: each open() is its own lock holder.
    home.parent.mkdir(parents=True, exist_ok=True)
    with open(home.parent / f"{home.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        return _assemble(pom, home, home_property, marker, error, finish)


def _assemble(pom: Path, home: Path, home_property: str, marker: str, error: type[Exception],
              finish: Callable[[Path], None]) -> Path:
    if is_built(home, pom, marker):
        return home
    maven = [str(MAVEN_WRAPPER)] if MAVEN_WRAPPER.exists() else ["mvn"]
    home.parent.mkdir(parents=True, exist_ok=True)
    for stale in home.parent.glob(f"{home.name}.building-*"):    # left by an interrupted build
        shutil.rmtree(stale, ignore_errors=True)
    building = home.with_name(f"{home.name}.building-{os.getpid()}")
    what = f"assembling {pom.relative_to(paths.ROOT) if pom.is_relative_to(paths.ROOT) else pom} with Maven"
    try:
        shell.run([*maven, "-B", "-ntp", "-q", "-f", str(pom), "package", f"-D{home_property}={building}"],
                  f"{what} failed", error=error, cwd=pom.parent, env=environment())
        finish(building)
        if not (building / marker).is_file():
            raise error(f"{what} failed: no {marker} in {building}")
    except BaseException:
        shutil.rmtree(building, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(pom.parent / "target", ignore_errors=True)   # Maven's empty build dir, nothing in it
    (building / STAMP_NAME).write_text(pom_hash(pom) + "\n")
    shutil.rmtree(home, ignore_errors=True)
    building.rename(home)
    return home


COORDINATES = re.compile(r"(?P<group>[\w.-]+):(?P<artifact>[\w.-]+):(?P<version>[\w.+-]+)(?::(?P<classifier>[\w.-]+))?")


def artifact(coordinates: str, folder: Path, error: type[Exception]) -> Path:
    """group:artifact:version[:classifier] (a jar) resolved from Maven Central (through ~/.m2) into folder, once;
    error naming the coordinates when they are malformed or Maven cannot resolve them."""
    found = COORDINATES.fullmatch(coordinates.strip())
    if not found:
        raise error(f"{coordinates!r}: Maven coordinates are group:artifact:version[:classifier]")
    g, a, v, c = found["group"], found["artifact"], found["version"], found["classifier"]
    jar = folder / f"{a}-{v}{'-' + c if c else ''}.jar"
    if jar.is_file():
        return jar
    folder.mkdir(parents=True, exist_ok=True)
    maven = [str(MAVEN_WRAPPER)] if MAVEN_WRAPPER.exists() else ["mvn"]
    # the dependency plugin of jmeter/pom.xml's version (in ~/.m2 already)
    shell.run([*maven, "-B", "-ntp", "-q", "org.apache.maven.plugins:maven-dependency-plugin:3.6.1:copy",
               f"-Dartifact={g}:{a}:{v}:jar{':' + c if c else ''}", f"-DoutputDirectory={folder}"],
              f"resolving {coordinates} from Maven Central failed", error=error, cwd=folder, env=environment())
    if not jar.is_file():
        raise error(f"resolving {coordinates}: Maven succeeded but left no {jar}")
    return jar
