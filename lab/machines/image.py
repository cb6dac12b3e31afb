"""A suite's box as a system container's image (provider containers): the box recipe's root file system without
what only a VM boots with (the host's kernel runs a container), imported into the lab's Docker daemon and tagged
with the same recipe hash as the suite's VM box, so a VM and a container of one recipe carry the same software.
Two layers: a base that lets nobody log in (the recipe without a login key: one per host, shared by every
checkout, ~1 min of mmdebstrap), and this checkout's image, the base with its login key (seconds): a second
clone no longer builds the root file system again. Building needs root (chroot, mounts)."""
from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path

from lab import steps
from lab.machines import box, containers

BOOT_ONLY = ("linux-image-amd64", "initramfs-tools")    # a VM's boot: the container runs on the host's kernel
# Bump when what is changed below for a container changes.
CONTAINER_LAYOUT_VERSION = 4        # 3: an init before systemd (its cgroup, the network settings); 4: a keyless
                                    # base and a checkout's keyed layer
# Units a container must not run: Docker gives it its interfaces, addresses, name and resolver (networkd would
# take the interfaces over), and the host's kernel its modules, its mounts of /sys and the consoles.
MASKED = ("systemd-networkd.service", "systemd-networkd.socket", "systemd-networkd-wait-online.service",
          "systemd-modules-load.service", "systemd-remount-fs.service", "systemd-udevd.service",
          "systemd-udevd-control.socket", "systemd-udevd-kernel.socket", "systemd-udev-trigger.service",
          "sys-kernel-config.mount", "sys-kernel-debug.mount", "sys-kernel-tracing.mount", "dev-hugepages.mount",
          "systemd-journald-audit.socket", "lab-identity.service", "console-getty.service")
# The image's own settings: systemd as PID 1 (after INIT below), told it runs in a container (docker import takes
# no STOPSIGNAL: containers.SYSTEMD_ARGS gives it).
INIT = "/usr/local/sbin/lab-container-init"
CHANGES = (f'CMD ["{INIT}"]', "ENV container=docker")


def image_name(suite: str) -> str:
    return f"camel-lab/{suite}:{box.recipe_hash(suite)[:12]}-c{CONTAINER_LAYOUT_VERSION}"


def base_name(suite: str) -> str:
    """The image every checkout's starts from: the recipe without a login key."""
    return f"camel-lab/{suite}-base:{box.recipe_hash(suite, login_public_key='')[:12]}-c{CONTAINER_LAYOUT_VERSION}"


def present(name: str) -> bool:
    return containers.docker("image", "inspect", name, timeout=30).returncode == 0


def recorded(name: str) -> bool:
    """Image `name` is in the lab's daemon: asked where it runs, else read from its data root's own table of tags
    (a daemon that is not running keeps its images: a lab taken down, a host rebooted)."""
    if containers.daemon_running():
        return present(name)
    try:
        tags = json.loads((containers.DATA_ROOT / "image" / "overlay2" / "repositories.json").read_text())
        repository = name.rsplit(":", 1)[0]
        known = {**tags["Repositories"].get(repository, {}), **tags["Repositories"].get(f"docker.io/{repository}", {})}
    except (OSError, ValueError, KeyError, AttributeError):
        return False
    return name in known or f"docker.io/{name}" in known


def ensure(settings, suite: str, made_ahead: Callable[[], Path | None] = lambda: None) -> tuple[str, bool]:
    """The suite's image in the lab's daemon (running), made when missing: its base built first where that is
    missing too, from the root file system `made_ahead()` gives (lab/machines/ahead.py) or one made now. Returns
    (name, made_now)."""
    name, base = image_name(suite), base_name(suite)
    if present(name):
        return name, False
    if not present(base):
        build(settings, suite, base, made=made_ahead())
    keyed(base, name, box.login_key().with_suffix(".pub").read_text())
    _remove_stale(f"camel-lab/{suite}", keep=name)      # the keyed images first: they stand on their bases
    _remove_stale(f"camel-lab/{suite}-base", keep=base)
    return name, True


