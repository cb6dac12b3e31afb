"""Cycle-time benchmark (issue 14; real machines, not a CI stage): how long from `./start.sh` to the first
request of the load, cold and warm, and how long teardown takes. Every measured run carries a tiny load (the
load is not what is measured); its run.json phases (lab/experiment/run.py) say where the time went.

  .venv/bin/python -m bench.cycle [--repeat 3] [--scenarios cold,warm,httpd,tomcat,jvm,logback,down]
                                  [--providers containers,libvirt]
  .venv/bin/python -m bench.cycle --table results/<stamp>-bench-cycle/cycle.json   # the table again

Each provider (the machines' kind, LAB_PROVIDER: docs/machines.md) runs the whole sequence in turn, the lab taken
down between them; the table has a block per provider.

Scenarios, in this order within each repetition:
  cold      nothing of the lab cached: lab down, the base box and the app jar removed (the host's Maven,
            pip and apt caches stay, the lab's package cache among them: as for a second clone on the same
            machine), then a run
  uncached  cold, and the lab's package cache removed too (/var/cache/camel-lab/apt, lab/machines/debcache.py):
            the image or box a host builds first (Maven's and pip's caches still stay; not in the default list)
  warm      a run with nothing changed since the last one (provisioning skipped by its fingerprint)
  httpd, tomcat, jvm, logback
            a run with one knob of that tier changed on tuned (KNOB_CHANGES: each step flips one knob
            between two harmless values; the others keep what the step before left)
  down      ./start.sh down after a run (timed here: down has no run folder)
  fresh     new machines from the cached box: ./start.sh down, then a run (what CI's e2e stage does; a
            warm or knob scenario that follows down is recorded as fresh, which it is)
  scenario  the whole default load (150 users, 150 s ramp-up, 20 min) after a warm start: its wall time from
            ./start.sh to the printed verdict (not in the default list: 25 min on containers, more on VMs)
The table: per scenario, n and min / median / max seconds to the load's start (its phase begins), the median to
JMeter's first requests (after the load's own start: the run's PCP archive, the profiler, JMeter's JVM), the phase
with the longest median (what limits it), and the host's own speed before its trials (a fixed pure-Python loop on
one core, best of three: this host is a VM among others, and the same box booted ~40 % slower in the evening
than in the afternoon; compare figures only where that column agrees). Results land in
results/<stamp>-bench-cycle/cycle.json, trial by trial; a trial that provisioned keeps its five slowest
Ansible tasks (from .lab/log/ansible.log, which is timed).
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from lab import paths
from lab.experiment import record
from lab.machines import containers, debcache

START = str(paths.ROOT / "start.sh")
TINY_LOAD = ["--users", "2", "--ramp-up", "1s", "--duration", "10s", "--warmup", "0"]
# a knob of each tier on tuned, and two values valid with the tuned set that change nothing a tuner measures
KNOB_CHANGES = {
    "httpd": ("httpd_start_servers", (2, 3)),
    "tomcat": ("tomcat_accept_count", (101, 100)),
    "jvm": ("jvm_exit_on_oom", (True, False)),
    "logback": ("logback_async_queue_size", (512, 500)),
}
SCENARIOS = ("cold", "fresh", "warm", *KNOB_CHANGES, "down")
LONG = ("scenario",)                 # judged by its whole wall time
BY_NAME = (*LONG, "uncached")        # asked for by name only
PROVIDERS = ("containers", "libvirt")
# what run.json's phases hold before the load starts (to_load_s is their sum, plus the gaps between them)
PHASES_TO_LOAD = ("up", "provision", "restart", "check")
CALIBRATION_LOOPS = 3_000_000


def host_calibration_s(loops: int = CALIBRATION_LOOPS) -> float:
    """Seconds this host takes for a fixed pure-Python loop on one core, the best of three (the least
    disturbed by whatever else runs: the machines of a warm lab idle, but not at zero)."""
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        total = 0
        for i in range(loops):
            total += i * i % 7
        best = min(best, time.perf_counter() - started)
    return round(best, 3)


def forget_caches(log=print, packages: bool = False) -> list[str]:
    """A cold start: the lab down, and the base boxes, container images and app jars it would otherwise reuse
    removed; packages: the lab's package cache too."""
    removed = []
    done = subprocess.run([START, "down"], capture_output=True, text=True, timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"./start.sh down failed before a cold run:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")
    for box in sorted(paths.BOX_DIR.glob("*.box")):
        box.unlink()
        removed.append(str(box.relative_to(paths.ROOT)))
    boxes = paths.VAGRANT_HOME / "boxes"       # the registered copy: without it Vagrant would not re-add the box
    if boxes.is_dir():
        shutil.rmtree(boxes)
        removed.append(str(boxes.relative_to(paths.ROOT)))
    if containers.DATA_ROOT.is_dir():      # the lab's Docker daemon's state: its image cache (down stopped it)
        shutil.rmtree(containers.DATA_ROOT)
        removed.append(str(containers.DATA_ROOT))
    if packages and debcache.CACHE_DIR.is_dir():
        shutil.rmtree(debcache.CACHE_DIR)
        removed.append(str(debcache.CACHE_DIR))
    for jar in sorted((paths.ROOT / "app").glob("*/target/*.jar")):
        jar.unlink()
        removed.append(str(jar.relative_to(paths.ROOT)))
    log(f"cold: removed {', '.join(removed) or 'nothing (already cold)'}")
    return removed


