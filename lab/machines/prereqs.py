"""Host prerequisites: what the lab needs on the host, found by command, installed with apt on
Debian/Ubuntu, or named exactly for the user to install elsewhere."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from lab import shell
from lab.errors import LabError

# (what is checked, Debian package). A path is checked for existence, a bare name on PATH.
IMAGE_TOOLS = (("mmdebstrap", "mmdebstrap"),)     # what builds a box's or an image's root file system on the host
COMMON = (
    ("vagrant", "vagrant"),
    ("iptables", "iptables"),
    *IMAGE_TOOLS,
    ("slirp4netns", "slirp4netns"),
    ("nft", "nftables"),
    ("ip", "iproute2"),
    ("ssh", "openssh-client"),
    # javac: the plan check's loader (jmeter/inspect/PlanInspect.java, compiled against JMeter's jars; a JRE has none)
    ("javac", "default-jdk-headless"),
)
DISK_TOOLS = (   # what makes a VM box's disk from its root file system
    ("qemu-img", "qemu-utils"),
    ("sfdisk", "fdisk"),
    ("extlinux", "extlinux"),
    ("/usr/lib/EXTLINUX/mbr.bin", "syslinux-common"),
    ("mkfs.ext4", "e2fsprogs"),
)
LIBVIRT = (      # the VMs: libvirt and QEMU, and what makes a box's disk
    ("/usr/share/rubygems-integration/all/gems/vagrant-libvirt-*", "vagrant-libvirt"),
    ("qemu-system-x86_64", "qemu-system-x86"),
    ("libvirtd", "libvirt-daemon-system"),
    ("virtlogd", "libvirt-daemon-system"),
    ("virsh", "libvirt-clients"),
    ("dnsmasq", "dnsmasq-base"),
    *DISK_TOOLS,
)
CONTAINERS = (   # the containers: Debian's Docker (its daemon the lab's own, lab/machines/containers.py)
    ("dockerd", "docker.io"),
    ("/usr/bin/docker", "docker.io"),
    ("unshare", "util-linux"),
)
REQUIREMENTS = COMMON + LIBVIRT + CONTAINERS
PER_PROVIDER = {"common": COMMON, "libvirt": COMMON + LIBVIRT, "containers": COMMON + CONTAINERS,
                "auto": REQUIREMENTS}
SBIN = ("/usr/local/sbin", "/usr/sbin", "/sbin")


class PrereqError(LabError):
    """A prerequisite is missing and cannot be installed here; the message names it."""


def _present(check: str, which=shutil.which) -> bool:
    if check.startswith("/"):
        return any(Path("/").glob(check.lstrip("/")))
    path = os.environ.get("PATH", "") + ":" + ":".join(SBIN)
    return which(check, path=path) is not None


def missing(requirements=REQUIREMENTS, present=_present) -> list[str]:
    """Debian packages whose commands or files are absent, in a stable order, without repeats."""
    return list(dict.fromkeys(pkg for check, pkg in requirements if not present(check)))


def is_debian_like(os_release: str) -> bool:
    fields = dict(line.split("=", 1) for line in os_release.splitlines() if "=" in line)
    ids = f"{fields.get('ID', '')} {fields.get('ID_LIKE', '')}".replace('"', "")
    return any(name in ids.split() for name in ("debian", "ubuntu"))


def install(packages: list[str], os_release: str | None = None, run=subprocess.run) -> None:
    """apt-get install on Debian/Ubuntu as root; otherwise a message naming what to install."""
    if not packages:
        return
    if os_release is None:
        os_release = Path("/etc/os-release").read_text() if Path("/etc/os-release").exists() else ""
    if not is_debian_like(os_release):
        raise PrereqError("missing host prerequisites; this is not Debian/Ubuntu, so install the equivalents of "
                          f"these Debian packages yourself: {' '.join(packages)}")
    if os.geteuid() != 0:
        raise PrereqError(f"missing host prerequisites; as root run: apt-get install {' '.join(packages)}")
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    cmd = ["apt-get", "install", "-y", "--no-install-recommends", *packages]
    result = run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        # A fresh machine may have no package lists yet.
        run(["apt-get", "update"], capture_output=True, text=True, env=env)
        result = run(cmd, capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise PrereqError(f"could not install host prerequisites ({' '.join(packages)}): apt-get said:\n  "
                          + shell.tail(result, 6))
