"""Older box recipes' disks in libvirt's pool are removed after a boot, never one a machine's disk stands on
(lab/machines/pool.py remove_stale_box_volumes). vagrant-libvirt uploads every box into the pool and
`vagrant box remove` leaves it: 15 volumes, 8.4 GB on the host of 2026-11-30."""
from __future__ import annotations

import shutil
import subprocess
import types

import pytest

from lab.machines import box, netns, pool

PATH = "/var/lib/libvirt/images"


def volume(box_name: str, stamp: int = 1796045453) -> str:
    return f"{box_name.replace('/', '-VAGRANTSLASH-')}_vagrant_box_image_0_{stamp}_box.img"


def test_only_older_recipes_of_the_labs_boxes_not_in_use_are_stale():
    current = {"lab/bookworm-3ef20b4662cc", "lab/trixie-0a1b2c3d4e5f"}
    old, in_use_old = volume("lab/bookworm-13026989518a"), volume("lab/bookworm-2aec4d204d5f")
    volumes = {name: f"{PATH}/{name}" for name in (
        volume("lab/bookworm-3ef20b4662cc"), volume("lab/trixie-0a1b2c3d4e5f"), old, in_use_old,
        volume("someone/else-123"), "camel-lab-default.img", "debian12.qcow2")}
    stale = pool.stale_box_volumes(volumes, current, in_use={f"{PATH}/{in_use_old}", "camel-lab-default.img"})
    assert stale == [old]
    # by name alone (a backing file recorded relative to its pool) it is in use too
    assert pool.stale_box_volumes(volumes, current, in_use={in_use_old}) == [old]


@pytest.mark.skipif(shutil.which("qemu-img") is None, reason="qemu-img (qemu-utils) is not installed")
def test_a_machines_backing_chain_is_in_use(tmp_path, monkeypatch):
    """A machine's disk is an overlay on the box's volume (qemu-img's own chain, read as the lab reads it)."""
    base = tmp_path / volume("lab/bookworm-2aec4d204d5f")
    overlay = tmp_path / "camel-lab-default.img"
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", str(base), "16M"], check=True)
    subprocess.run(["qemu-img", "create", "-q", "-f", "qcow2", "-F", "qcow2", "-b", str(base), str(overlay)],
                   check=True)
    listing = (" Type   Device   Target   Source\n" + "-" * 60 + "\n"
               f" file   disk     vda      {overlay}\n file   cdrom    sda      -\n")
    monkeypatch.setattr(pool, "domains", lambda: ["camel-lab-default"])
    monkeypatch.setattr(netns, "virsh", lambda *args: types.SimpleNamespace(stdout=listing, returncode=0))
    used = pool._disks_in_use()
    assert {str(base), base.name, str(overlay)} <= used
    overlay.unlink()                 # a disk that cannot be read: nothing can be said, so nothing is removed
    assert pool._disks_in_use() is None


def test_nothing_is_removed_where_the_disks_in_use_cannot_be_read(monkeypatch):
    deleted = []
    monkeypatch.setattr(pool, "in_containers", lambda: False)
    monkeypatch.setattr(netns, "healthy", lambda libvirt=False: True)
    monkeypatch.setattr(pool, "_disks_in_use", lambda: None)
    monkeypatch.setattr(pool, "_pool_volumes", lambda: {volume("lab/bookworm-13026989518a"): "x"})
    monkeypatch.setattr(netns, "virsh", lambda *args: deleted.append(args))
    assert pool.remove_stale_box_volumes() == [] and deleted == []
    monkeypatch.setattr(pool, "_disks_in_use", lambda: set())
    monkeypatch.setattr(netns, "virsh", lambda *args: deleted.append(args) or types.SimpleNamespace(returncode=0))
    assert pool.remove_stale_box_volumes() == [volume("lab/bookworm-13026989518a")]
    assert deleted == [("vol-delete", volume("lab/bookworm-13026989518a"), "--pool", "default")]
    assert box.box_name("bookworm").startswith("lab/bookworm-")
