"""The base box: Debian built with mmdebstrap from the mirror, packaged for vagrant-libvirt.

One box per Debian suite, each with that suite's own OpenJDK (SUITES): the knob jvm_version chooses a machine's
box, so the twins may run different boxes in one run. A box is cached under .lab/machines/box/ and named after its
recipe hash (everything in lab/machines/box/ but the other suites' package lists, plus the suite, this module's image
layout version and the lab's login key), so a changed recipe makes a new box and a new libvirt volume, never a
stale one. Building needs root (loop devices, mounts, chroot).
"""
from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import tarfile
import tempfile
from collections.abc import Callable
from pathlib import Path

from lab import paths, shell, steps
from lab.errors import LabError
from lab.machines import debcache

RECIPE_DIR = Path(__file__).parent / "box"
SUITES_DIR = "suites"           # suites/<suite>.txt: the packages of that suite's box alone
# The Java each box carries, the knob jvm_version's values: a Debian suite's own OpenJDK (bookworm has 17 and no
# 21, trixie 21 and 25 but no 17), so a machine's Java is its box's suite.
SUITES = {17: "bookworm", 21: "trixie"}
# Bump when the image layout below changes (partitioning, bootloader, file system options).
IMAGE_LAYOUT_VERSION = 2        # 2: the root file system made by mmdebstrap instead of debootstrap
DISK_GB = 8
# The disk as compressed qcow2: zstd, whose clusters qemu-img's coroutines compress on every core when they may
# write out of order (-W): 6.6 s for the box's 1.6 GB here, where zlib in order took 61 s (10.4 s zstd in order).
QCOW2_CONVERT = ["qemu-img", "convert", "-c", "-W", "-o", "compression_type=zstd", "-O", "qcow2"]
# The vagrant user's only key: made on this host, not Vagrant's public insecure one. Vagrant then has nothing
# to replace on a machine's first boot, which took ~40 s under TCG (a new key pair, inserted, reconnected).
LOGIN_KEY = paths.STATE_DIR / "secrets" / "box_login"


class BoxError(LabError):
    """The box could not be built; the message says which step failed."""


def suite_of(jvm_version) -> str:
    """The suite whose box carries that Java (the knob jvm_version)."""
    try:
        return SUITES[int(jvm_version)]
    except (KeyError, TypeError, ValueError):
        raise BoxError(f"jvm_version={jvm_version}: no box carries it (boxes: "
                       f"{', '.join(f'{java} on {suite}' for java, suite in SUITES.items())})") from None


def recipe_files(suite: str, recipe_dir: Path = RECIPE_DIR) -> list[Path]:
    """The files a suite's box is made from: the recipe's, with only this suite's package list of suites/."""
    own = recipe_dir / SUITES_DIR / f"{suite}.txt"
    return sorted(p for p in recipe_dir.rglob("*")
                  if p.is_file() and (p.parent != recipe_dir / SUITES_DIR or p == own))


def recipe_hash(suite: str, recipe_dir: Path = RECIPE_DIR, login_public_key: str | None = None) -> str:
    """Hash of every file of the suite's recipe (name and content), the suite, the layout version and the public
    login key (this lab's own unless given): another suite's package list changes nothing here."""
    if login_public_key is None:
        login_public_key = login_key().with_suffix(".pub").read_text()
    digest = hashlib.sha256(f"suite={suite}\nlayout={IMAGE_LAYOUT_VERSION}\nkey={login_public_key.strip()}\n".encode())
    for file in recipe_files(suite, recipe_dir):
        digest.update(str(file.relative_to(recipe_dir)).encode() + b"\0")
        digest.update(file.read_bytes() + b"\0")
    return digest.hexdigest()


def box_name(suite: str) -> str:
    return f"lab/{suite}-{recipe_hash(suite)[:12]}"


def box_file(suite: str) -> Path:
    return paths.BOX_DIR / f"{suite}-{recipe_hash(suite)[:12]}.box"


