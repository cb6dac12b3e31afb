"""Host-side decisions that need no VM: accelerator, CPU placement, prerequisites, box recipe, guard."""
import os
import re
import shutil

import pytest
import yaml

from lab import machines, paths
from lab.machines import accel, box, netns, placement, prereqs, vagrant
from lab.provision import catalog

CPUINFO_VMX = "processor\t: 0\nflags\t\t: fpu vme de pse tsc msr vmx sse\n"
CPUINFO_PLAIN = "processor\t: 0\nflags\t\t: fpu vme de pse tsc msr sse hypervisor\n"


# --- accelerator -------------------------------------------------------------------------------

def test_no_virtualization_flag_means_tcg():
    assert accel.detect("auto", cpuinfo=CPUINFO_PLAIN)[0] == "tcg"
    with pytest.raises(ValueError, match="kvm requested"):
        accel.detect("kvm", cpuinfo=CPUINFO_PLAIN)


def test_tcg_request_is_honoured_without_looking():
    assert accel.detect("tcg", cpuinfo=CPUINFO_VMX) == ("tcg", "requested")


def test_kvm_only_when_the_test_boot_works(monkeypatch, tmp_path):
    monkeypatch.setattr(accel.os, "access", lambda path, mode: True)
    kernel = tmp_path / "vmlinuz-6.1.0"
    kernel.write_text("")
    monkeypatch.setattr(accel, "_test_kernel", lambda: kernel)
    assert accel.detect("auto", cpuinfo=CPUINFO_VMX, test_boot=lambda k: True)[0] == "kvm"
    acc, why = accel.detect("auto", cpuinfo=CPUINFO_VMX, test_boot=lambda k: False)
    assert acc == "tcg" and "test boot" in why


def test_a_kernels_kvm_test_boot_runs_once_per_command(monkeypatch, tmp_path):
    """The image made ahead asks for the machines' kind before the run does: QEMU's test boot is not run twice."""
    booted = []

    class Banner:
        stdout = "Linux version 6.1.0"
    monkeypatch.setattr(accel.subprocess, "run", lambda cmd, **kw: booted.append(cmd) or Banner())
    kernel = tmp_path / "vmlinuz-6.1.0"
    accel.kvm_test_boot.cache_clear()
    try:
        assert accel.kvm_test_boot(kernel) == accel.kvm_test_boot(kernel) and len(booted) == 1
    finally:
        accel.kvm_test_boot.cache_clear()


def test_flag_detection_reads_the_flags_line_only():
    assert accel.cpu_has_virtualization(CPUINFO_VMX)
    assert not accel.cpu_has_virtualization("model name\t: vmx-like marketing name\n" + CPUINFO_PLAIN)


# --- CPU placement -----------------------------------------------------------------------------

def resolve(setting, host_cores):
    return placement.resolve(setting, machines.NAMES, host_cores)


def test_auto_placement_splits_host_cores_evenly():
    assert resolve("auto", [0, 1]) == {"default": "0", "tuned": "1"}
    assert resolve("auto", [0, 1, 2, 3, 4]) == {"default": "0,1", "tuned": "2,3"}
    assert resolve("auto", [0]) == {}
    assert resolve("none", [0, 1, 2, 3]) == {}


def test_explicit_placement_is_checked_against_the_host():
    assert resolve("default=0-1;tuned=2-3", [0, 1, 2, 3]) == {"default": "0,1", "tuned": "2,3"}
    with pytest.raises(ValueError, match="do not exist"):
        resolve("default=0;tuned=7", [0, 1])
    with pytest.raises(ValueError, match="same number"):
        resolve("default=0;tuned=1-2", [0, 1, 2])


