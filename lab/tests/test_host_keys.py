"""Real hosts' SSH host keys (`--hosts`), against a real sshd: a throwaway one on 127.0.0.1 (a free port, a host key and
an authorized key made here, run as root from a temporary folder, stopped by its PID). Its key is learnt once, on
first contact, into the lab's own known_hosts; after the host key is swapped, every SSH path of the lab refuses the
host: the check before a run (naming the host and how to forget the old key), the lab's own ssh (reach: restarts,
collection, the JMeter engines) and provisioning through Ansible with the lab's environment and Mitogen."""
from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
import yaml

from lab.machines import reach
from lab.provision import hosts, playbook

SSHD = shutil.which("sshd") or "/usr/sbin/sshd"
pytestmark = pytest.mark.skipif(not (os.path.exists(SSHD) and os.geteuid() == 0),
                                reason="needs sshd (apt-get install openssh-server) and root")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def keygen(path: Path) -> None:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True)


class Sshd:
    """sshd -D on 127.0.0.1:port with the host key `key`, letting in root with the client key; restartable with
    another host key."""

    def __init__(self, folder: Path) -> None:
        self.folder, self.port, self.proc, self.log = folder, free_port(), None, None
        keygen(folder / "client")
        (folder / "authorized_keys").write_text((folder / "client.pub").read_text())

    def start(self, key: Path) -> None:
        Path("/run/sshd").mkdir(mode=0o755, exist_ok=True)      # sshd's privilege separation folder
        options = {"ListenAddress": "127.0.0.1", "Port": self.port, "HostKey": key, "PidFile": "none",
                   "AuthorizedKeysFile": self.folder / "authorized_keys", "StrictModes": "no", "UsePAM": "no",
                   "PermitRootLogin": "prohibit-password", "PasswordAuthentication": "no",
                   "KbdInteractiveAuthentication": "no"}
        self.log = open(self.folder / "sshd.log", "ab")     # closed in stop()
        self.proc = subprocess.Popen([SSHD, "-D", "-e", "-f", "/dev/null",
                                      *[a for k, v in options.items() for a in ("-o", f"{k}={v}")]],
                                     stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return
            except OSError:
                assert self.proc.poll() is None, (self.folder / "sshd.log").read_text()
                time.sleep(0.1)
        raise AssertionError("sshd did not listen")

    def stop(self) -> None:
        """The listener and its sessions (SSH's shared connections to it end too), each by its PID."""
        if self.proc and self.proc.poll() is None:
            sessions = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split()
            for pid in [*map(int, sessions), self.proc.pid]:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)
            self.proc.wait(10)
        if self.log:
            self.log.close()


@pytest.fixture
def sshd(tmp_path):
    server = Sshd(tmp_path)
    keygen(tmp_path / "host_key")
    server.start(tmp_path / "host_key")
    yield server
    server.stop()


def mitogen_run(inventory: Path) -> subprocess.CompletedProcess:
    """A one-task play on `default` the way provisioning runs site.yml: the lab's environment (Mitogen's strategy)."""
    play = inventory.parent / "play.yml"
    play.write_text("- hosts: default\n  gather_facts: false\n  tasks:\n"
                    "    - ansible.builtin.command: 'true'\n      changed_when: false\n")
    return subprocess.run([str(Path(sys.executable).parent / "ansible-playbook"), "-i", str(inventory), str(play)],
                          cwd=playbook.ANSIBLE_DIR, env=playbook.ansible_env(), capture_output=True, text=True,
                          timeout=300)


def test_a_host_key_is_learnt_once_and_a_changed_one_is_refused_on_every_path(sshd, tmp_path):
    listed = tmp_path / "hosts.yml"
    listed.write_text(textwrap.dedent(f"""
        all:
          hosts:
            default: {{ansible_host: 127.0.0.1, ansible_port: {sshd.port}, ansible_user: root,
                      ansible_ssh_private_key_file: {tmp_path / 'client'}, ansible_become: false}}
            tuned: {{ansible_connection: local, ansible_host: 127.0.0.3}}
        """))
    inv, state = hosts.read(listed), tmp_path / "state"
    facts = hosts.check(inv, state=state)                          # first contact: the key is learnt
    known = (state / "known_hosts").read_text().splitlines()
    assert [line.split()[0] for line in known] == [f"[127.0.0.1]:{sshd.port}"]
    assert facts["default"]["controller_address"] == "127.0.0.1"   # this machine as the host saw the session
    config = state / "ssh_config"
    site = state / "inventory.yml"
    site.write_text(yaml.safe_dump(hosts.ansible_inventory(inv, config, hosts.networks(inv, facts), {})))
    reach.reach_hosts(config)                                       # as hosts.prepare leaves it
    assert reach.ssh("default", "true").returncode == 0
    ran = mitogen_run(site)
    assert ran.returncode == 0, ran.stdout + ran.stderr             # Mitogen checks against the learnt key
    hosts.check(inv, state=state)
    assert (state / "known_hosts").read_text().splitlines() == known   # learnt once, not again

    sshd.stop()                                                     # the host now answers with another key
    keygen(tmp_path / "other_key")
    sshd.start(tmp_path / "other_key")
    with pytest.raises(hosts.HostsError) as refused:
        hosts.check(inv, state=state)
    assert "default (127.0.0.1): its SSH host key is not the one the lab learnt on first contact" in str(refused.value)
    assert f"ssh-keygen -f {state / 'known_hosts'} -R '[127.0.0.1]:{sshd.port}'" in str(refused.value)
    lab_ssh = reach.ssh("default", "true")
    assert lab_ssh.returncode == 255 and f"Host key for [127.0.0.1]:{sshd.port} has changed" in lab_ssh.stderr
    ran = mitogen_run(site)
    assert ran.returncode != 0 and "mismatching host key" in ran.stdout, ran.stdout + ran.stderr
    assert (state / "known_hosts").read_text().splitlines() == known    # the old key kept, not replaced


def test_the_lab_vms_keep_vagrants_unchecked_keys():
    """The VMs are new machines with new keys on every `up`, reached inside the lab namespace: not checked."""
    assert reach.reaches_vms()
    assert playbook.ansible_env()["ANSIBLE_HOST_KEY_CHECKING"] == "False"