def packages(recipe_dir: Path = RECIPE_DIR, listing: str = "packages.txt") -> list[str]:
    """A list of the recipe, one name per line: packages.txt (the base system's packages), preload.txt (the roles'
    packages), suites/<suite>.txt (that suite's own) or units.txt (the units the box enables)."""
    lines = (recipe_dir / listing).read_text().splitlines()
    return [line.strip() for line in lines if line.strip() and not line.startswith("#")]


def login_key() -> Path:
    """The private key Vagrant logs in with (ed25519, LOGIN_KEY), made the first time it is asked for."""
    public = LOGIN_KEY.with_suffix(".pub")
    if not (LOGIN_KEY.exists() and public.exists()):
        LOGIN_KEY.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        LOGIN_KEY.unlink(missing_ok=True)
        public.unlink(missing_ok=True)
        _run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "camel-tuning-lab box login",
              "-f", str(LOGIN_KEY)], "making the lab's login key")
    return LOGIN_KEY


def _run(cmd: list[str], what: str, **kw) -> subprocess.CompletedProcess:
    """shell.run, failing with BoxError that names the build step."""
    return shell.run(cmd, f"box build failed while {what}", error=BoxError, **kw)


def ensure(settings, suite: str, made_ahead: Callable[[], Path | None] = lambda: None) -> tuple[Path, bool]:
    """The suite's box file for this recipe, built if missing: the one `made_ahead()` gives (lab/machines/ahead.py;
    moved into place here, under the lab's lock) or one built now. Returns (path, built_now)."""
    target = box_file(suite)
    if target.exists():
        return target, False
    made = made_ahead()
    if made is not None:
        made.rename(target)             # one file system (.lab/box): a complete box appears at once
        remove_work(made.parent.parent)
    else:
        build(settings, target, suite)
    _remove_stale_boxes(keep=target, suite=suite)
    return target, True


def _remove_stale_boxes(keep: Path, suite: str) -> None:
    """The suite's boxes of older recipes (another suite's box stays: the other machine may run it)."""
    for old in paths.BOX_DIR.glob(f"{suite}-*.box"):
        if old != keep:
            old.unlink()


def build(settings, target: Path, suite: str, work: Path | None = None) -> None:
    """The suite's box written to `target`, made in the empty folder `work` (a new one unless given), which is
    removed after."""
    if os.geteuid() != 0:
        raise BoxError("building the base box needs root (loop devices, mounts, chroot)")
    work = work or work_dir("build-")
    raw = work / "disk.raw"
    mnt = work / "root"
    mnt.mkdir()
    loop = None
    mounted = []
    try:
        with open(raw, "wb") as f:
            f.truncate(DISK_GB * 1024**3)
        _run(["sfdisk", "-q", str(raw)], "partitioning", input="label: dos\n,,L,*\n")
        loop = _run(["losetup", "--find", "--show", str(raw)], "attaching the loop device").stdout.strip()
        # losetup -P makes no partition node on these hosts; partx does.
        _run(["partx", "-a", loop], "reading the partition table")
        part = f"{loop}p1"
        # Features extlinux cannot read stay off.
        _run(["mkfs.ext4", "-q", "-L", "root", "-O", "^64bit,^metadata_csum_seed", part], "formatting")
        uuid = _run(["blkid", "-s", "UUID", "-o", "value", part], "reading the file system UUID").stdout.strip()
        _run(["mount", part, str(mnt)], "mounting")
        mounted.append(mnt)

        root_filesystem(settings, suite, mnt, packages())
        (mnt / "etc" / "fstab").write_text(f"UUID={uuid} / ext4 errors=remount-ro 0 1\n")

        _install_bootloader(mnt, loop, uuid)
        _run(["umount", str(mnt)], "unmounting the root file system")
        mounted = []
        _run(["partx", "-d", loop], "releasing the partitions")
        _run(["losetup", "-d", loop], "detaching the loop device")
        loop = None

        steps.note("compressing the disk (qcow2, zstd)")
        _run(QCOW2_CONVERT + [str(raw), str(work / "box.img")], "converting to qcow2")
        raw.unlink()
        _package(work, target, suite)
    finally:
        for m in reversed(mounted):
            subprocess.run(["umount", "-l", str(m)], capture_output=True)
        if loop:
            subprocess.run(["partx", "-d", loop], capture_output=True)
            subprocess.run(["losetup", "-d", loop], capture_output=True)
        remove_work(work)


