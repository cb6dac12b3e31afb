"""JMeter itself: assembled from Maven Central (jmeter/pom.xml) into .lab/jmeter/home once per content of
that pom (a hash stamp), and the command line that starts it."""
from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

from lab import maven, paths
from lab.errors import LabError

JMETER_DIR = paths.ROOT / "jmeter"
PLAN = JMETER_DIR / "plan.jmx"
LAB_PROPERTIES = JMETER_DIR / "lab.properties"
POM = JMETER_DIR / "pom.xml"
HOME = paths.STATE_DIR / "jmeter" / "home"
STAMP_NAME = maven.STAMP_NAME               # in the home: the hash of the pom it was built from
LAUNCHER = "bin/ApacheJMeter.jar"
JVM_OPTIONS = ["-Xms256m", "-Xmx1g", "-XX:MaxMetaspaceSize=256m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=100",
               "-Djava.awt.headless=true"]

Progress = Callable[[str], None]            # where a line of progress goes (the terminal)


class LoadError(LabError):
    """JMeter could not be assembled or the load failed; the message says why and where to look."""

    def __init__(self, message: str, result=None) -> None:
        super().__init__(message)
        self.result = result            # the LoadResult of a load that ran, if one did


def pom_hash(pom: Path = POM) -> str:
    return maven.pom_hash(pom)


def ensure_jmeter(home: Path = HOME, pom: Path = POM, progress: Progress = print) -> Path:
    """The JMeter home for this pom, assembled from Maven Central when missing or built from another pom."""
    if not maven.is_built(home, pom, LAUNCHER):
        progress(f"load: assembling JMeter from Maven Central into {home} (jmeter/pom.xml changed or first use)")
    # JMeter's launcher warns when lib/junit is missing (a folder the distribution ships empty).
    return maven.assemble(pom, home, "lab.jmeter.home", LAUNCHER, LoadError,
                          finish=lambda building: (building / "lib" / "junit").mkdir(parents=True, exist_ok=True))


def jmeter_beside(progress: Progress = print) -> Future:
    """ensure_jmeter() on a thread of its own while the caller brings the machines up: a fresh clone's JMeter
    (~30 s of Maven) is then ready when the load begins instead of after the machines. The load's own
    ensure_jmeter() waits for it (one assembly of a home at a time) or, where it failed, tries again and says why."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="jmeter")
    try:
        return pool.submit(ensure_jmeter, progress=progress)
    finally:
        pool.shutdown(wait=False)


def jmeter_version(home: Path) -> str:
    """The version of the JMeter in this home (from its core jar's name)."""
    for jar in (home / "lib" / "ext").glob("ApacheJMeter_core-*.jar"):
        return jar.name[len("ApacheJMeter_core-"):-len(".jar")]
    raise LoadError(f"{home} holds no ApacheJMeter_core jar: not a JMeter home")


def jmeter_command(home: Path, *args: str, java: str = "java") -> list[str]:
    return [java, *JVM_OPTIONS, "-jar", str(home / "bin" / "ApacheJMeter.jar"), *args]
