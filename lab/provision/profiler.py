"""async-profiler for the machines' JVMs: fetched from Maven Central (profiler/pom.xml) into .lab/profiler/
once per content of that pom, its agent library unpacked for Ansible to copy to the machines (the app role),
and each machine's recording (profile/profile.jfr, pulled by collect) turned into collapsed stacks per event
(cpu.collapsed, alloc.collapsed, lock.collapsed) for the report's flame graphs."""
from __future__ import annotations

import datetime
import json
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

from lab import maven, paths
from lab.errors import LabError

POM = paths.ROOT / "profiler" / "pom.xml"
HOME = paths.STATE_DIR / "profiler" / "home"
LIBRARY = "libasyncProfiler.so"             # in HOME: what the app role copies (app_profiler_library)
CONVERTER = "jfr-converter.jar"
# the converter's option for each event the machines record (knob jvm_profile_events)
EVENTS = {"cpu": "--cpu", "alloc": "--alloc", "lock": "--lock"}
CONVERT_TIMEOUT_S = 300


class ProfilerError(LabError):
    """async-profiler could not be fetched or a recording not converted; the message says why."""


def _unpack_library(building: Path) -> None:
    with zipfile.ZipFile(building / "async-profiler-linux-x64.jar") as jar:
        (building / LIBRARY).write_bytes(jar.read(f"linux-x64/{LIBRARY}"))


def ensure(home: Path = HOME, pom: Path = POM, log=print) -> Path:
    """The folder holding the agent library and the converter, fetched when missing or from another pom."""
    if not maven.is_built(home, pom, LIBRARY):
        log(f"fetching async-profiler from Maven Central into {home}")
    return maven.assemble(pom, home, "lab.profiler.home", LIBRARY, ProfilerError, finish=_unpack_library)


def _utc(epoch_ms):
    return None if epoch_ms is None else datetime.datetime.fromtimestamp(
        epoch_ms / 1000, datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def recorded_settings(recording: Path) -> dict:
    """The agent's version and the engine it really sampled CPU with (perf events, or a CPU timer "ctimer"
    where the guest has no perf events), from the recording's jdk.ActiveSetting events (the JDK's jfr tool);
    {} without that tool."""
    jfr = shutil.which("jfr")
    if jfr is None:
        return {}
    try:
        done = subprocess.run([jfr, "print", "--events", "jdk.ActiveSetting", str(recording)], capture_output=True,
                              text=True, timeout=CONVERT_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired):
        return {}
    pairs = dict(re.findall(r'name = "(version|engine)"\s+value = "([^"]*)"', done.stdout))
    return {key: pairs[key] for key in ("version", "engine") if key in pairs}


def _why(output: str) -> str:
    """The converter's reason from its output: the exception's message ('Incomplete JFR file'), not the trace."""
    found = re.search(r"[\w.$]*(?:Exception|Error): (.+)$", output, re.MULTILINE)
    lines = output.strip().splitlines()
    return found.group(1).strip() if found else (lines[-1][-300:] if lines else "no output")


def convert(profile_dir: Path, home: Path = HOME, java: str = "java",
            window: tuple[int, int | None] | None = None) -> dict[str, str]:
    """profile_dir/profile.jfr → <event>.collapsed for each event profile.json says was recorded, only the
    samples in window ((from, to) epoch ms; to None: the end); returns {event: None or why it could not be
    converted}, also written into profile.json ("converted", and "window" in UTC)."""
    recording, info_path = profile_dir / "profile.jfr", profile_dir / "profile.json"
    try:
        info = json.loads(info_path.read_text())
    except (OSError, ValueError):
        info = {}
    outcome: dict[str, str | None] = {}
    if not recording.is_file() or recording.stat().st_size == 0:
        return outcome
    cut = []
    if window is not None:
        cut = ["--from", str(int(window[0]))] + (["--to", str(int(window[1]))] if window[1] else [])
        info["window"] = [_utc(ms) for ms in window]
    for event in info.get("events") or list(EVENTS):
        if event not in EVENTS:
            continue
        out = profile_dir / f"{event}.collapsed"
        try:
            done = subprocess.run([java, "-jar", str(home / CONVERTER), "-o", "collapsed", EVENTS[event], *cut,
                                   str(recording), str(out)], capture_output=True, text=True,
                                  timeout=CONVERT_TIMEOUT_S)
            outcome[event] = None if done.returncode == 0 else _why(done.stderr or done.stdout)
        except (OSError, subprocess.TimeoutExpired) as failure:
            outcome[event] = str(failure)
    info["converted"] = outcome
    info.update(recorded_settings(recording))
    info_path.write_text(json.dumps(info, indent=2) + "\n")
    return outcome
