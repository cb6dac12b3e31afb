"""The machines' base made ahead (lab/machines/ahead.py: a container image's root file system, a VM's box): started
only where `up` will need it, taken by `up`, and otherwise ended with its whole process group, its mounts (and loop
devices) undone and its folder removed."""
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab import paths
from lab.machines import ahead, box, containers, image, provider

TOOLS_MISSING = ahead.tools_missing


@pytest.fixture
def box_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "BOX_DIR", tmp_path / "box")
    monkeypatch.setattr(paths, "LOG_DIR", tmp_path / "log")
    monkeypatch.setattr(ahead, "_building", {})
    monkeypatch.setattr(ahead, "tools_missing", lambda kind=None: [])     # mmdebstrap or not: the stand-ins make it
    return tmp_path / "box"


def stand_in(script: str):
    """ahead.start with `script` (sh, the root folder as $1) making the root file system: its own session, as the
    real one."""
    return lambda suite, kind=provider.CONTAINERS, real=ahead.start: real(suite, ["sh", "-c", script, "sh"], kind)


def child_of(build: ahead.Build) -> int:
    """The PID the stand-in's child wrote in the root folder (waited for: the build starts it; the shell's `>`
    makes the file before it writes the PID, and a CI run read it empty in between)."""
    written, deadline = build.work / "root" / "child", time.monotonic() + 10
    while not (written.exists() and written.read_text().endswith("\n")) and time.monotonic() < deadline:
        time.sleep(0.05)
    return int(written.read_text())


def alive(pid: int) -> bool:
    try:
        return "Z" not in open(f"/proc/{pid}/stat").read().split(")")[-1].split()[0]
    except OSError:
        return False


def test_a_build_up_did_not_take_is_ended_with_its_whole_group_and_its_folder(box_dir, monkeypatch):
    monkeypatch.setattr(ahead, "start", stand_in('sleep 60 & echo $! > "$1/child"; touch "$1/etc-made"; wait'))
    with ahead.images(provider.CONTAINERS, {"bookworm"}, missing=lambda suite: True):
        [build] = ahead._building.values()
        child = child_of(build)
        assert alive(child)
    assert not alive(child), "the build's own child (mmdebstrap, apt, dpkg) must end with it"
    assert not build.work.exists() and ahead._building == {}


def test_a_child_slower_to_stop_than_its_leader_is_waited_for_before_its_folder_goes(box_dir, monkeypatch):
    # the leader sh ends at once on TERM; its child (as dpkg finishing a write) takes a second more
    monkeypatch.setattr(ahead, "start", stand_in(
        '(trap "sleep 1; touch \\"$1/late\\"; exit 0" TERM; while :; do sleep 0.1; done) & '
        'echo $! > "$1/child"; wait'))
    with ahead.images(provider.CONTAINERS, {"bookworm"}, missing=lambda suite: True):
        [build] = ahead._building.values()
        child = child_of(build)
    assert not alive(child) and ahead.group_members(build.proc.pid) == []
    assert not build.work.exists(), "the folder is removed after the last writer in it ended, not before"


def test_bad_input_inside_the_block_cancels_the_build(box_dir, monkeypatch):
    monkeypatch.setattr(ahead, "start", stand_in("sleep 60"))
    with pytest.raises(ValueError, match="bad knob"), \
            ahead.images(provider.CONTAINERS, {"bookworm"}, missing=lambda suite: True):
        build = ahead._building["bookworm"]
        raise ValueError("bad knob")
    assert build.proc.returncode is not None and not build.work.exists()
    assert list(box_dir.iterdir()) == []


def test_up_takes_the_finished_root_file_system(box_dir, monkeypatch):
    monkeypatch.setattr(ahead, "start", stand_in('mkdir "$1/etc" && echo bookworm > "$1/etc/debian_version"'))
    with ahead.images(provider.CONTAINERS, {"bookworm", "trixie"}, missing=lambda suite: suite == "bookworm"):
        assert sorted(ahead._building) == ["bookworm"]          # trixie's image is there: nothing to make
        root = ahead.take("bookworm")
        assert (root / "etc" / "debian_version").read_text() == "bookworm\n"
        assert ahead.take("bookworm") is None                     # taken once; `up` builds anything else itself
    assert root.exists(), "a taken root file system is the image build's to import and remove"
    box.remove_work(root.parent)
    assert not root.parent.exists()


def test_a_failed_build_is_an_error_with_its_last_lines_and_leaves_nothing(box_dir, monkeypatch):
    monkeypatch.setattr(ahead, "start", stand_in('echo "E: Unable to locate package pcp"; exit 100'))
    with ahead.images(provider.CONTAINERS, {"bookworm"}, missing=lambda suite: True):
        work = ahead._building["bookworm"].work
        with pytest.raises(box.BoxError, match="exited 100(.|\n)*Unable to locate package pcp"):
            ahead.take("bookworm")
    assert not work.exists()


