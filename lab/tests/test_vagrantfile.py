"""The Vagrantfile validates for both providers and turns the resolved settings into the right domain."""
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from lab.machines import settings, vagrant

ROOT = Path(__file__).resolve().parents[2]
needs_vagrant = pytest.mark.skipif(shutil.which("vagrant") is None and os.environ.get("CI") != "true",
                                   reason="vagrant is not installed (./start.sh prereqs installs it)")


def validate(tmp_path, provider, resolved=None, extra_path=None):
    env = {**os.environ, "VAGRANT_HOME": str(tmp_path / "vagrant.d"), "VAGRANT_DEFAULT_PROVIDER": provider,
           "VAGRANT_CHECKPOINT_DISABLE": "1", "VAGRANT_DOTFILE_PATH": str(tmp_path / "dot")}
    env.pop("LAB_SETTINGS", None)
    if resolved is not None:
        (tmp_path / "settings.json").write_text(json.dumps(resolved))
        env["LAB_SETTINGS"] = str(tmp_path / "settings.json")
    if extra_path:
        env["PATH"] = f"{extra_path}:{env['PATH']}"
    return subprocess.run(["vagrant", "validate"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@needs_vagrant
def test_validates_for_libvirt_with_defaults_and_with_resolved_settings(tmp_path):
    assert validate(tmp_path, "libvirt").returncode == 0
    resolved = vagrant.resolve(settings.load(environ={"LAB_PROVIDER": "libvirt"}),
                               {"default": "bookworm", "tuned": "trixie"}, detect=lambda requested: ("tcg", "test"))
    assert resolved["provider"] == "libvirt"
    resolved["cpusets"] = {"default": "0", "tuned": "1"}
    result = validate(tmp_path, "libvirt", resolved)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_vagrant
def test_validates_for_containers_with_each_machines_image_and_shape(tmp_path):
    """provider containers: Vagrant's docker provider takes the resolved image and docker create arguments."""
    resolved = vagrant.resolve(settings.load(environ={}), {"default": "bookworm", "tuned": "trixie"},
                               detect=lambda requested: ("tcg", "no KVM here"))
    assert resolved["provider"] == "containers" and resolved["accelerator"] == "native"
    assert resolved["images"]["default"].startswith("camel-lab/bookworm:")
    assert resolved["images"]["tuned"].startswith("camel-lab/trixie:")
    # Vagrant asks the docker client whether a daemon answers before it validates the provider block: a stand-in
    # that answers that one question lets it check our docker settings for real without a daemon.
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "docker").write_text('#!/bin/sh\n[ "$1" = version ] && echo 20.10.24 && exit 0\nexit 1\n')
    (shim / "docker").chmod(0o755)
    result = validate(tmp_path, "docker", resolved, extra_path=shim)
    assert result.returncode == 0, result.stdout + result.stderr


@needs_vagrant
def test_validates_for_virtualbox(tmp_path):
    # VirtualBox cannot be installed here (not in Debian). Vagrant only asks VBoxManage for its version
    # before validating the provider block, so a stand-in that answers that one question is enough to
    # have Vagrant check our VirtualBox settings for real.
    shim = tmp_path / "bin"
    shim.mkdir()
    (shim / "VBoxManage").write_text('#!/bin/sh\n[ "$1" = --version ] && echo 7.0.20r163906\nexit 0\n')
    (shim / "VBoxManage").chmod(0o755)
    result = validate(tmp_path, "virtualbox", extra_path=shim)
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_serial_console_is_where_the_lab_collects_it():
    """lab/experiment/collect.py copies each guest's console from vagrant.SERIAL_LOG; the Vagrantfile writes it
    there."""
    text = (ROOT / "Vagrantfile").read_text()
    assert f':path => "{vagrant.SERIAL_LOG.replace("{name}", "#{name}")}"' in text


def test_the_fw_cfg_entries_are_those_the_box_reads():
    """The Vagrantfile hands each machine its name and private address as QEMU fw_cfg entries; the box's
    lab-identity script reads the same entries, and Vagrant leaves the private network to it."""
    text = (ROOT / "Vagrantfile").read_text()
    script = (ROOT / "lab" / "machines" / "box" / "files" / "usr" / "local" / "sbin" / "lab-identity").read_text()
    handed = set(re.findall(r"name=opt/camel-lab/(\w+),string=", text))
    assert re.search(r"^fw=/sys/firmware/qemu_fw_cfg/by_name/opt/camel-lab$", script, re.M)
    read = set(re.findall(r'"\$fw/(\w+)/raw"', script))
    assert handed == read == {"hostname", "address", "nameserver"}
    assert "auto_config: false" in text