def work_dir(prefix: str) -> Path:
    """A new folder for one build under the box folder (build-: a VM's box, image-: a container's)."""
    paths.BOX_DIR.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=prefix, dir=paths.BOX_DIR))


def mounts_under(folder: Path) -> list[Path]:
    """What is mounted inside `folder` (this mount namespace), deepest first."""
    inside, folder = [], folder.resolve()
    with open("/proc/self/mountinfo") as table:
        for line in table:
            point = Path(re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), line.split()[4]))  # \040: a space
            if point.is_relative_to(folder) and point != folder:
                inside.append(point)
    return sorted(inside, key=lambda p: len(p.parts), reverse=True)


def loops_under(folder: Path) -> list[str]:
    """The loop devices backed by a file inside `folder` (a VM box's disk.raw), deleted or not."""
    listed = subprocess.run(["losetup", "--list", "--noheadings", "--raw", "--output", "NAME,BACK-FILE"],
                            capture_output=True, text=True)
    folder, loops = folder.resolve(), []
    for line in listed.stdout.splitlines() if listed.returncode == 0 else ():
        name, _, backing = line.partition(" ")
        backing = re.sub(r"\\x([0-9a-f]{2})", lambda m: chr(int(m[1], 16)), backing).removesuffix(" (deleted)")
        if backing and Path(backing).is_relative_to(folder):
            loops.append(name)
    return loops


def remove_work(work: Path) -> None:
    """A build's folder removed, once nothing is mounted inside it: a chroot's /dev, /proc or /sys left mounted
    by a stopped build would otherwise be emptied on the host's side. Kept (and said) when a mount stays. The loop
    devices of a stopped VM box's disk are released too (they would hold its 8 GB file after it is removed)."""
    for point in mounts_under(work):
        subprocess.run(["umount", "-l", str(point)], capture_output=True)
    for loop in loops_under(work):
        subprocess.run(["partx", "-d", loop], capture_output=True)
        subprocess.run(["losetup", "-d", loop], capture_output=True)
    left = mounts_under(work)
    if left:
        steps.note(f"kept {work}: {', '.join(map(str, left))} still mounted (unmount them, then remove it)")
        return
    shutil.rmtree(work, ignore_errors=True)