def timed_run(scenario: str, overrides: dict[str, object], log=print, provider: str = "auto") -> dict:
    """One ./start.sh with the tiny load (the scenario: the default load): its run folder's phases, or why there
    are none."""
    argv = [START, *([] if scenario == "scenario" else TINY_LOAD), "--label", f"cycle-{scenario}"]
    for knob, value in overrides.items():
        argv += ["--set", f"tuned:{knob}={json.dumps(value) if isinstance(value, bool) else value}"]
    calibration_s = host_calibration_s()
    before = set(paths.RESULTS.iterdir()) if paths.RESULTS.exists() else set()
    started, launched = time.monotonic(), time.time()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=4 * 3600, env=with_provider(provider))
    wall_s = round(time.monotonic() - started)
    made = sorted(p for p in set(paths.RESULTS.iterdir()) - before if p.is_dir() and not p.name.startswith(".")) \
        if paths.RESULTS.exists() else []
    # (a fresh results/ gets its index, .index/, with the first run: not the run)
    trial = {"scenario": scenario, "provider": provider, "argv": argv[1:], "exit": done.returncode, "wall_s": wall_s,
             "folder": made[-1].name if made else None, "phases": {}, "host_calibration_s": calibration_s}
    trial["steps"] = steps_taken(done.stdout)
    if made:    # what ./start.sh printed, beside the run it made: where a surprising figure came from
        (made[-1] / CONSOLE).write_text(f"{done.stdout}\n--- stderr\n{done.stderr}")
    if made and (made[-1] / "run.json").is_file():
        record = json.loads((made[-1] / "run.json").read_text())
        trial["phases"] = record.get("phases", {})
        if record.get("started") and "to_load_s" in trial["phases"]:
            # before the trial's folder: the options checked, the app's jar built (validation reads its facts)
            before_s = datetime.datetime.fromisoformat(record["started"]).timestamp() - launched
            trial["before_trial_s"] = round(before_s)
            trial["from_command_s"] = round(before_s + trial["phases"]["to_load_s"])
        test_start_ms = record.get("load", {}).get("test_start_ms")
        if test_start_ms:   # the load's own start (its PCP archive, the profiler, JMeter's JVM) is waited for too
            trial["to_requests_s"] = round(test_start_ms / 1000 - launched)
        trial["provisioned"] = record.get("provisioned")
        trial["status"] = record.get("status")
        ansible_log = paths.LOG_DIR / "ansible.log"
        if str(record.get("provisioned", "")).startswith("ran") and ansible_log.is_file():
            trial["slowest_tasks"] = slowest_tasks(ansible_log.read_text(errors="replace"))
    if done.returncode != 0:
        trial["error"] = (done.stderr.strip() or done.stdout.strip())[-500:]
    log(f"{scenario}: exit {done.returncode}, to load {trial.get('from_command_s')} s from the command "
        f"({trial.get('before_trial_s')} s before the trial, {trial['phases'].get('to_load_s')} s in it), "
        f"its requests from {trial.get('to_requests_s')} s, whole run {wall_s} s ({trial['folder']})")
    return trial


