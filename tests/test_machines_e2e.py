"""End to end on real machines: ./start.sh up -> both twins answer as specified -> ./start.sh down.

Needs root and QEMU (KVM or TCG). Outside CI it skips loudly where the lab cannot run; under CI=true it
always runs. A whole pass takes ~10-15 minutes under TCG (box build the first time, two boots).
"""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
START = str(ROOT / "start.sh")
NETNS_FILE = Path("/var/run/netns/camel-lab")
IN_CI = os.environ.get("CI") == "true"


def _why_not_runnable():
    if os.geteuid() != 0:
        return "the lab needs root"
    if not Path("/dev/net/tun").exists():
        return "no /dev/net/tun for the lab's uplink"
    return None


reason = _why_not_runnable()
if reason and not IN_CI:
    pytestmark = pytest.mark.skip(reason=f"END-TO-END SKIPPED: {reason} (under CI=true this fails instead)")


def start(*args, env=None, timeout=3600):
    return subprocess.run([START, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})})


def in_lab(name, command):
    cmd = ["ip", "netns", "exec", "camel-lab", "ssh", "-F", str(ROOT / ".lab" / "ssh_config"),
           "-o", "BatchMode=yes", "-o", "ConnectTimeout=30", name, command]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600)


def lab_processes():
    """Processes the lab may have started that still run (daemons, QEMU, dnsmasq, slirp4netns)."""
    left = []
    for proc in Path("/proc").glob("[0-9]*"):
        try:
            cmd = (proc / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            stat = (proc / "stat").read_text().split(") ", 1)[1]
        except (OSError, IndexError):
            continue
        if stat.startswith("Z"):
            continue
        if any(k in cmd for k in ("camel-lab", "libvirtd --daemon", "virtlogd --daemon", "slirp4netns",
                                  "dnsmasq --conf-file=/var/lib/libvirt/dnsmasq/lab-")):
            left.append(cmd[:120])
    return left


def assert_nothing_left():
    assert not NETNS_FILE.exists(), "the lab namespace is still there"
    assert lab_processes() == []
    assert not list(Path("/etc/libvirt/qemu").glob("camel-lab-*.xml")), "a lab domain is still defined"
    assert not list(Path("/etc/libvirt/qemu/networks").glob("lab-*.xml")), "a lab network is still defined"
    assert not list((ROOT / ".lab" / "run").glob("*.pid")), "PID records remain"


@pytest.fixture(scope="module")
def lab_up():
    start("down")            # a lab left behind by an earlier, killed run must not block this one
    up = start("up")
    print(up.stdout[-4000:], up.stderr[-2000:])
    assert up.returncode == 0, f"./start.sh up failed:\n{up.stdout[-3000:]}\n{up.stderr[-3000:]}"
    yield up
    down = start("down")
    assert down.returncode == 0, down.stderr
    assert_nothing_left()


def lab_footprint():
    """What of the lab exists on the host right now (bad input must change none of it)."""
    return (NETNS_FILE.exists(), sorted(lab_processes()),
            sorted(p.name for p in Path("/etc/libvirt/qemu").glob("camel-lab-*.xml")),
            sorted(p.name for p in (ROOT / ".lab" / "run").glob("*")))


def test_bad_input_changes_nothing():
    before = lab_footprint()
    for args, env, words in ((["bogus"], {}, "invalid choice"),
                             (["up", "--fast"], {}, "unrecognized arguments"),
                             (["up"], {"LAB_MEMORY_MB": "lots"}, "memory_mb")):
        result = start(*args, env=env, timeout=300)
        assert result.returncode == 2 and words in result.stderr, result.stderr
    assert lab_footprint() == before


def test_both_machines_answer_with_the_scenario_shape(lab_up):
    for name in ("default", "tuned"):
        probe = in_lab(name, "hostname; nproc; awk '/^MemTotal/{print $2}' /proc/meminfo")
        assert probe.returncode == 0, probe.stderr
        hostname, cpus, mem_kib = probe.stdout.split()
        assert hostname == f"lab-{name}"
        assert int(cpus) == 2
        # 512 MiB of guest RAM shows as MemTotal a little below it (kernel reservations).
        assert 400 * 1024 < int(mem_kib) <= 512 * 1024


def test_apt_works_inside_both(lab_up):
    for name in ("default", "tuned"):
        update = in_lab(name, "sudo apt-get update -q")
        assert update.returncode == 0, update.stdout[-1500:] + update.stderr[-1500:]


def test_egress_guard_is_loaded_in_the_lab_namespace(lab_up):
    # Checked by reading the rules, not by sending traffic to a forbidden address: if the guard were
    # missing, such a probe would really leave the lab. The mirror being reachable is test_apt above.
    rules = subprocess.run(["ip", "netns", "exec", "camel-lab", "nft", "list", "table", "inet", "lab_guard"],
                           capture_output=True, text=True).stdout
    assert "@blocked counter packets" in rules and "tcp dport { 80, 443 } accept" in rules
    assert 'oifname "tap0" jump egress' in rules


def test_status_reports_both_machines(lab_up):
    status = start("status", timeout=300)
    assert status.returncode == 0, status.stderr
    for name in ("default", "tuned"):
        line = next(line for line in status.stdout.splitlines() if line.startswith(name))
        assert "running" in line and "libvirt" in line
    assert "accelerator:" in status.stdout


def test_a_second_up_changes_nothing(lab_up):
    again = start("up", timeout=600)
    assert again.returncode == 0, again.stderr
    assert "already up; nothing changed" in again.stdout
