"""The jars the lab builds on the host with the Maven wrapper when missing or older than their sources: the app jars
of the stacks a run uses (on a thread of their own while the machines come up) and the tuning kit (kit/README.md)."""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import yaml

from lab import machines, paths, shell
from lab.provision import knobs


class JarError(RuntimeError):
    """An app jar could not be built; the message says which and why."""


APP_DIR = paths.ROOT / "app"
KIT_DIR = paths.ROOT / "kit" / "core"
KIT_JAR = KIT_DIR / "target" / "lab-kit.jar"


STACKS = ("camel3", "camel4")


def _fresh(jar: Path, folders: list[Path], extra: list[Path]) -> bool:
    sources = [p for d in folders for p in d.rglob("*") if p.is_file() and "target" not in p.parts] + extra
    return jar.exists() and jar.stat().st_mtime >= max(p.stat().st_mtime for p in sources)


def ensure_kit(log=print) -> Path:
    """kit/core/target/lab-kit.jar, built when missing or older than its sources (~20 s)."""
    if _fresh(KIT_JAR, [KIT_DIR], []):
        return KIT_JAR
    log("building the tuning kit (Maven)")
    shell.run(["./mvnw", "-B", "-ntp", "-q", "-f", str(KIT_DIR / "pom.xml"), "package", "-DskipTests"],
              "building the tuning kit failed", error=JarError, lines=40, cwd=APP_DIR)
    if not KIT_JAR.exists():
        raise JarError(f"building the tuning kit: Maven succeeded but left no {KIT_JAR}")
    return KIT_JAR


def ensure_jar(stack: str, log=print) -> Path:
    """The app jar of a stack, built with the Maven wrapper when missing or older than its sources."""
    jar = APP_DIR / stack / "target" / f"camel-tuning-app-{stack}.jar"
    if _fresh(jar, [APP_DIR / "common", APP_DIR / stack], [APP_DIR / "pom.xml"]):
        return jar
    log(f"building the {stack} jar (Maven, ~1–2 min)")
    shell.run(["./mvnw", "-B", "-ntp", "-q", "package", "-DskipTests", "-pl", stack, "-am"],
              f"building the {stack} jar failed", error=JarError, lines=40, cwd=APP_DIR)
    if not jar.exists():
        raise JarError(f"building the {stack} jar: Maven succeeded but left no {jar}")
    return jar


def jars_beside(overrides: dict[str, dict], log=print, service_jar: Path | None = None) -> Future:
    """The jars of this run, built on a thread of their own while the caller brings the machines up (run(jars=...)
    waits for them): a cold run's base box build leaves a host core to Maven's 1-2 min. The tuning kit, which every
    service gets beside its jar, then the jars of this run's stacks, or a service's own (built by its owners)."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="jars")
    try:
        if service_jar is not None:
            return pool.submit(lambda: [ensure_kit(log), service_jar])
        stacks = sorted(stacks_in_use(overrides))
        return pool.submit(lambda: [ensure_kit(log)] + [ensure_jar(stack, log) for stack in stacks])
    finally:
        pool.shutdown(wait=False)


def stacks_in_use(overrides: dict[str, dict]) -> set[str]:
    """app_stack of each machine: catalog, then host_vars, then this run's overrides."""
    default = knobs.defaults()["app_stack"]
    used = set()
    for name in machines.NAMES:
        host_vars = paths.ANSIBLE_DIR / "host_vars" / f"{name}.yml"
        stack = default
        if host_vars.exists():
            stack = (yaml.safe_load(host_vars.read_text()) or {}).get("app_stack", default)
        used.add(overrides.get(name, {}).get("app_stack", stack))
    return {s for s in used if s in STACKS}
