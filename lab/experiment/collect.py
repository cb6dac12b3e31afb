"""Collection: what a run leaves on each machine, pulled into results/<run-id>/<machine>/.

Before the load, `mark()` remembers where each log ends and starts the run's own PCP archive and the
profile of the app's JVM on both machines; after it, `pull()` stops them and brings back, per machine:

    logs/     app.log, audit.log.gz, gc.log, httpd-access.log, httpd-error.log (this run's lines only),
              mock.log (the mock's journal), journal.txt (the journal: OOM killer, restarts, failures),
              hs_err_pid<N>.log (a JVM crash during the run), serial-console.log (the guest's console, copied
              on the host: there even when the machine no longer answers)
    config/   the rendered configs (secrets redacted), knobs.json (what Ansible provisioned), manifest.json
              (what the machine said a run collects), versions.txt, actuator-info.json (versions the app
              reports), httpd-modules.txt
    pcp/      archive.{0,meta,index} (open it with pmrep/pmchart -a), pmlogger.log, metrics.csv (tidy:
              time,metric,instance,value; counters as rates, as the report reads them), processes.csv
              (each hotproc instance's command line)
    profile/  profile.jfr (async-profiler's recording of the whole load), profile.json (what was asked,
              when, the window converted), profile.log, and <event>.collapsed (the measured window only:
              the warm-up cut off) for the report's flame graphs

The guest side is lab/experiment/guest/run.sh, sent over SSH each time (nothing to install on the machines). What it
collects and where it finds it (logs, configs, services' journals, the PCP archive, the metrics to export)
is the machine's /etc/lab/manifest.json, written by Ansible; it comes back as config/manifest.json, which
`pull` holds the collected metrics against. A machine that cannot be reached leaves
<machine>/collect-error.txt and the rest of the run goes on.
"""
from __future__ import annotations

import csv
import io
import json
import subprocess
import tarfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from lab import machines, shell
from lab.errors import LabError
from lab.experiment import jvm_shape
from lab.machines import containers, reach, vagrant
from lab.provision import profiler

GUEST_SCRIPT = Path(__file__).parent / "guest" / "run.sh"
PULL_TIMEOUT_S = 900        # pmrep over a long archive is slow under TCG


class CollectError(LabError):
    """A machine's part of the run could not be started or pulled; the message names the machine."""


GUEST_STEPS = {"mark": "could not start the run's PCP archive", "pack": "packing the run's files"}


def _guest(name: str, args: list[str], timeout: float) -> subprocess.CompletedProcess:
    """lab/experiment/guest/run.sh ARGS as root on a machine, the script on stdin (inside the lab namespace)."""
    command = reach.ssh_command(name, "sudo bash -s -- " + " ".join(args))
    return shell.run(command, f"{name}: {GUEST_STEPS.get(args[0], args[0])}", error=CollectError,
                     input=GUEST_SCRIPT.read_bytes(), timeout=timeout)


def mark(run_id: str, names=machines.NAMES, log=print) -> None:
    """Log offsets remembered and the run's PCP archive started, on both machines; the guest's warnings
    (a metric source that never answered) are passed on. The guest waits up to pcp_openmetrics_wait_s for the
    metric sources, then up to pcp_first_records_wait_s for the archive's first records: well within the timeout."""
    def one(name):
        done = _guest(name, ["mark", run_id], timeout=300)
        for line in done.stderr.decode(errors="replace").splitlines():
            if "warning" in line:
                log(f"{name}: {line.strip()}")
    with ThreadPoolExecutor(len(names)) as pool:
        list(pool.map(one, names))


SERIAL_TAIL_BYTES = 2 * 1024 * 1024    # the console since boot can grow over many runs; its end is what matters


def copy_serial_console(name: str, target: Path) -> bool:
    """The guest's serial console, as the host's libvirt wrote it (no SSH needed: a dead machine's last words
    too), into target/logs/serial-console.log, its last SERIAL_TAIL_BYTES. False when there is none (real hosts
    have none the lab can read)."""
    if not reach.reaches_vms():
        return False
    if vagrant.in_containers():         # a container's console is its PID 1's output, which Docker keeps
        said = containers.docker("logs", "--tail", "20000", containers.PREFIX + name, text=False, timeout=60)
        if said.returncode != 0:
            return False
        data = (said.stdout + said.stderr)[-SERIAL_TAIL_BYTES:]
        (target / "logs").mkdir(parents=True, exist_ok=True)
        (target / "logs" / "serial-console.log").write_bytes(data)
        return True
    source = Path(vagrant.SERIAL_LOG.format(name=name))
    try:
        with open(source, "rb") as console:
            console.seek(max(0, source.stat().st_size - SERIAL_TAIL_BYTES))
            data = console.read()
    except OSError:
        return False
    (target / "logs").mkdir(parents=True, exist_ok=True)
    (target / "logs" / "serial-console.log").write_bytes(data)
    return True