def keyed(base: str, name: str, login_public_key: str) -> None:
    """Image `name`: `base` whose vagrant user lets this checkout's login key in (a throwaway container writes
    authorized_keys as customize.sh would; its settings, systemd's CMD, given back on commit)."""
    steps.note(f"{name}: {base} with this checkout's login key")
    keying = f"camel-lab-keying-{os.getpid()}"
    containers.docker("rm", "-f", keying)
    try:
        done = containers.docker("run", "-i", "--name", keying, "--network", "none", base, "/bin/sh", "-c",
                                 "cat > /home/vagrant/.ssh/authorized_keys && chown vagrant:vagrant "
                                 "/home/vagrant/.ssh/authorized_keys && chmod 600 /home/vagrant/.ssh/authorized_keys",
                                 input=login_public_key, text=True)
        if done.returncode == 0:
            done = containers.docker("commit", *(a for c in CHANGES for a in ("--change", c)), keying, name)
        if done.returncode != 0:
            raise box.BoxError(f"image build failed while keying {name}: docker exited {done.returncode}: "
                               f"{done.stderr.strip()[-400:]}")
    finally:
        containers.docker("rm", "-f", keying)


def _remove_stale(repository: str, keep: str) -> None:
    """The repository's images but `keep`: older recipes', or another checkout's login key (made again from the
    base in seconds). The other suite's stay: the other machine may run it."""
    out = containers.docker("image", "ls", repository, "--format", "{{.Repository}}:{{.Tag}}").stdout
    for old in out.split():
        if old != keep:
            containers.docker("image", "rm", old)


# What the container's PID 1 does before it becomes systemd. Docker mounts /proc/sys and every cgroup hierarchy
# read-only. Two mounts are made writable again, before systemd starts (as a unit of its own, the second was raced:
# "Failed at step CGROUP": one twin's unit failed in each of two ups, 2026-11-29):
# - systemd's own v1 hierarchy (name=systemd, no resource controls): without it systemd cannot make a unit's
#   cgroup there, logs it for every process it starts, and now and then fails to start one. The controllers'
#   hierarchies (memory, cpu, ...) stay read-only: the machine must not raise its own limits.
# - /proc/sys/net: a machine's own network namespace's settings (the base_sysctl values a container may take:
#   lab/provision/machine_fit.py). The kernel keeps the host's own settings read-only outside the host's
#   namespace whatever the mount says.
INIT_SCRIPT = """#!/bin/sh
# The container's PID 1 until systemd replaces it (lab/machines/image.py says why).
mount -o remount,bind,rw /sys/fs/cgroup/systemd
mount --bind /proc/sys/net /proc/sys/net && mount -o remount,bind,rw /proc/sys/net
exec /sbin/init "$@"
"""


def container_tweaks(root: Path) -> None:
    """What a container's systemd must not start, masked in the root file system; the init that makes its own
    cgroup hierarchy and network settings writable."""
    units = root / "etc" / "systemd" / "system"
    units.mkdir(parents=True, exist_ok=True)
    for unit in MASKED:
        link = units / unit
        link.unlink(missing_ok=True)
        link.symlink_to("/dev/null")
    init = root / INIT.lstrip("/")
    init.parent.mkdir(parents=True, exist_ok=True)
    init.write_text(INIT_SCRIPT)
    init.chmod(0o755)


def root_filesystem(settings, suite: str, root: Path) -> None:
    """The base's root file system in the empty folder `root`: the recipe's without a VM's boot and login key,
    with the changes a container needs. Run by `ensure` or ahead of it (lab/machines/ahead.py)."""
    box.root_filesystem(settings, suite, root, [p for p in box.packages() if p not in BOOT_ONLY],
                        login_public_key="")
    container_tweaks(root)


def build(settings, suite: str, name: str, made: Path | None = None) -> None:
    """Image `name`: the root file system `made` ahead (its work folder is removed here), or one made now."""
    work = made.parent if made is not None else box.work_dir("image-")
    root = work / "root"
    try:
        if made is None:
            root.mkdir()
            root_filesystem(settings, suite, root)
        steps.note(f"importing {name} into the lab's Docker daemon")
        tar = subprocess.Popen(["tar", "--numeric-owner", "--xattrs", "-C", str(root), "-cf", "-", "."],
                               stdout=subprocess.PIPE)
        changes = [arg for change in CHANGES for arg in ("--change", change)]
        imported = containers.docker("import", *changes, "-", name, stdin=tar.stdout, text=True)
        tar.stdout.close()
        if tar.wait() != 0 or imported.returncode != 0:
            raise box.BoxError(f"image build failed while importing {name}: docker import exited "
                               f"{imported.returncode}: {imported.stderr.strip()[-400:]}")
    finally:
        box.remove_work(work)
