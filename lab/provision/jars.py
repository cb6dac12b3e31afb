"""The app jars of the stacks a run uses, built on the host with the Maven wrapper when missing or older than
their sources; built on a thread of their own while the machines come up."""
from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import yaml

from lab import machines, paths, shell
from lab.provision import knobs


class JarError(RuntimeError):
    """An app jar could not be built; the message says which and why."""


APP_DIR = paths.ROOT / "app"


STACKS = ("camel3", "camel4")


def ensure_jar(stack: str, log=print) -> Path:
    """The app jar of a stack, built with the Maven wrapper when missing or older than its sources."""
    jar = APP_DIR / stack / "target" / f"camel-tuning-app-{stack}.jar"
    sources = [p for d in ("common", stack) for p in (APP_DIR / d).rglob("*")
               if p.is_file() and "target" not in p.parts] + [APP_DIR / "pom.xml"]
    newest = max(p.stat().st_mtime for p in sources)
    if jar.exists() and jar.stat().st_mtime >= newest:
        return jar
    log(f"building the {stack} jar (Maven, ~1–2 min)")
    shell.run(["./mvnw", "-B", "-ntp", "-q", "package", "-DskipTests", "-pl", stack, "-am"],
              f"building the {stack} jar failed", error=JarError, lines=40, cwd=APP_DIR)
    if not jar.exists():
        raise JarError(f"building the {stack} jar: Maven succeeded but left no {jar}")
    return jar


def jars_beside(overrides: dict[str, dict], log=print) -> Future:
    """The jars of this run's stacks, built on a thread of their own while the caller brings the machines up
    (run(jars=...) waits for them): a cold run's base box build leaves a host core to Maven's 1-2 min."""
    pool = ThreadPoolExecutor(1, thread_name_prefix="jars")
    try:
        return pool.submit(lambda: [ensure_jar(stack, log) for stack in sorted(stacks_in_use(overrides))])
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
