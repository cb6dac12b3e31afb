"""Fault benchmark on the real machines (not a CI stage: ~10 min per fault under emulation): short runs of
`./start.sh`, each with one fault injected at its moment, then what the run folder and the report said, and
whether the next run recovered without manual cleanup (each run is the recovery check of the one before).

  .venv/bin/python -m bench.faults [--faults kill-jvm,power-off,…] [--duration 2m] [--users 10]

Faults (all on the machine `tuned`, or the whole run):
  kill-jvm             SIGKILL to the app's JVM once the load runs (systemd restarts it)
  power-off            `virsh destroy` of the machine (containers: `docker kill`) once the load runs (the liveness
                       watch, collection)
  interrupt-provision  Ctrl-C (SIGINT to start.sh's process group) while Ansible provisions (--provision)
  interrupt-load       Ctrl-C once the load runs
  interrupt-collect    Ctrl-C when collection starts, and again when the report starts
  second-start         an impatient user, once the load runs: a second ./start.sh and ./start.sh down (the lock)
  backend-outage       the mock backend on tuned stopped for OUTAGE_S, then started again
  network-cut          every link of tuned set down (virsh domif-setlink; containers: the lab namespace's end of each
                       veth pair) for OUTAGE_S, then up again
  recorder-killed      SIGKILL to tuned's PCP recorder (lab-pmlogger) and pmcd once the load runs
  memory-hog           a process on tuned that grows until the kernel's OOM killer acts
  disk-full            the results' disk fills once the load runs: results/ is a small tmpfs for that run (mounted
                       over the real folder, which the run cannot see meanwhile; the run folder is moved onto the
                       real disk and the tmpfs unmounted after it, whatever happens)
Prints a table: fault, run folder, exit status, run.json status / stopped_at, what the summary's top says.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from lab import paths
from lab.experiment import disk
from lab.machines import containers, netns, reach, vagrant

START = str(paths.ROOT / "start.sh")
# a progress line of the load (lab/experiment/load/runner.py), not any "load:" line: JMeter is assembled beside the
# boot, and a fault timed from that line fired during provisioning or the load's first seconds
LOAD_RUNS = re.compile(r"^\[[\d:]+\]    load: .+ [\d:]+ elapsed, ")
PROVISIONING = re.compile(r"^    TASK \[")                  # Ansible at work
COLLECTING = re.compile(r"^\[\d+:\d\d\] >> collect logs")
REPORTING = re.compile(r"^\[\d+:\d\d\] >> report")
MACHINE = "tuned"
SETTLE_S = 40                               # into the load before the fault (past the first requests)
OUTAGE_S = 60                               # a backend or a network away for longer than the liveness watch's 30 s
DISK_MB = 256                               # the results' tmpfs of disk-full: above a 2-minute run's estimated need
DISK_LEFT_MB = 8                            # what disk-full leaves free: below the lab's floor, so it must react


def _kill_jvm(_proc) -> str:
    done = subprocess.run(reach.ssh_command(MACHINE, "sudo systemctl kill -s KILL camel-app"),
                          capture_output=True, text=True, timeout=120)
    return f"systemctl kill -s KILL camel-app on {MACHINE}: exit {done.returncode}"


def _power_off(_proc) -> str:
    if vagrant.in_containers():     # every process of the container killed at once, its PID 1 first: a power cut
        done = containers.docker("kill", containers.PREFIX + MACHINE, timeout=60)
        return f"docker kill {containers.PREFIX}{MACHINE}: exit {done.returncode}"
    done = netns.virsh("destroy", vagrant.DOMAIN_PREFIX + MACHINE)
    return f"virsh destroy {vagrant.DOMAIN_PREFIX}{MACHINE}: exit {done.returncode}"


def _ctrl_c(proc) -> str:
    os.killpg(proc.pid, signal.SIGINT)
    return "SIGINT to start.sh's process group"


def _on_tuned(command: str, timeout: float = 120) -> subprocess.CompletedProcess:
    return subprocess.run(reach.ssh_command(MACHINE, command), capture_output=True, text=True, timeout=timeout)


def _second_start(_proc) -> str:
    """What an impatient user types while a run goes on: both must be refused, naming the run that holds the lab."""
    said = []
    for argv in ([START, "--duration", "1m", "--label", "fault-intruder"], [START, "down"]):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=600)
        said.append(f"`{' '.join(['./start.sh', *argv[1:]])}` exit {done.returncode}: "
                    + " ".join((done.stderr or done.stdout).strip().splitlines()[-1:]))
    return "; ".join(said)


def _backend_outage(_proc) -> str:
    stopped = _on_tuned("sudo systemctl stop mock-service")
    time.sleep(OUTAGE_S)
    started = _on_tuned("sudo systemctl start mock-service")
    return (f"mock-service stopped (exit {stopped.returncode}) for {OUTAGE_S} s, started again "
            f"(exit {started.returncode})")


def _links(domain: str) -> list[str]:
    listed = netns.virsh("domiflist", domain).stdout.splitlines()
    return [line.split()[0] for line in listed[2:] if line.split() and line.split()[0] != "-"]


def peer_links(guest_iflinks: str, lab_links: str) -> list[str]:
    """The lab namespace's ends of a container's veth pairs: guest_iflinks, the peers' interface indexes as the
    container's /sys/class/net/<if>/iflink give them (one a line); lab_links, `ip -o link` in the lab namespace."""
    wanted = {line.strip() for line in guest_iflinks.splitlines() if line.strip()}
    found = (re.match(r"(\d+): ([^:@]+)", line) for line in lab_links.splitlines())
    return [m.group(2) for m in found if m and m.group(1) in wanted]


