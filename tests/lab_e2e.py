"""What the end-to-end tests share: ./start.sh with a machine provider forced, a command on a machine over the lab's
SSH, the run folders, a JTL's successful samples. (Not a test module: pytest collects test_*.py only.)"""
import csv
import os
import pwd
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
START = str(ROOT / "start.sh")
NETNS_FILE = Path("/var/run/netns/camel-lab")
IN_CI = os.environ.get("CI") == "true"
# a module's pytestmark where the lab needs nothing but root (and Docker, which prereqs installs)
NEEDS_ROOT = pytest.mark.skipif(os.geteuid() != 0 and not IN_CI,
                                reason="END-TO-END SKIPPED: the lab needs root (under CI=true this fails instead)")


def start(*args, provider: str, env=None, timeout=3600):
    """./start.sh ARGS with LAB_PROVIDER=provider (env may override it, e.g. auto for a down of any kind)."""
    return subprocess.run([START, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "LAB_PROVIDER": provider, **(env or {})})


def on_containers(*args, env=None, timeout=1800):
    """./start.sh ARGS with the machines as system containers."""
    return start(*args, provider="containers", env=env, timeout=timeout)


def in_lab(name, command, timeout=600):
    """COMMAND on machine NAME over the lab's SSH (its ssh_config), inside the lab namespace."""
    cmd = ["ip", "netns", "exec", "camel-lab", "ssh", "-F", str(ROOT / ".lab" / "ssh_config"),
           "-o", "BatchMode=yes", "-o", "ConnectTimeout=30", name, command]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def run_folders(results: Path) -> set[Path]:
    """The run folders in results/ (beside them the runs' index, results/.index/, made by the first run)."""
    return {p for p in results.iterdir() if p.is_dir() and not p.name.startswith(".")} if results.is_dir() else set()


def successful_samples(jtl: Path) -> int:
    with jtl.open(newline="") as f:
        return sum(1 for row in csv.DictReader(f) if row.get("success") == "true")



def the_labs_user(who: dict) -> int:
    """run.json's record of who ran a JMeter (load.runs_as, an engine's runs_as) names the lab's own user: its uid."""
    uid = pwd.getpwnam("camel-lab").pw_uid
    assert who.get("user") == "camel-lab" and who.get("uid") == uid != 0, who
    return uid


def lab_daemons() -> list[str]:
    """The lab's dockerd and containerd (their command lines name its run-time folder), still running."""
    from lab import procs
    from lab.machines import containers
    left = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except OSError:
            continue
        if str(containers.RUNTIME_DIR) in cmd and procs.pid_alive(int(proc.name)):
            left.append(cmd[:120])
    return left


def assert_nothing_left() -> None:
    """After the containers' down: no namespace, daemon, cgroup, run-time folder or PID record of the lab."""
    from lab.machines import containers
    assert not NETNS_FILE.exists(), "the lab namespace is still there"
    assert lab_daemons() == [], "the lab's Docker daemons still run"
    assert not list(Path("/sys/fs/cgroup").glob(f"*/{containers.CGROUP_PARENT}/*")), "a container's cgroup is left"
    assert not containers.RUNTIME_DIR.exists()
    assert not list((ROOT / ".lab" / "run").glob("*.pid")), "PID records remain"
