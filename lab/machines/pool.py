"""libvirt's storage pool: the box volumes vagrant-libvirt leaves there, removed once no machine stands on them."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

from lab.machines import box, netns
from lab.machines.vagrant import domains, in_containers

# vagrant-libvirt uploads each box's disk into libvirt's storage pool once, as a volume of its own
# (<box name, "/" as "-VAGRANTSLASH-">_vagrant_box_image_<version>_<time>_box.img), and `vagrant box remove` leaves
# it there: every change of the box recipe left ~560 MB behind (15 volumes, 8.4 GB on the host of 2026-11-30).
STORAGE_POOL = "default"                     # vagrant-libvirt's default pool (the Vagrantfile keeps it)
BOX_VOLUME = "_vagrant_box_image_"


def stale_box_volumes(volumes: dict[str, str], current_boxes: set[str], in_use: set[str]) -> list[str]:
    """The lab's box volumes (name → path) of older recipes that no machine's disk stands on."""
    keep = tuple(b.replace("/", "-VAGRANTSLASH-") + BOX_VOLUME for b in current_boxes)
    return sorted(name for name, path in volumes.items()
                  if name.startswith("lab-VAGRANTSLASH-") and BOX_VOLUME in name and not name.startswith(keep)
                  and path not in in_use and name not in in_use)


def _table(*args: str) -> list[list[str]]:
    """The rows of a virsh table (a header, a rule, then one row per line), each split into its columns."""
    return [line.split() for line in netns.virsh(*args).stdout.splitlines()[2:] if line.strip()]


def _pool_volumes() -> dict[str, str]:
    """name → path of the pool's volumes (`virsh vol-list`: name and path)."""
    return {row[0]: row[-1] for row in _table("vol-list", STORAGE_POOL) if len(row) >= 2}


def _disks_in_use() -> set[str] | None:
    """Every file the lab's domains' disks stand on: their own and their backing chains (names and paths); None
    when one cannot be read (then nothing is removed)."""
    used = set()
    for domain in domains():
        for source in (row[-1] for row in _table("domblklist", domain, "--details") if len(row) >= 4):
            if source == "-":           # a drive without a medium
                continue
            read = subprocess.run(["qemu-img", "info", "-U", "--backing-chain", "--output=json", source],
                                  capture_output=True, text=True)
            if read.returncode != 0:
                return None
            for layer in json.loads(read.stdout):
                for key in ("filename", "backing-filename", "full-backing-filename"):
                    if layer.get(key):
                        used |= {layer[key], Path(layer[key]).name}
    return used


def remove_stale_box_volumes() -> list[str]:
    """Other recipes' box volumes removed from libvirt's pool: older ones, and other checkouts' (their login key is
    in the hash; vagrant-libvirt uploads a box again when it boots and finds none). This checkout's recipe of every
    suite stays (the other Java's machine may need it); never one a machine's disk stands on. Their names."""
    in_use = None if in_containers() or not netns.healthy(libvirt=True) else _disks_in_use()
    if in_use is None:
        return []
    stale = stale_box_volumes(_pool_volumes(), {box.box_name(suite) for suite in box.SUITES.values()}, in_use)
    return [name for name in stale if netns.virsh("vol-delete", name, "--pool", STORAGE_POOL).returncode == 0]