class FakeLibvirt:
    """virsh's answers for two running domains of two vCPUs each: what vcpucount, vcpupin and emulatorpin
    say and do (the real ones are used on the machines: every run's equal start)."""

    def __init__(self, cpusets, refuse_pin_to=None):
        self.affinity = {vagrant.DOMAIN_PREFIX + n: [c, c] for n, c in cpusets.items()}
        self.refuse_pin_to = refuse_pin_to

    def virsh(self, *args, check=False):
        import subprocess
        command, domain, rest = args[0], args[1], args[2:]
        if command == "vcpucount":
            return subprocess.CompletedProcess(args, 0, "2\n", "")
        if command == "vcpupin" and not rest:
            table = "".join(f" {i}      {cores}\n" for i, cores in enumerate(self.affinity[domain]))
            return subprocess.CompletedProcess(args, 0, "VCPU   CPU Affinity\n----------------------\n" + table, "")
        if command == "vcpupin":
            if rest[1] != self.refuse_pin_to:
                self.affinity[domain][int(rest[0])] = "-".join(rest[1].split(",")) if "," in rest[1] else rest[1]
            return subprocess.CompletedProcess(args, 0, "", "")
        return subprocess.CompletedProcess(args, 0, "", "")


def test_both_machines_share_the_cores_while_they_start_then_each_has_its_own(monkeypatch):
    cpusets = {"default": "0", "tuned": "1"}
    fake = FakeLibvirt(cpusets)
    monkeypatch.setattr(netns, "virsh", fake.virsh)
    assert placement.shared(cpusets) == "0,1"
    with vagrant.cores_shared(cpusets, log=lambda *a: None):
        assert vagrant.vcpu_placement("default") == vagrant.vcpu_placement("tuned") == "0-1"
    assert (vagrant.vcpu_placement("default"), vagrant.vcpu_placement("tuned")) == ("0", "1")


def test_a_failed_start_still_gives_each_machine_its_own_cores(monkeypatch):
    fake = FakeLibvirt({"default": "0,1", "tuned": "2,3"})
    monkeypatch.setattr(netns, "virsh", fake.virsh)
    with pytest.raises(RuntimeError, match="the check failed"):
        with vagrant.cores_shared({"default": "0,1", "tuned": "2,3"}, log=lambda *a: None):
            raise RuntimeError("the check failed")
    assert (vagrant.vcpu_placement("default"), vagrant.vcpu_placement("tuned")) == ("0-1", "2-3")


def test_the_load_does_not_run_on_shared_cores(monkeypatch):
    """libvirt keeps the shared cores (a pin refused without a word): the run stops before its load."""
    monkeypatch.setattr(netns, "virsh", FakeLibvirt({"default": "0", "tuned": "1"}, refuse_pin_to="1").virsh)
    with pytest.raises(vagrant.MachineError, match="tuned: its vCPUs are on host cores 0-1 after the start, not 1"):
        with vagrant.cores_shared({"default": "0", "tuned": "1"}, log=lambda *a: None):
            pass


def test_unpinned_machines_stay_unpinned(monkeypatch):
    monkeypatch.setattr(netns, "virsh", lambda *a, **k: pytest.fail("no virsh without a placement"))
    with vagrant.cores_shared({}):
        pass


# --- prerequisites -----------------------------------------------------------------------------

def test_missing_prerequisites_map_to_packages_once():
    present = {"vagrant", "ip"}
    need = prereqs.missing(present=lambda check: check in present)
    assert "vagrant" not in need and "qemu-system-x86" in need
    assert need.count("libvirt-daemon-system") == 1


def test_non_debian_hosts_get_the_exact_list():
    with pytest.raises(prereqs.PrereqError, match="qemu-system-x86 slirp4netns"):
        prereqs.install(["qemu-system-x86", "slirp4netns"], os_release='ID="fedora"\n')


def test_a_failed_apt_install_is_reported_with_apts_words(monkeypatch):
    monkeypatch.setattr(prereqs.os, "geteuid", lambda: 0)
    calls = []

    class Done:
        def __init__(self, rc, err=""):
            self.returncode, self.stderr, self.stdout = rc, err, ""

    def fake_run(cmd, **kw):
        calls.append(cmd[:2])
        return Done(0) if cmd[1] == "update" else Done(100, "E: Unable to locate package no-such-pkg")

    with pytest.raises(prereqs.PrereqError, match="Unable to locate package no-such-pkg"):
        prereqs.install(["no-such-pkg"], os_release="ID=debian\n", run=fake_run)
    assert calls == [["apt-get", "install"], ["apt-get", "update"], ["apt-get", "install"]]


