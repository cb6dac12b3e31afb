"""Real hosts (lab/provision/hosts.py): the inventory read by Ansible itself and checked, each host checked over its
real connection before anything changes (SSH refused on a loopback port, sudo that wants a password, facts read)."""
import os
import subprocess
import textwrap

import pytest
import yaml

from lab.provision import hosts, hosts_down


def inventory(tmp_path, text: str, name: str = "hosts.yml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def refused(tmp_path, text: str, name: str = "hosts.yml") -> str:
    with pytest.raises(hosts.HostsError) as failure:
        hosts.read(inventory(tmp_path, text, name))
    return str(failure.value)


def test_hosts_or_one_host_groups_named_default_and_tuned_in_yaml_or_ini(tmp_path):
    inv = hosts.read(inventory(tmp_path, """
        all:
          hosts:
            default: {ansible_host: 10.0.0.11, ansible_user: admin}
          children:
            tuned: {hosts: {box-b: {ansible_host: 10.0.0.12, ansible_port: 2222, ansible_ssh_private_key_file: /k}}}
            loadgen: {hosts: {gen1: {ansible_host: 10.0.0.21}}}
        """))
    assert inv.targets["default"] == hosts.Host("default", "10.0.0.11", user="admin")
    assert inv.targets["tuned"] == hosts.Host("box-b", "10.0.0.12", port=2222, key="/k")
    assert list(inv.loadgens) == ["gen1"]
    ini = hosts.read(inventory(tmp_path, """
        [default]
        a ansible_host=10.0.0.11
        [tuned]
        b ansible_host=10.0.0.12
        """, "hosts.ini"))
    assert ini.targets["tuned"].address == "10.0.0.12" and ini.loadgens == {}


def test_a_missing_machine_is_named(tmp_path):
    message = refused(tmp_path, """
        all:
          hosts:
            default: {ansible_host: 10.0.0.11}
        """)
    assert "no host or group named `tuned`" in message and "hosts.yml" in message


def test_a_group_of_two_one_host_twice_and_a_generator_that_is_a_target_are_refused(tmp_path):
    assert "group `tuned` holds 2 hosts (b, c)" in refused(tmp_path, """
        all:
          hosts: {default: {ansible_host: 10.0.0.11}}
          children:
            tuned: {hosts: {b: {ansible_host: 10.0.0.12}, c: {ansible_host: 10.0.0.13}}}
        """)
    assert "same address (10.0.0.11)" in refused(tmp_path, """
        all:
          hosts: {default: {ansible_host: 10.0.0.11}, tuned: {ansible_host: 10.0.0.11}}
        """)
    assert "tuned is both a target and in `loadgen`" in refused(tmp_path, """
        all:
          hosts: {default: {ansible_host: 10.0.0.11}, tuned: {ansible_host: 10.0.0.12}}
          children:
            loadgen: {hosts: {tuned: {}}}
        """)


def test_a_bad_port_a_foreign_connection_and_a_broken_file_are_named(tmp_path):
    message = refused(tmp_path, """
        all:
          hosts:
            default: {ansible_host: 10.0.0.11, ansible_port: 70000}
            tuned: {ansible_host: 10.0.0.12, ansible_connection: winrm}
        """)
    assert "default: ansible_port 70000 is not a TCP port" in message
    assert "tuned: ansible_connection 'winrm'" in message
    missing = pytest.raises(hosts.HostsError, hosts.read, tmp_path / "nowhere.yml").value
    assert "no such file" in str(missing) and missing.exit_code == 2      # bad input (it was exit 1: bench/inputs.py)
    assert "cannot read it as an inventory" in refused(tmp_path, "all: [\n", "broken.yml")


def test_the_ssh_config_names_each_host_as_the_lab_does(tmp_path):
    inv = hosts.read(inventory(tmp_path, """
        all:
          hosts:
            default: {ansible_host: 10.0.0.11, ansible_user: admin}
            tuned: {ansible_host: 10.0.0.12, ansible_port: 2222, ansible_ssh_private_key_file: /keys/lab}
          children:
            loadgen: {hosts: {gen1: {ansible_host: 10.0.0.21}, me: {ansible_connection: local}}}
        """))
    text = hosts.ssh_config(inv, tmp_path / "known_hosts")
    assert "Host default\n  HostName 10.0.0.11\n  Port 22" in text and "  User admin" in text
    assert "Host tuned\n  HostName 10.0.0.12\n  Port 2222" in text and "  IdentityFile /keys/lab" in text
    assert "Host gen1\n" in text and "Host me" not in text      # a local host is not reached over SSH
    assert f"UserKnownHostsFile {tmp_path / 'known_hosts'}" in text and "StrictHostKeyChecking accept-new" in text
    site = hosts.ansible_inventory(inv, tmp_path / "ssh_config", ["10.0.0.1/32", "10.0.0.21/32"],
                                   {"default": 2048, "tuned": 2048})
    assert site["all"]["vars"]["lab_networks"] == ["10.0.0.1/32", "10.0.0.21/32"]
    assert site["all"]["hosts"]["tuned"]["lab_memory_mb"] == 2048
    assert site["all"]["hosts"]["tuned"]["ansible_ssh_common_args"] == f"-F {tmp_path / 'ssh_config'}"
    assert set(site["all"]["children"]["loadgen"]["hosts"]) == {"gen1", "me"}
    # this machine as root needs no sudo (a Debian without it installed); over SSH the inventory's settings hold
    me = site["all"]["children"]["loadgen"]["hosts"]["me"]
    assert me.get("ansible_become") is (False if os.geteuid() == 0 else None)
    assert "ansible_become" not in site["all"]["children"]["loadgen"]["hosts"]["gen1"]


def test_an_unreachable_host_and_one_whose_sudo_wants_a_password_are_each_named(tmp_path):
    # tuned: SSH refused on a loopback port nothing listens on; gen: a stand-in for sudo that asks for a
    # password (it answers as sudo -n does there), used by Ansible's own sudo become plugin
    sudo = tmp_path / "sudo"
    sudo.write_text("#!/bin/sh\necho 'sudo: a password is required' >&2\nexit 1\n")
    sudo.chmod(0o755)
    inv = hosts.read(inventory(tmp_path, f"""
        all:
          hosts:
            default: {{ansible_connection: local}}
            tuned: {{ansible_host: 127.0.0.1, ansible_port: 9}}
          children:
            loadgen:
              hosts:
                gen:
                  ansible_connection: local
                  ansible_become: true
                  ansible_become_exe: {sudo}
                  ansible_become_user: nobody
        """))
    with pytest.raises(hosts.HostsError) as failure:
        hosts.check(inv, state=tmp_path / "state")
    lines = str(failure.value).splitlines()
    assert lines[0] == "the hosts are not ready; nothing was changed on any of them:"
    assert any(line.startswith("  tuned (127.0.0.1): unreachable over SSH:") and "port 9" in line for line in lines)
    assert any(line.startswith("  gen (gen): sudo asks for a password") for line in lines)
    assert not any("default" in line for line in lines[1:])


def test_a_ready_host_gives_its_facts(tmp_path):
    inv = hosts.read(inventory(tmp_path, """
        all:
          hosts:
            default: {ansible_connection: local, ansible_host: 127.0.0.2}
            tuned: {ansible_connection: local, ansible_host: 127.0.0.3}
        """))
    facts = hosts.check(inv, state=tmp_path / "state")
    assert set(facts) == {"default", "tuned"}
    meminfo = int(open("/proc/meminfo").readline().split()[1]) // 1024
    assert abs(facts["tuned"]["memory_mb"] - meminfo) <= 64
    assert facts["tuned"]["cpus"] >= 1 and facts["tuned"]["kernel"] == subprocess.run(
        ["uname", "-r"], capture_output=True, text=True).stdout.strip()
    assert yaml.safe_load((tmp_path / "state" / "check-inventory.yml").read_text())["all"]["hosts"]["default"][
        "lab_private_ip"] == "127.0.0.2"


def test_this_machines_address_toward_a_host_is_its_route_source():
    assert hosts.source_address("127.0.0.1") == "127.0.0.1"
    with pytest.raises(hosts.HostsError, match="no route"):
        hosts.source_address("not-an-address")


def test_secret_variables_are_refused_not_copied(tmp_path):
    """The lab writes the inventory's variables into .lab/hosts/: a password (SSH, sudo) or another secret there is
    refused, each named (not its value), when the inventory is read, before anything is written."""
    message = refused(tmp_path, """
        all:
          vars: {ansible_become_password: hunter2}
          hosts:
            default: {ansible_host: 10.0.0.11, ansible_password: hunter2, ansible_python_interpreter: /usr/bin/python3}
            tuned: {ansible_host: 10.0.0.12, app_token: abc}
        """)
    assert "default: ansible_become_password, ansible_password: the lab does not copy secrets" in message
    assert "tuned: ansible_become_password, app_token:" in message and "ssh-agent" in message
    assert "hunter2" not in message and "ansible_python_interpreter" not in message


def test_the_files_the_lab_writes_for_the_hosts_are_private(tmp_path):
    inv = hosts.read(inventory(tmp_path, """
        all:
          hosts: {default: {ansible_host: 10.0.0.11}, tuned: {ansible_host: 10.0.0.12}}
        """))
    state = tmp_path / "state"
    state.mkdir(mode=0o755)
    (state / "ssh_config").write_text("old")
    (state / "ssh_config").chmod(0o644)
    before = os.umask(0o022)
    try:
        written = hosts.write_state(inv, state)
    finally:
        os.umask(before)
    assert state.stat().st_mode & 0o777 == 0o700
    assert [oct(p.stat().st_mode & 0o777) for p in written] == [oct(0o600)] * 2


def test_the_targets_admit_this_machine_as_they_saw_it_and_every_generator(tmp_path):
    """Behind NAT a target sees another address than this machine's own: the one its SSH session came from."""
    inv = hosts.read(inventory(tmp_path, """
        all:
          hosts: {default: {ansible_host: 10.0.0.11}, tuned: {ansible_host: 10.0.0.12}}
          children:
            loadgen: {hosts: {gen1: {ansible_host: 10.0.0.21}, gen6: {ansible_host: "2001:db8::21"},
                              me: {ansible_connection: local}}}
        """))
    seen = {"default": {"controller_address": "203.0.113.7"}, "tuned": {"controller_address": "::ffff:198.51.100.7"}}
    assert hosts.networks(inv, seen) == ["10.0.0.21/32", "198.51.100.7/32", "2001:db8::21/128", "203.0.113.7/32"]
    with pytest.raises(hosts.HostsError, match=r"tuned \(10.0.0.12\): its SSH session did not say where this "
                                               r"machine comes from \(SSH_CONNECTION gave ''\)"):
        hosts.networks(inv, {"default": seen["default"], "tuned": {"controller_address": None}})
    site = hosts.ansible_inventory(inv, tmp_path / "ssh_config", [], {})
    assert site["all"]["hosts"]["default"]["ansible_host_key_checking"] is True
    assert "ansible_host_key_checking" not in site["all"]["children"]["loadgen"]["hosts"]["me"]


def test_down_runs_its_playbook_on_every_host_and_names_one_it_cannot_reach(tmp_path):
    """hosts_down.down checks the hosts as a run does, then runs down_hosts.yml on them (here: this machine twice,
    with no HTTPD and no lab table, so nothing is found to remove); an unreachable host is named, nothing runs."""
    said = []
    hosts_down.down(inventory(tmp_path, """
        all:
          hosts:
            default: {ansible_connection: local, ansible_host: 127.0.0.2}
            tuned: {ansible_connection: local, ansible_host: 127.0.0.3}
        """), log=said.append, state=tmp_path / "state")
    assert said[-2:] == ["default (default): no unit of the lab found: nothing to remove",
                         "tuned (tuned): no unit of the lab found: nothing to remove"]
    with pytest.raises(hosts.HostsError) as failure:
        hosts_down.down(inventory(tmp_path, """
            all:
              hosts:
                default: {ansible_connection: local}
                tuned: {ansible_host: 127.0.0.1, ansible_port: 9}
            """, "bad.yml"), log=said.append, state=tmp_path / "state")
    assert "tuned (127.0.0.1): unreachable over SSH" in str(failure.value)
