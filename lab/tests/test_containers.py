"""Provider containers: the choice of the machines' kind, the containers' shape, what a container cannot do (kernel
settings that are the host's), the JVM's own view of its machine, and what a killed lab leaves."""
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from lab.experiment import collect, jvm_shape, service
from lab.machines import containers, placement, provider, settings
from lab.provision import machine_fit
from lab.provision.configuration import Configuration

# -- the machines' kind --------------------------------------------------------------------------------------

def test_provider_is_a_validated_setting_overridable_from_the_environment():
    assert settings.load(environ={}).provider == "auto"
    assert settings.load(environ={"LAB_PROVIDER": "containers"}).provider == "containers"
    with pytest.raises(settings.SettingsError, match="provider: 'lxc' is not one of auto, libvirt, containers"):
        settings.load(environ={"LAB_PROVIDER": "lxc"})


def test_auto_takes_kvm_vms_where_kvm_works_and_containers_where_it_does_not():
    kvm = provider.choose("auto", "auto", detect=lambda requested: ("kvm", "a test boot worked"))
    assert (kvm["provider"], kvm["accelerator"]) == ("libvirt", "kvm")
    tcg = provider.choose("auto", "auto", detect=lambda requested: ("tcg", "the CPU has no vmx/svm flag"))
    assert (tcg["provider"], tcg["accelerator"]) == ("containers", "native")
    assert "no vmx/svm" in tcg["provider_reason"] and "LAB_PROVIDER=libvirt" in tcg["provider_reason"]


def test_a_requested_kind_is_taken_as_it_is():
    vms = provider.choose("libvirt", "auto", detect=lambda requested: ("tcg", "no KVM"))
    assert (vms["provider"], vms["accelerator"], vms["provider_reason"]) == ("libvirt", "tcg", "requested")
    boxes = provider.choose("containers", "auto", detect=lambda requested: pytest.fail("no detection needed"))
    assert boxes["provider"] == "containers"


# -- the shape ----------------------------------------------------------------------------------------------

def test_a_container_has_the_machines_memory_without_swap_and_its_cpus():
    args = containers.create_args(512, 2, None)
    assert args[args.index("--memory") + 1] == "512m"
    assert args[args.index("--memory-swap") + 1] == "512m"      # memory + swap = memory: no swap, as the VM
    assert args[args.index("--cpus") + 1] == "2"
    assert "--cpuset-cpus" not in args
    pinned = containers.create_args(1024, 1, "2-3")
    assert pinned[pinned.index("--cpuset-cpus") + 1] == "2-3" and pinned[pinned.index("--memory") + 1] == "1024m"


def test_systemd_runs_as_pid_1_without_privileged():
    args = containers.create_args(512, 2, None)
    assert "--privileged" not in args
    caps = {args[i + 1] for i, a in enumerate(args) if a == "--cap-add"}
    assert caps == {"SYS_ADMIN", "NET_ADMIN"}
    assert args[args.index("--cgroupns") + 1] == "private"      # the container's own cgroups: its own limits
    assert args[args.index("--stop-signal") + 1] == "SIGRTMIN+3"


def test_containers_get_own_cores_only_where_each_gets_all_its_cpus():
    names = ("default", "tuned")
    assert placement.for_containers("auto", names, 2, host_cores=[0, 1]) == {}     # a cpuset of 1 = 1 CPU seen
    assert placement.for_containers("auto", names, 2, host_cores=[0, 1, 2, 3]) == {"default": "0,1", "tuned": "2,3"}
    assert placement.for_containers("none", names, 2, host_cores=[0, 1, 2, 3]) == {}
    assert placement.for_containers("default=0;tuned=1", names, 2, host_cores=[0, 1]) == {"default": "0",
                                                                                            "tuned": "1"}


# -- what a container cannot do -------------------------------------------------------------------------------

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a fresh network namespace needs root")


@needs_root
def test_the_per_namespace_kernel_settings_are_read_from_this_hosts_kernel():
    own = containers.netns_sysctls()
    assert "net.core.somaxconn" in own and "net.ipv4.tcp_fin_timeout" in own
    assert "vm.swappiness" not in own and "kernel.pid_max" not in own
    assert "net.core.rmem_max" not in own          # global: read-only outside the host's namespace
    assert "net.netfilter.nf_conntrack_max" not in own