def test_debian_family_detection():
    assert prereqs.is_debian_like('ID=ubuntu\nID_LIKE=debian\n')
    assert prereqs.is_debian_like('ID=debian\n')
    assert not prereqs.is_debian_like('ID="arch"\n')


# --- base box recipe ---------------------------------------------------------------------------

def test_recipe_hash_changes_with_any_recipe_file(tmp_path):
    recipe = tmp_path / "box"
    shutil.copytree(box.RECIPE_DIR, recipe)
    key = "ssh-ed25519 AAAAC3Nza one"
    first = box.recipe_hash("bookworm", recipe, key)
    assert first == box.recipe_hash("bookworm", recipe, key)
    assert first != box.recipe_hash("trixie", recipe, key)
    # a suite's own package list changes that suite's box only
    trixie = box.recipe_hash("trixie", recipe, key)
    (recipe / "suites" / "trixie.txt").write_text("openjdk-25-jre-headless\n")
    assert box.recipe_hash("trixie", recipe, key) != trixie
    assert box.recipe_hash("bookworm", recipe, key) == first
    assert [p.name for p in box.recipe_files("trixie", recipe) if p.parent.name == "suites"] == ["trixie.txt"]
    assert first != box.recipe_hash("bookworm", recipe, "ssh-ed25519 AAAAC3Nza two")   # another lab's key
    (recipe / "packages.txt").write_text((recipe / "packages.txt").read_text() + "htop\n")
    assert box.recipe_hash("bookworm", recipe, key) != first
    assert "htop" in box.packages(recipe)


def test_login_key_is_made_once_and_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(box, "LOGIN_KEY", tmp_path / "secrets" / "box_login")
    made = box.login_key()
    public = made.with_suffix(".pub").read_text()
    assert public.startswith("ssh-ed25519 ") and made.stat().st_mode & 0o077 == 0
    assert box.login_key() == made and made.with_suffix(".pub").read_text() == public


ROLES = paths.ROOT / "ansible" / "roles"


def _role_tasks(skip: tuple[str, ...] = ()):
    """Every task of every role's task files (but the roles skipped)."""
    for f in ROLES.glob("*/tasks/*.yml"):
        if f.parent.parent.name not in skip:
            yield from (task for task in yaml.safe_load(f.read_text()) or [] if isinstance(task, dict))


def _role_apt_packages(skip: tuple[str, ...] = ()) -> set[str]:
    """Every package an apt task of the roles names, with role-default lists resolved."""
    defaults = {}
    for f in ROLES.glob("*/defaults/main.yml"):
        defaults.update(yaml.safe_load(f.read_text()) or {})
    found = set()
    for task in _role_tasks(skip):
        names = (task.get("ansible.builtin.apt") or {}).get("name")
        if isinstance(names, str) and names.startswith("{{"):
            names = defaults[names.strip("{} ")]
        found.update([names] if isinstance(names, str) else names or [])
    return found


@pytest.mark.parametrize("java, suite", sorted(box.SUITES.items()))
def test_each_box_preloads_every_package_the_roles_install_on_it(java, suite):
    """Each suite's box holds what the lab machines' roles install (the loadgen role runs on real generator hosts
    only), the Java of the knob jvm_version that chooses that box among them."""
    wanted = {name.replace("{{ jvm_version }}", str(java)) for name in _role_apt_packages(skip=("loadgen",))}
    assert {"apache2", f"openjdk-{java}-jre-headless", "pcp", "python3-apt"} <= wanted, wanted
    missing = (wanted - set(box.packages()) - set(box.packages(listing="preload.txt"))
               - set(box.packages(listing=f"suites/{suite}.txt")))
    assert not missing, (f"add to lab/machines/box/preload.txt or suites/{suite}.txt (provisioning under TCG would "
                         f"install them): {sorted(missing)}")


def test_every_java_release_has_its_box():
    """The knob's choices are the boxes' Javas, and each suite has its package list."""
    assert set(catalog.specs()["jvm_version"]["choices"]) == set(box.SUITES)
    assert {p.stem for p in (box.RECIPE_DIR / "suites").glob("*.txt")} == set(box.SUITES.values())
    assert box.suite_of("21") == "trixie"
    with pytest.raises(box.BoxError, match="jvm_version=11: no box carries it"):
        box.suite_of(11)