def pull(run_id: str, run_dir: Path, since_epoch: int, names=machines.NAMES,
         folders: dict[str, str] | None = None, log=print,
         profile_window: tuple[int, int | None] | None = None,
         skip: dict[str, str] | None = None) -> dict[str, str | None]:
    """Each machine's files into run_dir/<folder>/ (folders: machine → the configuration it ran; its own
    name by default); {machine: None, or what went wrong}. profile_window: (from, to) epoch ms of the
    measured window, to which the profiles are cut (the whole recording when None). skip: {machine: why}
    for machines not to ask (dead: lab/experiment/liveness.py); their serial console is still copied."""
    def one(name):
        target = Path(run_dir) / (folders or {}).get(name, name)
        target.mkdir(parents=True, exist_ok=True)
        copy_serial_console(name, target)
        if (skip or {}).get(name):
            (target / "collect-error.txt").write_text(skip[name] + "\n")
            log(f"{name}: {skip[name]}")
            return skip[name]
        try:
            done = _guest(name, ["pack", run_id, str(int(since_epoch))], timeout=PULL_TIMEOUT_S)
            if not done.stdout:
                raise CollectError(f"the machine sent nothing: {shell.tail(done)}")
            unpack(done.stdout, target)
            wide = target / "pcp" / "pmrep.csv"
            if wide.exists() and wide.stat().st_size:
                rows = tidy_metrics(wide, target / "pcp" / "metrics.csv")
                wide.unlink()
                absent = missing_metrics(target)
                # named in the summary's data integrity, which tells those a short run could not sample
                log(f"{name}: collected ({rows} metric values)"
                    + (f"; no values for {len(absent)} of the manifest's metrics (the summary names them)"
                       if absent else ""))
            else:
                log(f"{name}: collected, but PCP gave no values (see {target / 'pcp'})")
            psargs = target / "pcp" / "psargs.csv"
            if psargs.exists():
                tidy_processes(psargs, target / "pcp" / "processes.csv")
                psargs.unlink()
            argv0 = target / "pcp" / "argv0.csv"
            if argv0.exists():
                renamed = rename_stale_processes(target / "pcp", argv0)
                argv0.unlink()
                if renamed:
                    log(f"{name}: PCP had named {', '.join(renamed)} before it exec'd (renamed as it runs now)")
            _convert_profile(name, target / "profile", profile_window, log)
            return None
        except (CollectError, subprocess.TimeoutExpired, tarfile.TarError, OSError) as failure:
            (target / "collect-error.txt").write_text(f"collecting {name} failed: {failure}\n")
            log(f"{name}: collecting failed: {failure}")
            return str(failure)
    with ThreadPoolExecutor(len(names)) as pool:
        return dict(zip(names, pool.map(one, names), strict=True))


def unpack(tar_gz: bytes, target: Path) -> None:
    """The guest's tar.gz into target; members that would land outside it are refused."""
    root = target.resolve()
    with tarfile.open(fileobj=io.BytesIO(tar_gz), mode="r:gz") as tar:
        for member in tar.getmembers():
            dest = (root / member.name).resolve()
            if not (dest == root or root in dest.parents) or not (member.isfile() or member.isdir()):
                raise CollectError(f"refusing tar member {member.name!r}")
        tar.extractall(root, filter="data")


def tidy_metrics(wide_csv: Path, out_csv: Path) -> int:
    """pmrep's wide CSV (one column per metric-instance) → time,metric,instance,value rows; returns the count.

    A column header is "metric" or "metric-instance"; PCP metric names never contain "-".
    """
    count = 0
    with open(wide_csv, newline="") as src, open(out_csv, "w", newline="") as dst:
        rows = csv.reader(src)
        header = next(rows, None)
        out = csv.writer(dst)
        out.writerow(["time", "metric", "instance", "value"])
        if not header:
            return 0
        columns = [tuple(h.split("-", 1)) if "-" in h else (h, "") for h in header[1:]]
        for row in rows:
            for (metric, instance), value in zip(columns, row[1:], strict=False):
                if value not in ("", "N/A"):
                    out.writerow([row[0], metric, instance, value])
                    count += 1
    return count


def tidy_processes(wide_csv: Path, out_csv: Path) -> int:
    """pmrep's CSV of hotproc.psinfo.psargs → instance,psargs (each instance's command line, once): the
    report tells the mock from PCP's own python3 agent by it. Returns the number of processes."""
    seen: dict[str, str] = {}
    with open(wide_csv, newline="", errors="replace") as src:
        rows = csv.reader(src)
        header = next(rows, None) or []
        for row in rows:
            for column, value in zip(header[1:], row[1:], strict=False):
                instance = column.split("-", 1)[1] if "-" in column else column
                if value and value != "N/A":
                    seen.setdefault(instance, value)
    with open(out_csv, "w", newline="") as dst:
        out = csv.writer(dst)
        out.writerow(["instance", "psargs"])
        out.writerows(sorted(seen.items()))
    return len(seen)