def test_nothing_is_made_ahead_where_the_base_is_there(box_dir, monkeypatch):
    monkeypatch.setattr(ahead, "start", lambda suite, kind: pytest.fail("started a build"))
    for kind in (provider.LIBVIRT, provider.CONTAINERS):
        with ahead.images(kind, {"bookworm"}, missing=lambda suite: False):
            pass


def test_a_vms_box_made_ahead_is_moved_into_place_by_up(box_dir, monkeypatch):
    # emulated VMs waited 16 s for the jar and the knobs' check before their box's 67 s began (2026-12-02)
    target = box_dir / "bookworm-0123456789ab.box"
    monkeypatch.setattr(box, "box_file", lambda suite: target)
    monkeypatch.setattr(box, "build", lambda *a, **k: pytest.fail("built the box again"))
    monkeypatch.setattr(ahead, "start", stand_in(f'echo box > "$1/{target.name}"'))
    with ahead.images(provider.LIBVIRT, {"bookworm"}, missing=lambda suite: not target.exists()):
        build = ahead._building["bookworm"]
        assert not target.exists(), "the box appears only under up's lock"
        path, built = box.ensure(None, "bookworm", made_ahead=lambda: ahead.take("bookworm"))
    assert (path, built) == (target, True) and target.read_text() == "box\n"
    assert not build.work.exists() and sorted(p.name for p in box_dir.iterdir()) == [target.name]


def test_a_vms_box_build_is_named_as_such(box_dir, monkeypatch, capsys):
    monkeypatch.setattr(ahead, "start", lambda suite, kind, real=ahead.start: real(suite, ["sleep", "60"], kind))
    with ahead.images(provider.LIBVIRT, {"bookworm"}, missing=lambda suite: True):
        build = ahead._building["bookworm"]
        assert (build.kind, build.what, build.log.name) == (provider.LIBVIRT, "bookworm box", "box-bookworm.log")
    assert "building the bookworm box for the machines" in capsys.readouterr().out
    assert not build.work.exists()


def test_a_vms_box_waits_for_its_disks_tools_too(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))    # a host with none of them on its PATH (sbin is looked in anyway)
    missing = ahead.tools_missing(provider.LIBVIRT)
    assert {"mmdebstrap", "qemu-utils", "extlinux"} <= set(missing)
    assert "qemu-utils" not in ahead.tools_missing(provider.CONTAINERS)


def test_nothing_is_made_ahead_before_the_host_has_mmdebstrap(box_dir, tmp_path, monkeypatch, capsys):
    # a new host's first run: the build started beside the prerequisites' apt and found no mmdebstrap (2026-12-01)
    monkeypatch.setattr(ahead, "start", lambda suite, kind: pytest.fail("started a build"))
    monkeypatch.setattr(ahead, "tools_missing", TOOLS_MISSING)
    monkeypatch.setenv("PATH", str(tmp_path))          # a host where mmdebstrap is not installed
    with ahead.images(provider.CONTAINERS, {"bookworm"}, missing=lambda suite: True):
        assert ahead._building == {}
    assert "mmdebstrap is not installed yet" in capsys.readouterr().out
    with ahead.images(provider.LIBVIRT, {"bookworm"}, missing=lambda suite: True):
        assert ahead._building == {}


def test_up_cancels_the_builds_of_suites_it_does_not_need(box_dir, monkeypatch):
    monkeypatch.setattr(ahead, "start", stand_in("sleep 60"))
    with ahead.images(provider.CONTAINERS, {"bookworm", "trixie"}, missing=lambda suite: True):
        trixie = ahead._building["trixie"]
        ahead.cancel_except({"bookworm"})       # a --set jvm_version=17 the guess from the knob sets missed
        assert sorted(ahead._building) == ["bookworm"] and not trixie.work.exists()


def test_the_folders_of_a_killed_command_are_removed_by_the_next(box_dir, monkeypatch):
    dead = subprocess.Popen(["true"])
    dead.wait()
    for owner in (dead.pid, os.getpid()):
        work = box.work_dir(ahead.PREFIX)
        (work / ahead.OWNER).write_text(f"{owner}\n")
    other = box.work_dir("build-")          # a VM box's build by `up` itself: not this module's
    monkeypatch.setattr(ahead, "start", lambda suite, kind: pytest.fail("started a build"))
    with ahead.images(provider.CONTAINERS, {"bookworm"}, missing=lambda suite: False):
        pass
    owners = sorted((w / ahead.OWNER).read_text().strip() for w in box_dir.glob(f"{ahead.PREFIX}*"))
    assert owners == [str(os.getpid())] and other.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="mounting needs root (CI runs as root)")