CONSOLE = "cycle-console.log"
STEP_DONE = re.compile(r"^\[[\d:]+\] ok (?P<step>.+) \((?P<s>\d+) s\)$", re.M)     # lab/steps.py's "ok <step> (N s)"


def steps_taken(console: str) -> dict[str, int]:
    """Seconds of each step ./start.sh finished (the base box, the boot, ...), from its console."""
    return {m.group("step"): int(m.group("s")) for m in STEP_DONE.finditer(console)}


STAMP = r"^\[\s*(?P<at>[\d.]+) s\]"       # lab/provision/playbook.py's timed log: "[  12.3 s] <Ansible's line>"
TASK_LINE = re.compile(STAMP + r" TASK \[(?P<task>.*?)\]")


def slowest_tasks(ansible_log: str, n: int = 5) -> list[tuple[str, float]]:
    """The provisioning tasks that took longest, from lab/provision/playbook.py's timed log (each task lasts until the
    next one starts; the last one until the log's last line)."""
    starts, last = [], 0.0
    for line in ansible_log.splitlines():
        stamp = re.match(STAMP, line)
        if stamp:
            last = float(stamp.group("at"))
        task = TASK_LINE.match(line)
        if task:
            starts.append((task.group("task"), float(task.group("at"))))
    spans = [(name, round((starts[i + 1][1] if i + 1 < len(starts) else last) - at, 1))
             for i, (name, at) in enumerate(starts)]
    return sorted(spans, key=lambda span: -span[1])[:n]


def with_provider(provider: str) -> dict:
    return {**os.environ, "LAB_PROVIDER": provider}


def timed_down(log=print, provider: str = "auto") -> dict:
    calibration_s = host_calibration_s()
    started = time.monotonic()
    done = subprocess.run([START, "down"], capture_output=True, text=True, timeout=1800, env=with_provider(provider))
    trial = {"scenario": "down", "provider": provider, "exit": done.returncode,
             "wall_s": round(time.monotonic() - started), "phases": {}, "host_calibration_s": calibration_s}
    log(f"down: exit {done.returncode} in {trial['wall_s']} s")
    return trial


def seconds_of(trial: dict) -> int | None:
    """The figure a scenario is judged by: from the command to the load's start (the options checked, the app's jar
    built, the machines made and provisioned; a trial recorded before from_command_s: from the trial's start), or
    the whole wall time of down and of the scenario."""
    if trial["exit"] != 0:
        return None
    if trial["scenario"] in ("down", *LONG):
        return trial["wall_s"]
    return trial.get("from_command_s", trial["phases"].get("to_load_s"))


def table(trials: list[dict]) -> str:
    """Per provider and scenario: min / median / max (failed trials counted apart), the median from the command
    to JMeter's first requests (the load's own start added: trials recorded before it say –), the phase with the
    longest median and the host's calibration (median s)."""
    lines = ["| provider | scenario | n | min s | median s | max s | first requests, median s | "
             "longest phase (median s) | failed | host calibration s |", "|---|---|---|---|---|---|---|---|---|---|"]
    for provider, scenario in [(p, s) for p in dict.fromkeys(t.get("provider", "auto") for t in trials)
                               for s in (*SCENARIOS, *BY_NAME)]:
        mine = [t for t in trials if t["scenario"] == scenario and t.get("provider", "auto") == provider]
        if not mine:
            continue
        figures = [s for s in map(seconds_of, mine) if s is not None]
        phase_medians = {p: statistics.median(t["phases"][f"{p}_s"] for t in mine if f"{p}_s" in t["phases"])
                         for p in PHASES_TO_LOAD if any(f"{p}_s" in t["phases"] for t in mine)}
        longest = max(phase_medians, key=phase_medians.get) if phase_medians else None
        cells = ([len(figures), min(figures), round(statistics.median(figures)), max(figures)] if figures
                 else [0, "–", "–", "–"])
        speeds = [t["host_calibration_s"] for t in mine if t.get("host_calibration_s")]
        requests = [t["to_requests_s"] for t in mine if t["exit"] == 0 and t.get("to_requests_s") is not None]
        lines.append("| " + " | ".join(str(c) for c in [provider, scenario, *cells,
                     round(statistics.median(requests)) if requests else "–",
                     f"{longest} ({phase_medians[longest]:g})" if longest else "–",
                     len(mine) - len(figures), f"{statistics.median(speeds):.2f}" if speeds else "–"]) + " |")
    return "\n".join(lines)