def _container_network_cut() -> str:
    """As virsh domif-setlink does for a VM: the host's ends of the machine's links down, so the machine keeps its
    addresses and routes and sees its carrier lost, then up again after OUTAGE_S."""
    iflinks = containers.docker("exec", containers.PREFIX + MACHINE, "sh", "-c",
                                'for i in /sys/class/net/*; do [ "${i##*/}" = lo ] || cat "$i/iflink"; done',
                                timeout=60).stdout
    listed = subprocess.run(netns.wrap(["ip", "-o", "link"]), capture_output=True, text=True, timeout=60).stdout
    links = peer_links(iflinks, listed)
    def set_links(state):
        return [subprocess.run(netns.wrap(["ip", "link", "set", link, state]), capture_output=True,
                               timeout=60).returncode for link in links]
    codes = set_links("down")
    time.sleep(OUTAGE_S)
    codes += set_links("up")
    return f"links {', '.join(links) or 'none found'} of {containers.PREFIX}{MACHINE} down for {OUTAGE_S} s, " \
           f"then up (ip exits {codes})"


def _network_cut(_proc) -> str:
    if vagrant.in_containers():
        return _container_network_cut()
    domain = vagrant.DOMAIN_PREFIX + MACHINE
    links = _links(domain)
    codes = [netns.virsh("domif-setlink", domain, link, "down").returncode for link in links]
    time.sleep(OUTAGE_S)
    codes += [netns.virsh("domif-setlink", domain, link, "up").returncode for link in links]
    return f"links {', '.join(links)} of {domain} down for {OUTAGE_S} s, then up (virsh exits {codes})"


def _recorder_killed(_proc) -> str:
    done = _on_tuned("sudo systemctl kill -s KILL lab-pmlogger pmcd")
    return f"systemctl kill -s KILL lab-pmlogger pmcd on {MACHINE}: exit {done.returncode}"


HOG = "import time\nkept = []\nwhile True:\n    kept.append(b'\\1' * (8 << 20))\n    time.sleep(0.2)\n"


def _memory_hog(_proc) -> str:
    done = _on_tuned(f"sudo systemd-run --unit=lab-fault-hog --collect python3 -c \"{HOG}\"")
    return f"systemd-run --unit=lab-fault-hog (40 MB/s until the OOM killer acts) on {MACHINE}: exit {done.returncode}"


def _fill_results(_proc) -> str:
    free = disk.free_bytes(paths.RESULTS)
    leave = DISK_LEFT_MB * disk.MB
    with open(paths.RESULTS / "fault-filler", "wb") as f:
        os.posix_fallocate(f.fileno(), 0, max(0, free - leave))
    return f"results/ filled: {(free - leave) / disk.MB:.0f} MB written, {DISK_LEFT_MB} MB left"


def _after_hog() -> None:
    with contextlib.suppress(subprocess.SubprocessError):
        _on_tuned("sudo systemctl stop lab-fault-hog")