def test_a_knob_sets_host_wide_kernel_setting_is_left_out_on_containers_and_said():
    machine_fit.use("containers", per_namespace={"net.core.somaxconn"})
    try:
        kept, left = machine_fit.split({"base_sysctl": {"net.core.somaxconn": 1024,
                                                        "net.netfilter.nf_conntrack_max": 32768}, "x": 1})
        assert kept == {"base_sysctl": {"net.core.somaxconn": 1024}, "x": 1}
        assert list(left) == ["base_sysctl[net.netfilter.nf_conntrack_max]"]
        assert "the host's" in left["base_sysctl[net.netfilter.nf_conntrack_max]"]
    finally:
        machine_fit.use("libvirt")
    assert machine_fit.split({"base_sysctl": {"vm.swappiness": 1}}) == ({"base_sysctl": {"vm.swappiness": 1}}, {})


def test_the_tuned_sets_conntrack_setting_is_left_out_and_a_typed_one_refused():
    svc = service.load(service.DEFAULT)
    machine_fit.use("containers", per_namespace={"net.core.somaxconn"})
    try:
        tuned = Configuration("tuned").knobs(svc)
        assert "net.netfilter.nf_conntrack_max" not in tuned["base_sysctl"]
        assert "base_sysctl[net.netfilter.nf_conntrack_max]" in Configuration("tuned").left_out(svc)
        with pytest.raises(ValueError, match=r"--set base_sysctl=.*vm\.swappiness: not a per-network-namespace"):
            Configuration("default", {"base_sysctl": {"vm.swappiness": 10}}).knobs(svc)
        ok = Configuration("default", {"base_sysctl": {"net.core.somaxconn": 4096}}).knobs(svc)
        assert ok["base_sysctl"] == {"net.core.somaxconn": 4096}
    finally:
        machine_fit.use("libvirt")
    assert Configuration("tuned").knobs(svc)["base_sysctl"]["net.netfilter.nf_conntrack_max"] == 32768


# -- the JVM's view of its machine ------------------------------------------------------------------------------

CONTAINER_VIEW = """[0.001s][debug][os,container] Detected cgroups hybrid or legacy hierarchy
      int ActiveProcessorCount = -1 {product} {default}
     intx CICompilerCount = 2 {product} {ergonomic}
   size_t InitialHeapSize = 8388608 {product} {ergonomic}
   size_t MaxHeapSize = 134217728 {product} {ergonomic}
     bool UseG1GC = false {product} {default}
     bool UseSerialGC = true {product} {ergonomic}
    Provider: cgroupv1
    Effective CPU Count: 2
    Memory Limit: 512.00M
"""
VM_VIEW = """   size_t MaxHeapSize = 125829120 {product} {ergonomic}
     bool UseSerialGC = true {product} {ergonomic}
     intx CICompilerCount = 2 {product} {ergonomic}
    Provider: cgroupv1
    Effective CPU Count: 2
    Memory Limit: Unlimited
"""


def test_the_jvms_own_view_of_its_machine_is_read_and_worded(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "jvm-shape.txt").write_text(CONTAINER_VIEW)
    shape = jvm_shape.read(tmp_path)
    assert shape == {"container_support": "cgroupv1", "cpus": 2, "memory_limit": "512.00M", "max_heap_mb": 128,
                     "initial_heap_mb": 8, "gc": "Serial", "compiler_threads": 2}
    assert collect.read_versions(tmp_path)["jvm_shape"] == \
        "2 CPUs, memory limit 512.00M, heap ≤ 128 MiB, SerialGC, 2 compiler threads (cgroupv1)"
    (tmp_path / "config" / "jvm-shape.txt").write_text(VM_VIEW)
    assert jvm_shape.words(jvm_shape.read(tmp_path)) == \
        "2 CPUs, memory limit Unlimited, heap ≤ 120 MiB, SerialGC, 2 compiler threads (cgroupv1)"
    (tmp_path / "config" / "jvm-shape.txt").write_text("")
    assert jvm_shape.read(tmp_path) == {} and "jvm_shape" not in collect.read_versions(tmp_path)


