"""Fault benchmark on the real machines (not a CI stage: ~10 min per fault under emulation): short runs of
`./start.sh`, each with one fault injected at its moment, then what the run folder and the report said, and
whether the next run recovered without manual cleanup (each run is the recovery check of the one before).

  .venv/bin/python -m bench.faults [--faults kill-jvm,power-off,…] [--duration 2m] [--users 10]

Faults (all on the machine `tuned`, or the whole run):
  kill-jvm             SIGKILL to the app's JVM once the load runs (systemd restarts it)
  power-off            `virsh destroy` of the machine once the load runs (the liveness watch, collection)
  interrupt-provision  Ctrl-C (SIGINT to start.sh's process group) while Ansible provisions (--provision)
  interrupt-load       Ctrl-C once the load runs
  interrupt-collect    Ctrl-C when collection starts, and again when the report starts
Prints a table: fault, run folder, exit status, run.json status / stopped_at, what the summary's top says.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from lab import paths
from lab.machines import netns, reach, vagrant

START = str(paths.ROOT / "start.sh")
LOAD_RUNS = re.compile(r"^\[\d+:\d\d\]    load: ")    # a progress line of the load
PROVISIONING = re.compile(r"^    TASK \[")                  # Ansible at work
COLLECTING = re.compile(r"^\[\d+:\d\d\] >> collect logs")
REPORTING = re.compile(r"^\[\d+:\d\d\] >> report")
MACHINE = "tuned"
SETTLE_S = 40                               # into the load before the fault (past the first requests)


def _kill_jvm(_proc) -> str:
    done = subprocess.run(reach.ssh_command(MACHINE, "sudo systemctl kill -s KILL camel-app"),
                          capture_output=True, text=True, timeout=120)
    return f"systemctl kill -s KILL camel-app on {MACHINE}: exit {done.returncode}"


def _power_off(_proc) -> str:
    done = netns.virsh("destroy", vagrant.DOMAIN_PREFIX + MACHINE)
    return f"virsh destroy {vagrant.DOMAIN_PREFIX}{MACHINE}: exit {done.returncode}"


def _ctrl_c(proc) -> str:
    os.killpg(proc.pid, signal.SIGINT)
    return "SIGINT to start.sh's process group"


# fault: (extra start.sh options, [(line that triggers, seconds after it, action)])
# fault: (extra start.sh options, [(line that triggers, seconds after it, action)]); in this order each run is
# also the recovery check of the one before (a full provisioning after the interrupted one, a boot after the
# power-off at the end: the first run of whatever comes next)
FAULTS = {
    "interrupt-provision": (["--provision"], [(PROVISIONING, 20, _ctrl_c)]),
    "interrupt-load": ([], [(LOAD_RUNS, SETTLE_S, _ctrl_c)]),
    "interrupt-collect": ([], [(COLLECTING, 5, _ctrl_c), (REPORTING, 1, _ctrl_c)]),
    "kill-jvm": ([], [(LOAD_RUNS, SETTLE_S, _kill_jvm)]),
    "power-off": ([], [(LOAD_RUNS, SETTLE_S, _power_off)]),
}


def run_with_fault(name: str, duration: str, users: int, log) -> dict:
    extra, triggers = FAULTS[name]
    argv = [START, "--users", str(users), "--ramp-up", "20s", "--duration", duration, "--label", f"fault-{name}",
            *extra]
    started = time.time()
    # its own process group, which gets the SIGINT of a Ctrl-C, as a terminal's foreground group does
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    pending, done_actions, run_dir = list(triggers), [], None
    for line in proc.stdout:
        sys.stdout.write(f"  | {line}")
        if line.startswith("run ") and "results in " in line:
            run_dir = Path(line.split("results in ", 1)[1].strip())
        if pending and pending[0][0].search(line):
            _, delay, action = pending.pop(0)

            def fire(action=action, delay=delay):
                time.sleep(delay)
                if proc.poll() is None:
                    done_actions.append(action(proc))
                    log(f"fault {name}: {done_actions[-1]}")
            threading.Thread(target=fire, daemon=True).start()
    code = proc.wait()
    record = json.loads((run_dir / "run.json").read_text()) if run_dir and (run_dir / "run.json").exists() else {}
    summary = (run_dir / "summary.md").read_text() if run_dir and (run_dir / "summary.md").exists() else ""
    top = [ln for ln in summary.split("\n## ", 1)[0].splitlines() if ln.startswith(">")]
    ended = [ln for ln in summary.splitlines() if " ended — " in ln]
    return {"fault": name, "run": run_dir.name if run_dir else None, "exit": code,
            "minutes": round((time.time() - started) / 60, 1),
            "status": record.get("status"), "stopped_at": record.get("stopped_at"), "phase": record.get("phase"),
            "finish_errors": record.get("finish_errors"), "collect_errors": record.get("collect_errors"),
            "liveness": {m: {k: v for k, v in s.items() if k in ("dead_at", "back_at", "failed")}
                         for m, s in (record.get("liveness") or {}).items()},
            "report": bool(run_dir and (run_dir / "report.html").exists()), "actions": done_actions,
            "summary_top": top, "ended": ended[:4]}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.faults", description=__doc__.splitlines()[0])
    parser.add_argument("--faults", default=",".join(FAULTS), help=f"comma-separated, of: {', '.join(FAULTS)}")
    parser.add_argument("--duration", default="2m")
    parser.add_argument("--users", type=int, default=10)
    args = parser.parse_args(argv)
    chosen = [f.strip() for f in args.faults.split(",") if f.strip()]
    unknown = [f for f in chosen if f not in FAULTS]
    if unknown:
        parser.error(f"unknown fault(s): {', '.join(unknown)} (known: {', '.join(FAULTS)})")
    results = []
    for name in chosen:
        print(f"\n==== fault {name}", flush=True)
        results.append(run_with_fault(name, args.duration, args.users, log=lambda m: print(m, flush=True)))
        print(json.dumps(results[-1], indent=2), flush=True)
    print("\n| fault | run folder | exit | status | stopped at | report | minutes |\n"
          "| --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(f"| {r['fault']} | {r['run']} | {r['exit']} | {r['status']} | {r['stopped_at']} | "
              f"{'yes' if r['report'] else 'no'} | {r['minutes']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