def _role_enabled_units() -> set[str]:
    """Every unit a systemd task of the roles enables whatever the knobs (enabled: true, no condition)."""
    found = set()
    for task in _role_tasks():
        unit = task.get("ansible.builtin.systemd_service") or {}
        if unit.get("enabled") is True and "when" not in task:
            found.add(unit["name"] if "." in unit["name"] else unit["name"] + ".service")
    return found


def test_box_enables_only_units_every_machine_runs():
    enabled = set(box.packages(listing="units.txt"))
    assert "apache2.service" in enabled
    stray = enabled - _role_enabled_units()
    assert not stray, f"lab/machines/box/units.txt enables what no role enables on every machine: {sorted(stray)}"


def test_a_unit_the_box_holds_starts_once_its_role_wrote_what_it_waits_for():
    """A box unit held by lab-box-hold.conf starts only when its condition's file exists: one its role writes
    (dest) or makes (creates) on every machine, or the unit would never start again after a reboot."""
    made = set()
    for task in _role_tasks():
        for module in task.values():
            if isinstance(module, dict):
                made.update(str(module[key]) for key in ("dest", "creates", "path") if key in module)
    holds = sorted((box.RECIPE_DIR / "files" / "etc" / "systemd" / "system").glob("*.d/lab-box-hold.conf"))
    assert {h.parent.name for h in holds} == {"apache2.service.d", "pmcd.service.d"}
    for hold in holds:
        unit = hold.parent.name.removesuffix(".d")
        assert unit in box.packages(listing="units.txt"), f"{unit} is held but not enabled in the box"
        waits_for = re.findall(r"^ConditionPathExists=(\S+)$", hold.read_text(), re.M)
        assert waits_for and set(waits_for) <= made, f"{hold.name} of {unit}: no role makes {waits_for}"


def test_box_name_carries_the_recipe():
    assert box.box_name("bookworm") == f"lab/bookworm-{box.recipe_hash('bookworm')[:12]}"


# --- egress guard ------------------------------------------------------------------------------

def test_guard_lets_out_only_dns_and_web_to_public_addresses():
    rules = netns.guard_ruleset(["192.0.2.0/24"])
    assert f"ip daddr {netns.SLIRP_DNS} udp dport 53 accept" in rules
    assert "tcp dport { 80, 443 } accept" in rules
    assert "192.0.2.0/24" in rules and "10.0.0.0/8" in rules and "192.168.0.0/16" in rules
    # the blocked set is checked before the web ports, and everything else is dropped
    assert rules.index("@blocked counter drop") < rules.index("tcp dport { 80, 443 }")
    assert "counter drop\n  }" in rules


# --- /dev/kvm as libvirt sees it ----------------------------------------------------------------

def test_kvm_access_follows_the_mode_bits_of_owner_group_and_others():
    kvm_gid, qemu_uid = 107, 64055
    assert not netns.permits_read_write(0o600, 0, 0, qemu_uid, [kvm_gid])     # this host's /dev/kvm
    assert netns.permits_read_write(0o660, 0, kvm_gid, qemu_uid, [kvm_gid])   # Debian's udev rule
    assert not netns.permits_read_write(0o640, 0, kvm_gid, qemu_uid, [kvm_gid])
    assert netns.permits_read_write(0o600, qemu_uid, 0, qemu_uid, [])
    assert netns.permits_read_write(0o666, 0, 0, qemu_uid, [])
    assert not netns.permits_read_write(0o066, qemu_uid, kvm_gid, qemu_uid, [kvm_gid])   # owner bits win
    assert netns.permits_read_write(0o000, 5, 5, 0, [])