# -- what a killed lab leaves -------------------------------------------------------------------------------------

def test_processes_left_in_the_containers_cgroups_are_ended_by_pid_and_the_cgroups_removed(tmp_path, monkeypatch):
    """A killed dockerd leaves its containers' processes running in their cgroups, and in those the containers'
    systemd made inside its own (unified) hierarchy: teardown ends exactly those and removes them, deepest first."""
    root = tmp_path / "cgroup"
    group = root / "pids" / containers.CGROUP_PARENT / "abc123"
    group.mkdir(parents=True)
    unit = root / "unified" / containers.CGROUP_PARENT / "abc123" / "system.slice" / "ssh.service"
    unit.mkdir(parents=True)
    left = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    left_in_unit = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    bystander = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True)
    real_rmdir = Path.rmdir

    def rmdir(path):        # a cgroup's files go with its folder; a plain folder's must go first
        for child in path.iterdir():
            if child.is_file():
                child.unlink()
        real_rmdir(path)
    try:
        (group / "cgroup.procs").write_text(f"{left.pid}\n")
        (unit / "cgroup.procs").write_text(f"{left_in_unit.pid}\n")
        monkeypatch.setattr(containers, "CGROUP_ROOT", root)
        monkeypatch.setattr(containers, "RUNTIME_DIR", tmp_path / "run")
        monkeypatch.setattr(Path, "rmdir", rmdir)
        monkeypatch.setattr(containers.procs, "recorded", lambda name: None)   # no daemon of a lab here
        monkeypatch.setattr(containers.procs, "alive", lambda name: False)
        assert containers.remains()
        done = containers.end_leftovers()
        assert f"leftover container process {left.pid} ended" in done
        assert f"leftover container process {left_in_unit.pid} ended" in done
        assert left.wait(timeout=10) == left_in_unit.wait(timeout=10) == -signal.SIGTERM
        assert bystander.poll() is None          # nothing else was touched
        assert not (root / "pids" / containers.CGROUP_PARENT).exists()
        assert not (root / "unified" / containers.CGROUP_PARENT).exists()
        assert not containers.remains()
    finally:
        for proc in (left, left_in_unit, bystander):
            if proc.poll() is None:
                proc.kill()
                proc.wait()


def test_the_core_swap_moves_a_containers_cpuset_and_checks_docker_shows_it(monkeypatch):
    """The equal start and the core swap pin through vagrant.pin_checked: on containers, `docker update
    --cpuset-cpus`, then the container's cpuset as Docker reports it must be the cores asked for."""
    from lab.machines import vagrant
    shown = {"default": "0,1"}
    calls = []

    def docker(*args, **kw):
        calls.append(args)
        if args[0] == "update":
            shown[args[-1][len(containers.PREFIX):]] = "3" if args[2] == "2,3" else args[2]   # Docker ignores a core
        out = json.dumps([{"HostConfig": {"CpusetCpus": shown.get(args[-1][len(containers.PREFIX):], "")}}])
        return subprocess.CompletedProcess(args, 0, out, "")
    monkeypatch.setattr(vagrant, "in_containers", lambda: True)
    monkeypatch.setattr(containers, "docker", docker)
    vagrant.pin_checked("default", "2")
    assert ("update", "--cpuset-cpus", "2", "camel-lab-default") in calls
    assert vagrant.vcpu_placement("default") == "2"
    with pytest.raises(vagrant.MachineError, match="default: its vCPUs are on host cores 3 after the swap, not 2,3"):
        vagrant.pin_checked("default", "2,3", " after the swap")