STALE_NAMES = ("/usr/lib/systemd/systemd-executor",)   # systemd ≥ 255 spawns every service through it


def rename_stale_processes(pcp_dir: Path, argv0_csv: Path) -> list[str]:
    """hotproc instances PCP named before their process exec'd its command ('001294 /usr/lib/systemd/systemd-executor'
    for the JVM on the trixie box: PCP keeps the name and command line it first saw) renamed after what that PID runs
    at collection ('001294 /usr/bin/java'), in metrics.csv and processes.csv. Returns the old names."""
    now = {}
    for line in argv0_csv.read_text(errors="replace").splitlines():
        pid, _, argv0 = line.partition(",")
        if pid.isdigit() and argv0:
            now[int(pid)] = argv0
    renames = {}
    for path in (pcp_dir / "metrics.csv", pcp_dir / "processes.csv"):
        if not path.exists():
            continue
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        col = 2 if path.name == "metrics.csv" else 0       # the instance's column
        for row in rows[1:]:
            if len(row) <= col:
                continue
            pid, _, command = row[col].partition(" ")
            if command in STALE_NAMES and pid.isdigit() and int(pid) in now:
                renames[row[col]] = f"{pid} {now[int(pid)]}"
                row[col] = renames[row[col]]
                if path.name == "processes.csv" and len(row) > 1:
                    row[1] = f"{now[int(pid)]} (PCP saw {command} before it exec'd)"
        with open(path, "w", newline="") as f:
            csv.writer(f).writerows(rows)
    return sorted(renames)


def _convert_profile(name: str, profile_dir: Path, window, log) -> None:
    """The machine's profile.jfr → collapsed stacks per event (lab/provision/profiler.py); a failure is logged only."""
    if not (profile_dir / "profile.jfr").is_file():
        return
    try:
        outcome = profiler.convert(profile_dir, profiler.ensure(log=log), window=window)
    except profiler.ProfilerError as failure:
        log(f"{name}: the profile was not converted: {failure}")
        return
    bad = {event: why for event, why in outcome.items() if why}
    log(f"{name}: profile converted ({', '.join(e for e in outcome if e not in bad) or 'no event'})"
        + (f"; failed: {bad}" if bad else ""))


def read_manifest(machine_dir: Path) -> dict:
    """What the machine said a run collects (config/manifest.json); {} for a run folder from before it."""
    try:
        return json.loads((machine_dir / "config" / "manifest.json").read_text())
    except (OSError, ValueError):
        return {}


def missing_metrics(machine_dir: Path) -> list[str]:
    """The manifest's exported metrics that have no value in pcp/metrics.csv."""
    wanted = read_manifest(machine_dir).get("pcp", {}).get("metrics", [])
    try:
        with open(machine_dir / "pcp" / "metrics.csv", newline="") as f:
            present = {row["metric"] for row in csv.DictReader(f)}
    except (OSError, KeyError):
        present = set()
    return [m for m in wanted if m not in present]


def read_versions(machine_dir: Path) -> dict:
    """Versions as the machine reported them: versions.txt (OS, packages) and the tuning kit's /lab/info (kept as
    actuator-info.json, the name of older runs, whose sample app answered it on /actuator/info)."""
    versions: dict = {}
    text = machine_dir / "config" / "versions.txt"
    if text.exists():
        for line in text.read_text().splitlines():
            key, sep, value = line.partition("=")
            if sep:
                versions[key] = value
    info = machine_dir / "config" / "actuator-info.json"
    try:
        lab = json.loads(info.read_text()).get("lab", {})
    except (OSError, ValueError):
        lab = {}
    for key, field in (("spring_boot", "springBoot"), ("camel", "camel"), ("tomcat", "tomcat"),
                       ("tcnative", "tcnative"), ("app_stack", "stack")):
        if field in lab:
            versions[key] = lab[field]
    if lab.get("java"):
        versions["java"] = lab["java"]
    if lab.get("connectors"):
        versions["connectors"] = lab["connectors"]
    # what really served the requests (the kit's probe of each connector's executor) and Camel's thread type
    executors = lab.get("connectorExecutors")
    if isinstance(executors, dict) and executors:
        versions["request_threads"] = ", ".join(f"{name} {e.get('executor', '?') if isinstance(e, dict) else e}"
                                                for name, e in sorted(executors.items()))
    if lab.get("camelThreads"):
        versions["camel_threads"] = lab["camelThreads"]
    if lab.get("javaRuntime"):
        versions["java_runtime"] = lab["javaRuntime"]
    shape = jvm_shape.read(machine_dir)
    if shape:
        versions["jvm_shape"] = jvm_shape.words(shape)
    return versions



def read_knobs(machine_dir: Path) -> dict | None:
    """The knobs the machine was provisioned with (config/knobs.json, written by Ansible)."""
    try:
        return json.loads((machine_dir / "config" / "knobs.json").read_text())
    except (OSError, ValueError):
        return None