def execute(repeat: int, scenarios: list[str], log=print, providers: tuple[str, ...] = ("auto",)) -> Path:
    out = paths.RESULTS / record.new_run_id("bench-cycle")
    out.mkdir(parents=True)
    trials: list[dict] = []

    def keep(trial):
        trials.append(trial)
        (out / "cycle.json").write_text(json.dumps({"repeat": repeat, "scenarios": scenarios, "providers": providers,
                                                    "tiny_load": TINY_LOAD, "trials": trials}, indent=2))
    for provider in providers:
        if len(providers) > 1:      # one kind's lab is taken down before the other's comes up
            subprocess.run([START, "down"], capture_output=True, text=True, timeout=1800, env=with_provider("auto"))
        overrides: dict[str, object] = {}
        gone = False                        # the machines were destroyed by the step before
        turns = dict.fromkeys(KNOB_CHANGES, 0)  # each knob step flips its knob, also when it is listed twice
        for r in range(repeat):
            log(f"== {provider}: repetition {r + 1} of {repeat}")
            for scenario in scenarios:
                if scenario in ("cold", "uncached"):
                    forget_caches(log, packages=scenario == "uncached")
                    keep({**timed_run(scenario, overrides, log, provider), "removed_caches": True})
                elif scenario == "down":
                    keep(timed_down(log, provider))
                else:
                    if scenario == "fresh" and not gone:
                        keep(timed_down(log, provider))
                    if scenario in KNOB_CHANGES:
                        knob, values = KNOB_CHANGES[scenario]
                        overrides = {**overrides, knob: values[turns[scenario] % 2]}
                        turns[scenario] += 1
                    if gone and scenario != "fresh":
                        log(f"{scenario}: the machines were just destroyed, so this run is recorded as fresh")
                    keep(timed_run("fresh" if gone or scenario == "fresh" else scenario, overrides, log, provider))
                gone = scenario == "down"
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.cycle", description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="repetitions of the whole sequence (default 3)")
    ap.add_argument("--scenarios", default=",".join(SCENARIOS), help=f"comma-separated, of: {', '.join(SCENARIOS)}")
    ap.add_argument("--providers", default="auto",
                    help=f"machine kinds, comma-separated, each in turn (of: auto, {', '.join(PROVIDERS)})")
    ap.add_argument("--table", type=Path, metavar="CYCLE_JSON", help="print the table of an earlier benchmark")
    args = ap.parse_args(argv)
    if args.table:
        print(table(json.loads(args.table.read_text())["trials"]))
        return 0
    chosen = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = [s for s in chosen if s not in (*SCENARIOS, *BY_NAME)]
    kinds = tuple(p.strip() for p in args.providers.split(",") if p.strip())
    if not kinds or set(kinds) - {"auto", *PROVIDERS}:
        ap.error(f"--providers: of auto, {', '.join(PROVIDERS)}")
    if unknown or not chosen or args.repeat < 1:
        ap.error(f"unknown scenario {', '.join(unknown)} (scenarios: {', '.join((*SCENARIOS, *BY_NAME))})" if unknown
                 else "--repeat must be at least 1 and --scenarios name at least one")
    out = execute(args.repeat, chosen, providers=kinds)
    trials = json.loads((out / "cycle.json").read_text())["trials"]
    print(f"\nCycle benchmark ({out.name}), {args.repeat} repetition(s), load {' '.join(TINY_LOAD)}:\n")
    print(table(trials))
    return 0


if __name__ == "__main__":
    sys.exit(main())
