"""JMeter itself: assembled from Maven Central (jmeter/pom.xml) into .lab/jmeter/home once per content of
that pom (a hash stamp), and the command line that starts it."""
from __future__ import annotations

import hashlib
import os
import shutil
from pathlib import Path
from typing import Callable

from lab import paths, shell

JMETER_DIR = paths.ROOT / "jmeter"
PLAN = JMETER_DIR / "plan.jmx"
LAB_PROPERTIES = JMETER_DIR / "lab.properties"
POM = JMETER_DIR / "pom.xml"
HOME = paths.STATE_DIR / "jmeter" / "home"
STAMP_NAME = ".lab-pom.sha256"              # in the home: the hash of the pom it was built from
MAVEN_WRAPPER = paths.ROOT / "app" / "mvnw"  # Maven 3.9 from the app's wrapper; needs only Java
JVM_OPTIONS = ["-Xms256m", "-Xmx1g", "-XX:MaxMetaspaceSize=256m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=100",
               "-Djava.awt.headless=true"]

Progress = Callable[[str], None]            # where a line of progress goes (the terminal)


class LoadError(RuntimeError):
    """JMeter could not be assembled or the load failed; the message says why and where to look."""

    def __init__(self, message: str, result=None) -> None:
        super().__init__(message)
        self.result = result            # the LoadResult of a load that ran, if one did


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
        shell.run(cmd, "assembling JMeter with Maven failed", error=LoadError, cwd=pom.parent)
        if not (building / "bin" / "ApacheJMeter.jar").is_file():
            raise LoadError(f"assembling JMeter with Maven failed: no bin/ApacheJMeter.jar in {building}")
    except LoadError:
        shutil.rmtree(building, ignore_errors=True)
        raise
    finally:
        shutil.rmtree(pom.parent / "target", ignore_errors=True)   # Maven's empty build dir, nothing in it
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