def test_libvirt_is_shown_no_kvm_only_where_qemus_user_cannot_use_it(monkeypatch, tmp_path):
    device = tmp_path / "kvm"
    device.touch(mode=0o600)
    assert netns.kvm_unusable_by_qemu(device, "nobody")
    assert not netns.kvm_unusable_by_qemu(device, "root")
    assert netns.kvm_unusable_by_qemu(device, "no-such-user-here")
    device.chmod(0o666)
    assert not netns.kvm_unusable_by_qemu(device, "nobody")
    assert not netns.kvm_unusable_by_qemu(tmp_path / "absent", "nobody")

    monkeypatch.setattr(netns, "KVM_STAND_IN", tmp_path / "no-kvm")
    monkeypatch.setattr(netns, "QEMU_CONF", tmp_path / "host-qemu.conf")
    monkeypatch.setattr(netns, "LAB_QEMU_CONF", tmp_path / "lab-qemu.conf")
    (tmp_path / "host-qemu.conf").write_text('user = "libvirt-qemu"\n  namespaces = [ "mount" ]\n#namespaces = x\n')
    monkeypatch.setattr(netns, "kvm_unusable_by_qemu", lambda: True)
    lines = netns._kvm_hidden_mounts()
    assert lines == (f"mount --bind {tmp_path / 'no-kvm'} /dev/kvm; "
                     f"mount --bind {tmp_path / 'lab-qemu.conf'} {tmp_path / 'host-qemu.conf'}; ")
    assert (tmp_path / "no-kvm").stat().st_mode & 0o777 == 0o600
    conf = (tmp_path / "lab-qemu.conf").read_text()
    assert 'user = "libvirt-qemu"' in conf and "#namespaces = x" in conf
    assert [line for line in conf.splitlines() if line.strip().startswith("namespaces")] == ["namespaces = []"]
    monkeypatch.setattr(netns, "kvm_unusable_by_qemu", lambda: False)
    assert netns._kvm_hidden_mounts() == ""


# --- one lab per host --------------------------------------------------------------------------

def _fake_namespace(monkeypatch, tmp_path, owner):
    ns = tmp_path / "netns"
    ns.write_text("")
    monkeypatch.setattr(netns, "NETNS_FILE", ns)
    monkeypatch.setattr(netns, "OWNER_FILE", tmp_path / "owner")
    if owner is not None:
        (tmp_path / "owner").write_text(f"{owner}\n")


def _other_checkout(tmp_path, running: bool):
    """A checkout beside ours whose lab recorded one process: this test's own (running) or a finished one."""
    from lab import paths, procs
    other = tmp_path / "other-checkout"
    run_dir = other / paths.RUN_DIR.relative_to(paths.ROOT)
    run_dir.mkdir(parents=True)
    (other / "start.sh").write_text("")
    if running:
        procs.record("slirp4netns", os.getpid(), run_dir)
    else:
        (run_dir / "slirp4netns.pid").write_text(f"{2 ** 22 + 1}\nslirp4netns\n")   # above pid_max: never alive
    return other


def test_a_namespace_of_another_live_checkout_is_reported(monkeypatch, tmp_path):
    other = _other_checkout(tmp_path, running=True)
    _fake_namespace(monkeypatch, tmp_path, other)
    assert netns.foreign_owner() == str(other)


def test_a_namespace_whose_lab_no_longer_runs_blocks_nobody(monkeypatch, tmp_path):
    """What a host keeps after a restart (CI's copy of this one included): the namespace's file and its owner's
    records, none of its processes. The check that blocked CI's e2e stage then named a lab that was not there."""
    other = _other_checkout(tmp_path, running=False)
    _fake_namespace(monkeypatch, tmp_path, other)
    monkeypatch.setattr(netns, "_pids_in_namespace", lambda: [])
    assert netns.foreign_owner() is None
    monkeypatch.setattr(netns, "_pids_in_namespace", lambda: [4242])     # a guest still runs in it
    assert netns.foreign_owner() == str(other)


def test_our_own_or_an_orphaned_namespace_is_ours_to_clean(monkeypatch, tmp_path):
    from lab import paths
    _fake_namespace(monkeypatch, tmp_path, paths.ROOT)
    assert netns.foreign_owner() is None
    _fake_namespace(monkeypatch, tmp_path, tmp_path / "deleted-checkout")
    assert netns.foreign_owner() is None
    _fake_namespace(monkeypatch, tmp_path, None)
    assert netns.foreign_owner() is None
