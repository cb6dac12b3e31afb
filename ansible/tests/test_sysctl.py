"""base_sysctl on the machine side: the kernel's own values are read with sysctl, no shell (roles/base/tasks/
sysctl.yml), and what the validation knows of each setting (roles/knobs/files/sysctl-kinds.yml) covers the
kernel's list. The names and values themselves are refused by the validation play: test_validation.py.

The remembering tasks run here for real, on this host, with its own sysctl binary (they only read the kernel;
the file they keep goes to a temporary folder); the template and `sysctl -p` need a machine (the e2e test).
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import sysctl_kinds
import yaml
from conftest import ANSIBLE_DIR, TESTS_DIR, ansible_env

SYSCTL_TASKS = ANSIBLE_DIR / "roles" / "base" / "tasks" / "sysctl.yml"
TEMPLATE_TASK = "Write the kernel settings"      # the first task that writes the machine's kernel settings


def test_every_kernel_setting_has_a_kind():
    kinds = yaml.safe_load(sysctl_kinds.KINDS.read_text())
    assert list(kinds) == sysctl_kinds.keys(), "sysctl-kinds.yml is behind sysctl-keys.txt: run tests/sysctl_kinds.py"
    for key, kind in kinds.items():
        assert kind in ("str", "unknown") or (kind.split()[0] in ("int", "long") and int(kind.split()[1]) >= 1), key
    assert kinds["net.ipv4.tcp_rmem"] == "int 3" and kinds["net.ipv4.tcp_mem"] == "long 3"
    assert kinds["net.core.somaxconn"] == "int 1" and kinds["net.ipv4.tcp_congestion_control"] == "str"


@pytest.mark.parametrize("key,text,kind", [
    ("net.core.somaxconn", "4096\n", "int 1"),
    ("net.ipv4.tcp_rmem", "4096\t131072\t6291456\n", "int 3"),
    ("kernel.shmmax", "18446744073692774399\n", "long 1"),      # wider than 32 bits: 64 whatever the list says
    ("vm.dirty_bytes", "0\n", "long 1"),                        # a 64-bit setting whose value fits 32 bits
    ("net.ipv4.tcp_congestion_control", "cubic\n", "str"),
    ("kernel.sysrq", None, "int 1"),                            # absent from the stand-in kernel: by hand
    ("fs.binfmt_misc.status", None, "unknown"),
])
def test_a_setting_is_classified_by_what_it_holds(key, text, kind):
    assert sysctl_kinds.kind(key, text) == kind


def test_a_per_interface_setting_is_read_from_its_template():
    proc = Path("/proc/sys")
    assert sysctl_kinds.proc_path(proc, "net.ipv4.conf.*.rp_filter") == proc / "net/ipv4/conf/default/rp_filter"
    assert sysctl_kinds.proc_path(proc, "fs.binfmt_misc.python3/11") == proc / "fs/binfmt_misc/python3.11"


# --- the kernel's own values, kept before the first change ------------------------------------------------------

def remember(folder: Path, base_sysctl: dict) -> subprocess.CompletedProcess:
    """sysctl.yml's tasks before the template, run on this host with base_sysctl and the remembered values kept
    in folder/lab/baseline.conf."""
    tasks = yaml.safe_load(SYSCTL_TASKS.read_text())
    names = [t["name"] for t in tasks]
    assert TEMPLATE_TASK in names, f"{SYSCTL_TASKS} has no task {TEMPLATE_TASK!r}: update this test"
    (folder / "remember.yml").write_text(yaml.safe_dump(tasks[:names.index(TEMPLATE_TASK)], sort_keys=False))
    play = [{"name": "Remember the kernel's values", "hosts": "localhost", "connection": "local",
             "gather_facts": False,
             "vars": {"ansible_python_interpreter": sys.executable, "base_sysctl": base_sysctl,
                      "base_sysctl_baseline_file": str(folder / "lab" / "baseline.conf")},
             "tasks": [{"name": "The tasks", "ansible.builtin.include_tasks": str(folder / "remember.yml")}]}]
    (folder / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,",
                           str(folder / "play.yml")], cwd=TESTS_DIR, env=ansible_env(), capture_output=True,
                          text=True, timeout=300)


def kernel(name: str) -> str:
    return subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, check=True).stdout.rstrip("\n")


@pytest.fixture
def needs_sysctl():
    if not shutil.which("sysctl"):
        pytest.skip("no sysctl binary here (Debian's procps): the remembering tasks call it")


def test_the_kernels_own_values_are_kept_once(tmp_path, needs_sysctl):
    done = remember(tmp_path, {"net.core.somaxconn": 1024, "net.ipv4.tcp_rmem": "4096 131072 6291456"})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    kept = tmp_path / "lab" / "baseline.conf"
    assert kept.read_text() == (f"net.core.somaxconn = {kernel('net.core.somaxconn')}\n"
                                f"net.ipv4.tcp_rmem = {kernel('net.ipv4.tcp_rmem')}\n")
    # a value remembered before stays as it was (the kernel's own, before the lab's first change); a new name is added
    kept.write_text("net.core.somaxconn = 17\n" + kept.read_text().split("\n", 1)[1])
    done = remember(tmp_path, {"net.core.somaxconn": 2048, "net.ipv4.tcp_rmem": "1 2 3", "vm.swappiness": 10})
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert kept.read_text() == (f"net.core.somaxconn = 17\nnet.ipv4.tcp_rmem = {kernel('net.ipv4.tcp_rmem')}\n"
                                f"vm.swappiness = {kernel('vm.swappiness')}\n")


def test_a_name_reaches_sysctl_as_one_argument_never_a_shell(tmp_path, needs_sysctl):
    """A name carrying a command substitution is a name sysctl does not know: the task fails, nothing runs. (The
    validation refuses such a name first; this is the machine's side, were it ever reached.)"""
    marker = tmp_path / "ran"
    done = remember(tmp_path, {f"kernel.ostype$(touch {marker})": 1, f'kernel.ostype"; touch "{marker}': 1})
    assert done.returncode != 0 and "kernel.ostype$(touch" in done.stdout, done.stdout[-4000:]
    assert not marker.exists(), "a base_sysctl name ran a command on the machine"
    assert not (tmp_path / "lab" / "baseline.conf").exists()
