"""End to end on system containers (provider containers, docs/machines.md): ./start.sh up as containers -> their
shape checked (systemd, CPUs, the memory limit, the JVM's own view) -> a short A/B run checked -> a killed lab
cleared and brought up again -> ./start.sh down leaves nothing (at the session's end, tests/conftest.py). Runs first,
then the real hosts' (tests/test_hosts_e2e.py, on the containers this module left up) and the VMs'
(tests/test_machines_e2e.py, which forces LAB_PROVIDER=libvirt); this module forces containers.

Needs root and Docker (./start.sh prereqs installs docker.io); under CI=true it always runs.
"""
import json
import os
import signal
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lab import procs  # noqa: E402
from lab.machines import containers  # noqa: E402
from report import fmt, read_metrics  # noqa: E402
from tests.lab_e2e import NEEDS_ROOT, NETNS_FILE, ROOT, assert_nothing_left, in_lab, the_labs_user  # noqa: E402
from tests.lab_e2e import on_containers as start  # noqa: E402

pytestmark = NEEDS_ROOT


@pytest.fixture(scope="module")
def lab_up(containers_up):
    """The containers of tests/conftest.py (made once for this module and the hosts' one)."""
    return containers_up


def test_a_bad_provider_is_named_and_changes_nothing():
    before = NETNS_FILE.exists()
    result = start("up", env={"LAB_PROVIDER": "lxc"}, timeout=120)
    assert result.returncode == 2 and "provider: 'lxc' is not one of auto, libvirt, containers" in result.stderr
    assert NETNS_FILE.exists() == before


def test_a_host_wide_kernel_setting_is_refused_on_containers_before_anything_starts():
    before = NETNS_FILE.exists()
    result = start("--set", "tuned:base_sysctl={vm.swappiness: 10}", "--duration", "1m", timeout=300)
    assert result.returncode == 2, result.stdout[-2000:] + result.stderr
    assert "vm.swappiness: not a per-network-namespace kernel setting" in result.stderr
    assert NETNS_FILE.exists() == before
    # where the host had no base image yet (a CI machine), its root file system was started ahead and then ended
    # with its whole process group: nothing of it is left (lab/machines/ahead.py)
    assert not list((ROOT / ".lab" / "box").glob("image-*")), "a root file system made ahead was left behind"
    assert not [p for p in Path("/proc").glob("[0-9]*") if "lab.machines.ahead" in procs.cmdline(int(p.name))]


def test_both_containers_have_the_machines_shape(lab_up):
    for name in ("default", "tuned"):
        probe = in_lab(name, "hostname; nproc; cat /sys/fs/cgroup/memory/memory.limit_in_bytes"
                             " /sys/fs/cgroup/memory/memory.memsw.limit_in_bytes; cat /run/systemd/container;"
                             " systemctl is-system-running; ip -4 -o addr show eth1 | awk '{print $4}'")
        assert probe.returncode == 0, probe.stderr
        hostname, cpus, memory, memory_swap, kind, state, address = probe.stdout.split()
        assert hostname == f"lab-{name}" and int(cpus) == 2
        assert int(memory) == int(memory_swap) == 512 * 1024 * 1024      # no swap beyond the memory
        assert kind == "docker" and state in ("running", "degraded"), probe.stdout
        assert address == {"default": "192.168.56.11/24", "tuned": "192.168.56.12/24"}[name]
        failed = in_lab(name, "systemctl --failed --no-legend --plain | awk '{print $1}'").stdout.split()
        assert failed == [], f"{name}: failed units {failed}"
        # the container's init made systemd's own cgroup hierarchy and the machine's network settings writable
        mounts = in_lab(name, "findmnt -no OPTIONS /sys/fs/cgroup/systemd; findmnt -no OPTIONS /proc/sys/net |"
                              " tail -1; sudo journalctl -b --no-pager | grep -c 'compat systemd cgroup' || true")
        systemd_cgroup, network_settings, complaints = mounts.stdout.split()
        assert systemd_cgroup.startswith("rw,") and network_settings.startswith("rw,"), mounts.stdout
        assert complaints == "0", f"{name}: systemd could not use its cgroup hierarchy {complaints} times"
        # each twin's systemd in a unified (cgroup v2) group of its own: sharing the host's, the twins made and
        # removed each other's units' groups (a unit of one failed "at step CGROUP" while the other booted)
        pid = containers.docker("inspect", "-f", "{{.State.Pid}}", containers.PREFIX + name).stdout.strip()
        unified = [line for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines() if line.startswith("0::")]
        assert unified and unified[0].startswith(f"0::/{containers.CGROUP_PARENT}/"), unified


def test_the_machines_image_is_the_shared_base_with_this_checkouts_login_key(lab_up):
    """One root file system per host (image.base_name, no key: nobody logs in), each checkout's image one layer
    above it: a second clone keys the base in seconds instead of building it again (~1 min)."""
    from lab.machines import box, image
    layers = {name: json.loads(containers.docker("image", "inspect", "-f", "{{json .RootFS.Layers}}", name,
                                                 check=True).stdout)
              for name in (image.base_name("bookworm"), image.image_name("bookworm"))}
    base, keyed = layers.values()
    assert keyed[:len(base)] == base and len(keyed) == len(base) + 1, layers
    key = box.login_key().with_suffix(".pub").read_text().strip()
    for name, lets_in in ((image.base_name("bookworm"), ""), (image.image_name("bookworm"), key)):
        said = containers.docker("run", "--rm", "--network", "none", name, "cat",
                                 "/home/vagrant/.ssh/authorized_keys", check=True).stdout.strip()
        assert said == lets_in, f"{name} lets in {said!r}"
    assert in_lab("tuned", "stat -c '%U %a' /home/vagrant/.ssh/authorized_keys").stdout.split() == ["vagrant", "600"]