def test_a_daemon_that_does_not_answer_yet_is_not_running_rather_than_a_traceback(tmp_path, monkeypatch):
    """A dockerd restarted after a kill restores its containers before it answers (`docker version` outlived its 10 s
    on a busy host, and `down` ended in a traceback): not answering in time reads as not running yet."""
    socket = tmp_path / "docker.sock"
    socket.touch()

    def slow(*args, timeout=None, **kw):
        raise subprocess.TimeoutExpired([containers.DOCKER, *args], timeout)
    monkeypatch.setattr(containers, "SOCKET", socket)
    monkeypatch.setattr(containers, "docker", slow)
    monkeypatch.setattr(containers.procs, "alive", lambda name: True)
    assert containers.daemon_running() is False


def test_the_machines_states_are_read_as_vagrants_docker_provider_reads_them(tmp_path, monkeypatch):
    """vagrant.container_states: Vagrant's container id of each machine, looked up in `docker ps` (running) and
    `docker ps -a` (stopped); no id, or one Docker no longer has, is not created."""
    from lab.machines import vagrant
    monkeypatch.setattr(vagrant, "DOTFILE", tmp_path)
    listed = {(): "aaa\n", ("-a",): "aaa\nbbb\n"}
    monkeypatch.setattr(containers, "docker", lambda *args, **kw: subprocess.CompletedProcess(
        args, 0, listed[tuple(a for a in args[1:] if a == "-a")], ""))
    for name, cid in (("default", "aaa"), ("tuned", "bbb")):
        (tmp_path / "machines" / name / "docker").mkdir(parents=True)
        (tmp_path / "machines" / name / "docker" / "id").write_text(cid)
    assert vagrant.container_states() == {"default": "running", "tuned": "stopped"}
    (tmp_path / "machines" / "tuned" / "docker" / "id").write_text("ccc\n")      # removed behind Vagrant's back
    assert vagrant.container_states() == {"default": "running", "tuned": "not_created"}
    (tmp_path / "machines" / "default" / "docker" / "id").unlink()
    assert vagrant.container_states() == {"default": "not_created", "tuned": "not_created"}


def test_the_ssh_config_is_what_vagrant_ssh_config_wrote_for_the_containers(tmp_path, monkeypatch):
    """vagrant.container_ssh_config: each container's address on Docker's bridge, as its docker provider finds it, in
    the words `vagrant ssh-config` wrote for them (the expected text below is its output of 2026-11-30, the
    addresses and the key's folder aside); refused while a machine has no container or no address."""
    from lab.machines import box, vagrant
    monkeypatch.setattr(vagrant, "DOTFILE", tmp_path)
    monkeypatch.setattr(box, "login_key", lambda: Path("/work/c67/.lab/secrets/box_login"))
    with pytest.raises(vagrant.MachineError, match="no container"):
        vagrant.container_ssh_config()
    for name, cid in (("default", "aaa"), ("tuned", "bbb")):
        (tmp_path / "machines" / name / "docker").mkdir(parents=True)
        (tmp_path / "machines" / name / "docker" / "id").write_text(cid + "\n")
    asked = []
    answer = {"out": "192.168.121.3\n192.168.121.2\n"}
    monkeypatch.setattr(containers, "docker", lambda *args, **kw: asked.append(args) or subprocess.CompletedProcess(
        args, 0, answer["out"], ""))
    assert vagrant.container_ssh_config() == (
        "Host default\n  HostName 192.168.121.3\n  User vagrant\n  Port 22\n  UserKnownHostsFile /dev/null\n"
        "  StrictHostKeyChecking no\n  PasswordAuthentication no\n  IdentityFile /work/c67/.lab/secrets/box_login\n"
        "  IdentitiesOnly yes\n  LogLevel FATAL\n\n"
        "Host tuned\n  HostName 192.168.121.2\n  User vagrant\n  Port 22\n  UserKnownHostsFile /dev/null\n"
        "  StrictHostKeyChecking no\n  PasswordAuthentication no\n  IdentityFile /work/c67/.lab/secrets/box_login\n"
        "  IdentitiesOnly yes\n  LogLevel FATAL\n")
    assert asked[-1][-2:] == ("aaa", "bbb")
    answer["out"] = "192.168.121.3\n\n"              # tuned not on the bridge yet
    with pytest.raises(vagrant.MachineError, match="addresses are not known"):
        vagrant.container_ssh_config()