@contextlib.contextmanager
def _small_results():
    """results/ as a DISK_MB tmpfs for one run; after it, what the run wrote moved onto the real disk (the filler
    left behind), the tmpfs unmounted: the real results/ is never written by the fault."""
    results = paths.RESULTS
    results.mkdir(exist_ok=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={DISK_MB}m", "lab-fault-disk", str(results)], check=True)
    kept = Path(tempfile.mkdtemp(prefix="lab-fault-disk-", dir=paths.ROOT))
    try:
        yield
    finally:
        try:
            (results / "fault-filler").unlink(missing_ok=True)
            for folder in results.iterdir():
                shutil.move(str(folder), kept / folder.name)
        finally:
            if subprocess.run(["umount", str(results)]).returncode != 0:
                subprocess.run(["umount", "-l", str(results)], check=True)
        for folder in kept.iterdir():
            shutil.move(str(folder), results / folder.name)
        kept.rmdir()


# fault: (extra start.sh options, [(line that triggers, seconds after it, action)], around the run, after it). In
# this order each run is also the recovery check of the one before (a full provisioning after the interrupted
# one, a boot after the power-off at the end: the first run of whatever comes next).
FAULTS = {
    "interrupt-provision": (["--provision"], [(PROVISIONING, 20, _ctrl_c)], None, None),
    "interrupt-load": ([], [(LOAD_RUNS, SETTLE_S, _ctrl_c)], None, None),
    "interrupt-collect": ([], [(COLLECTING, 5, _ctrl_c), (REPORTING, 1, _ctrl_c)], None, None),
    "kill-jvm": ([], [(LOAD_RUNS, SETTLE_S, _kill_jvm)], None, None),
    "second-start": ([], [(LOAD_RUNS, SETTLE_S, _second_start)], None, None),
    "backend-outage": ([], [(LOAD_RUNS, SETTLE_S, _backend_outage)], None, None),
    "network-cut": ([], [(LOAD_RUNS, SETTLE_S, _network_cut)], None, None),
    "recorder-killed": ([], [(LOAD_RUNS, SETTLE_S, _recorder_killed)], None, None),
    "memory-hog": ([], [(LOAD_RUNS, SETTLE_S, _memory_hog)], None, _after_hog),
    "disk-full": ([], [(LOAD_RUNS, SETTLE_S, _fill_results)], _small_results, None),
    "power-off": ([], [(LOAD_RUNS, SETTLE_S, _power_off)], None, None),
}


def run_with_fault(name: str, duration: str, users: int, log) -> dict:
    around = FAULTS[name][2]
    with around() if around else contextlib.nullcontext():
        found = _run_with_fault(name, duration, users, log)
    after = FAULTS[name][3]
    if after:
        after()
    if found["run"]:        # read where the run folder is now (disk-full moved it onto the real disk)
        found.update(_what_the_folder_says(paths.RESULTS / found["run"]))
    return found


def _run_with_fault(name: str, duration: str, users: int, log) -> dict:
    extra, triggers = FAULTS[name][:2]
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
    return {"fault": name, "run": run_dir.name if run_dir else None, "exit": code,
            "minutes": round((time.time() - started) / 60, 1), "actions": done_actions}


def _what_the_folder_says(run_dir: Path) -> dict:
    record = json.loads((run_dir / "run.json").read_text()) if (run_dir / "run.json").exists() else {}
    summary = (run_dir / "summary.md").read_text() if (run_dir / "summary.md").exists() else ""
    top = [ln for ln in summary.split("\n## ", 1)[0].splitlines() if ln.startswith(">")]
    ended = [ln for ln in summary.splitlines() if " ended — " in ln or "came back" in ln or "killed" in ln]
    missing = summary.split("## Missing or unreadable", 1)[1].split("\n## ", 1)[0] if "## Missing or" in summary \
        else ""
    return {"status": record.get("status"), "stopped_at": record.get("stopped_at"), "phase": record.get("phase"),
            "error": record.get("error"), "incomplete": record.get("incomplete"),
            "finish_errors": record.get("finish_errors"), "collect_errors": record.get("collect_errors"),
            "liveness": {m: {k: v for k, v in s.items() if k in ("dead_at", "back_at", "deaths")}
                         for m, s in (record.get("liveness") or {}).items()},
            "report": (run_dir / "report.html").exists(), "summary_top": top, "ended": ended[:6],
            "missing": [ln[2:] for ln in missing.splitlines() if ln.startswith("- ")][:8],
            "files": sum(1 for p in run_dir.rglob("*") if p.is_file())}


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
    print("\n| fault | run folder | exit | status | stopped at | report | files | minutes |\n"
          "| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        print(f"| {r['fault']} | {r['run']} | {r['exit']} | {r.get('status')} | {r.get('stopped_at')} | "
              f"{'yes' if r.get('report') else 'no'} | {r.get('files')} | {r['minutes']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