def test_status_names_the_kind_and_the_containers_memory(lab_up):
    status = start("status", timeout=300)
    assert status.returncode == 0, status.stderr
    assert "provider: containers" in status.stdout
    for name in ("default", "tuned"):
        line = next(line for line in status.stdout.splitlines() if line.startswith(name))
        assert "running" in line and "containers" in line and "512 MB" in line, line


# The tuned side asks for Camel's conversion counters (a knob's asked metric: kit -> PCP -> the report's row).
SHORT_RUN = ["--users", "10", "--ramp-up", "20s", "--duration", "1m", "--label", "e2e-containers", "--profile",
             "--set", "tuned:camel_type_converter_statistics=true"]
CONVERSIONS = "openmetrics.app.camel_type_converter_total"


@pytest.fixture(scope="module")
def short_run(lab_up):
    results = ROOT / "results"
    before = set(results.iterdir()) if results.is_dir() else set()
    started = time.monotonic()
    run = start(*SHORT_RUN, timeout=20 * 60)
    print(run.stdout[-4000:], run.stderr[-2000:])
    print(f"short A/B on containers in {time.monotonic() - started:.0f} s")
    assert run.returncode == 0, f"./start.sh failed:\n{run.stdout[-4000:]}\n{run.stderr[-3000:]}"
    made = sorted(p for p in set(results.iterdir()) - before if p.is_dir() and not p.name.startswith("."))
    assert len(made) == 1, made
    return made[0]


def test_a_short_ab_on_containers_is_complete_and_says_its_kind(short_run):
    record = json.loads((short_run / "run.json").read_text())
    assert record["status"] == "complete" and not record.get("error"), record.get("error")
    assert record["provider"] == "containers" and record["accelerator"] == "native"
    assert record["load"]["jmeter_uid"] == the_labs_user(record["load"]["runs_as"]), "JMeter ran as root"
    assert not record.get("collect_errors"), record["collect_errors"]
    for side in ("default", "tuned"):
        shape = record["machines"][side]["versions"]["jvm_shape"]
        assert shape.startswith("2 CPUs, memory limit 512.00M") and "(cgroupv" in shape, shape
    left = record["service"]["left_out"]["tuned"]
    assert "base_sysctl[net.netfilter.nf_conntrack_max]" in left, left
    summary = (short_run / "summary.md").read_text()
    assert "containers / native" in summary and "The JVMs saw different machines" not in summary
    assert summary.count("the container's memory limit") == 2, "both machines' memory from their cgroups"
    effects = json.loads((short_run / "verdict.json").read_text())["effects"]
    verdict = effects["tps"]
    assert verdict["low"] is not None and verdict["low"] <= verdict["estimate"] <= verdict["high"]
    # the JVM's CPU per request, read from each container's PCP (a minute's window: too few samples for an interval)
    cpu = effects["cpu"]
    assert cpu["default"] > 0.05 and cpu["tuned"] > 0.05 and cpu["estimate"] > 0, cpu
    assert cpu["low"] is not None or "PCP's 30 s samples" in cpu["why_not"], cpu


def test_both_containers_served_and_were_profiled(short_run):
    for side in ("default", "tuned"):
        access = (short_run / side / "logs" / "httpd-access.log").read_text(errors="replace")
        assert access.count(" 200 ") >= 300, f"{side}: few successful requests"
        stacks = (short_run / side / "profile" / "cpu.collapsed").read_text().splitlines()
        assert any("camel" in line for line in stacks), f"{side}: no Camel frame in the CPU profile"


def test_conversions_are_counted_only_where_a_knob_asked(short_run):
    tuned = read_metrics(short_run / "tuned" / "pcp" / "metrics.csv")
    _, hits = tuned.series(CONVERSIONS, lambda instance: "outcome:hit" in instance)
    assert len(hits) >= 10 and hits.max() > 0, tuned.instances(CONVERSIONS)
    assert not read_metrics(short_run / "default" / "pcp" / "metrics.csv").instances(CONVERSIONS)
    row = next(line for line in (short_run / "summary.md").read_text().splitlines()
               if line.startswith("| Camel type conversions per request"))
    default, counted = (cell.strip() for cell in row.split("|")[2:4])
    assert default == fmt.NA and counted != fmt.NA, row


def test_a_killed_lab_is_cleared_by_the_next_down(lab_up, short_run):
    """The lab's dockerd killed with its containers running (a killed terminal, a CI limit): `down` starts it again
    to remove them, ends what is left in their cgroups, and leaves nothing; `up` then works again."""
    daemon = procs.recorded(containers.DAEMON)
    assert daemon is not None and procs.pid_alive(daemon)
    os.kill(daemon, signal.SIGKILL)
    time.sleep(2)
    assert list(Path("/sys/fs/cgroup").glob(f"pids/{containers.CGROUP_PARENT}/*")), "the containers outlived it"
    down = start("down", timeout=600)
    assert down.returncode == 0, down.stdout + down.stderr
    assert_nothing_left()
    up = start("up", timeout=900)
    assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-2000:]