def test_a_folder_is_removed_only_once_nothing_is_mounted_in_it(tmp_path, monkeypatch):
    """A stopped chroot build may leave /proc, /sys or /dev mounted in its root: removing the folder then would
    empty them on the host's side. They are unmounted first; the folder stays while one cannot be."""
    work = tmp_path / "image-x"
    (work / "root" / "proc").mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "tmpfs", str(work / "root" / "proc")], check=True)
    (work / "root" / "proc" / "kept").write_text("host's")
    assert box.mounts_under(work) == [(work / "root" / "proc").resolve()]
    busy = subprocess.run
    nothing = subprocess.CompletedProcess([], 0, "", "")
    monkeypatch.setattr(box.subprocess, "run", lambda *a, **k: nothing)    # an umount (or losetup) that does nothing
    box.remove_work(work)
    assert (work / "root" / "proc" / "kept").exists(), "removed with a mount inside"
    monkeypatch.setattr(box.subprocess, "run", busy)
    box.remove_work(work)
    assert not work.exists() and box.mounts_under(tmp_path) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="loop devices need root (CI runs as root)")
def test_a_stopped_box_builds_loop_devices_are_released_with_its_folder(tmp_path):
    """A VM box's build stopped between losetup and its own cleanup leaves a loop device on disk.raw: it would hold
    the 8 GB file after the folder is removed."""
    work = tmp_path / "image-x"
    (work / "build").mkdir(parents=True)
    raw = work / "build" / "disk.raw"
    with open(raw, "wb") as f:
        f.truncate(8 * 1024**2)
    loop = subprocess.run(["losetup", "--find", "--show", str(raw)], capture_output=True, text=True, check=True)
    assert box.loops_under(work) == [loop.stdout.strip()]
    box.remove_work(work)
    assert not work.exists() and box.loops_under(tmp_path) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="mount namespaces need root (CI runs as root)")
def test_a_builds_mounts_are_seen_by_no_other_namespace(tmp_path):
    """The build mounts in a namespace of its own (ahead.private_mounts): neither the host's nor one copied from it
    while they are mounted (a Docker daemon started under `ip netns exec` beside the build) holds its disk, so its
    partitions can be released (CI's e2e failed there: "error deleting partition 1")."""
    disk = tmp_path / "root"
    disk.mkdir()
    script = (f"from lab.machines import ahead; import subprocess, sys; ahead.private_mounts(); "
              f"subprocess.run(['mount', '-t', 'tmpfs', 'tmpfs', {str(disk)!r}], check=True); "
              f"print('mounted', flush=True); sys.stdin.readline()")
    build = subprocess.Popen([sys.executable, "-c", script], cwd=paths.ROOT, stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, text=True)
    try:
        assert build.stdout.readline().strip() == "mounted"
        inside = Path(f"/proc/{build.pid}/mountinfo").read_text()
        assert f" {disk.resolve()} " in inside, "the build does not see its own mount"
        assert box.mounts_under(tmp_path) == [], "the host sees the build's mount"
        copied = subprocess.run(["unshare", "--mount", "cat", "/proc/self/mountinfo"], capture_output=True,
                                text=True, check=True)
        assert f" {disk.resolve()} " not in copied.stdout, "a namespace copied from the host's holds it"
    finally:
        build.communicate("\n", timeout=30)
    assert box.mounts_under(tmp_path) == []


def test_an_image_is_known_from_the_daemons_own_table_while_it_is_not_running(tmp_path, monkeypatch):
    monkeypatch.setattr(containers, "DATA_ROOT", tmp_path)
    monkeypatch.setattr(containers, "daemon_running", lambda: False)
    name = "camel-lab/bookworm-base:d1b76b36835d-c4"
    assert not image.recorded(name)                       # no table yet: a host that never ran the lab's daemon
    table = tmp_path / "image" / "overlay2" / "repositories.json"
    table.parent.mkdir(parents=True)
    table.write_text(json.dumps({"Repositories": {"camel-lab/bookworm-base": {name: "sha256:cd35"}}}))
    assert image.recorded(name)
    assert not image.recorded("camel-lab/bookworm-base:000000000000-c4")     # another recipe's
    table.write_text("{")                                                     # half written: build it
    assert not image.recorded(name)


def test_the_build_process_stops_when_its_command_dies(tmp_path):
    """python -m lab.machines.ahead gets SIGHUP when the command that started it dies (PR_SET_PDEATHSIG) and ends
    its group; here its parent is already gone when it starts."""
    done = subprocess.run([sys.executable, "-m", "lab.machines.ahead", provider.CONTAINERS, "bookworm", "1",
                           str(tmp_path / "root")],
                          cwd=paths.ROOT, capture_output=True, text=True, timeout=60, start_new_session=True)
    assert done.returncode == 1 and not (tmp_path / "root").exists()


@pytest.mark.skipif(not Path("/proc/self/autogroup").exists() or os.geteuid() != 0,
                    reason="no autogroups in this kernel, or not root (a negative nice needs CAP_SYS_NICE)")
def test_the_build_goes_first_in_the_cpu():
    """Its own session (an autogroup of its own) weighs more than the command's, whose jar and checks can wait."""
    other = subprocess.Popen(["sleep", "30"], start_new_session=True)
    try:
        ahead.first(other.pid)
        assert Path(f"/proc/{other.pid}/autogroup").read_text().split()[-1] == str(ahead.AUTOGROUP_NICE)
    finally:
        other.kill()
        other.wait()