def root_filesystem(settings, suite: str, mnt: Path, include: list[str], login_public_key: str | None = None) -> None:
    """The suite's Debian in folder `mnt` as the recipe makes it (mmdebstrap, the recipe's files, customize.sh
    with the roles' and the suite's packages): a VM's disk and a container's image alike. login_public_key: whom
    the vagrant user lets in (this lab's own login key unless given; "" nobody: a container image's base, keyed
    per checkout later)."""
    # mmdebstrap: one apt run and one dpkg pass over the base (debootstrap unpacked and configured package by
    # package: 135 s of a 178 s box build here; mmdebstrap ~100 s of a 132 s one)
    steps.note(f"mmdebstrap {suite} from {settings.debian_mirror}")
    # The recipe's files go in before any package (a setup hook): the kernel's initramfs is then made once,
    # with the box's initramfs and modprobe settings.
    _run(["mmdebstrap", "--mode=root", "--variant=minbase", f"--include={','.join(include)}",
          f"--setup-hook=cp -R {shlex.quote(str(RECIPE_DIR / 'files'))}/. \"$1\"/",
          *debcache.mmdebstrap_options(suite),
          suite, str(mnt), settings.debian_mirror], "running mmdebstrap")
    if login_public_key is None:
        shutil.copy(login_key().with_suffix(".pub"), mnt / "tmp" / "login.pub")
    else:
        (mnt / "tmp" / "login.pub").write_text(login_public_key)
    shutil.copy(RECIPE_DIR / "customize.sh", mnt / "tmp" / "customize.sh")
    (mnt / "tmp" / "preload.txt").write_text(     # the roles' packages and this suite's own
        "\n".join(packages(listing="preload.txt") + packages(listing=f"{SUITES_DIR}/{suite}.txt")) + "\n")
    shutil.copy(RECIPE_DIR / "units.txt", mnt / "tmp" / "units.txt")
    # apt in the chroot resolves the mirror with the host's resolver (systemd-resolved's symlink points
    # into an empty /run there); customize.sh links the guest's own resolv.conf at the end.
    resolv = mnt / "etc" / "resolv.conf"
    resolv.unlink(missing_ok=True)
    shutil.copy("/etc/resolv.conf", resolv)
    mounted = []
    try:
        for fs, where in (("proc", "proc"), ("sysfs", "sys"), ("devtmpfs", "dev")):
            _run(["mount", "-t", fs, fs, str(mnt / where)], f"mounting {where} for the chroot")
            mounted.append(mnt / where)
        _run(["chroot", str(mnt), "/bin/sh", "/tmp/customize.sh", settings.debian_mirror, suite],
             "customizing the root file system", env={**os.environ, "DEBIAN_FRONTEND": "noninteractive",
                                                      "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"})
    finally:
        for m in reversed(mounted):
            subprocess.run(["umount", "-l", str(m)], capture_output=True)
    (mnt / "tmp" / "customize.sh").unlink()
    debcache.keep(suite, mnt)
    _run(["chroot", str(mnt), "apt-get", "clean"], "emptying apt's cache")


def _install_bootloader(mnt: Path, loop: str, uuid: str) -> None:
    kernels = sorted((mnt / "boot").glob("vmlinuz-*"))
    initrds = sorted((mnt / "boot").glob("initrd.img-*"))
    if not kernels or not initrds:
        raise BoxError("box build failed: no kernel or initrd in /boot after mmdebstrap")
    conf_dir = mnt / "boot" / "extlinux"
    conf_dir.mkdir(exist_ok=True)
    (conf_dir / "extlinux.conf").write_text(
        "DEFAULT debian\nTIMEOUT 1\nPROMPT 0\n"
        "LABEL debian\n"
        f"  LINUX /boot/{kernels[-1].name}\n"
        f"  INITRD /boot/{initrds[-1].name}\n"
        # Serial console for boot logs; classic eth0/eth1 names whatever the hypervisor's NIC slots.
        f"  APPEND root=UUID={uuid} ro console=tty0 console=ttyS0,115200n8 net.ifnames=0 biosdevname=0\n")
    _run(["extlinux", "--install", str(conf_dir)], "installing extlinux")
    mbr = next((p for p in (Path("/usr/lib/EXTLINUX/mbr.bin"), Path("/usr/lib/syslinux/mbr/mbr.bin")) if p.exists()),
               None)
    if mbr is None:
        raise BoxError("box build failed: extlinux's mbr.bin not found (install extlinux and syslinux-common)")
    with open(loop, "r+b") as dev:
        dev.write(mbr.read_bytes()[:440])


def _package(work: Path, target: Path, suite: str) -> None:
    metadata = {"provider": "libvirt", "format": "qcow2", "virtual_size": DISK_GB,
                "lab_recipe": recipe_hash(suite), "suite": suite}
    (work / "metadata.json").write_text(json.dumps(metadata))
    partial = target.with_suffix(".partial")
    with tarfile.open(partial, "w") as tar:   # qcow2 is compressed already
        for name in ("metadata.json", "box.img"):
            tar.add(work / name, arcname=name)
    partial.rename(target)   # only a complete box ever carries the final name
