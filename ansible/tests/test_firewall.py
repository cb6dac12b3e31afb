"""The lab's firewall (roles/base: templates/nftables.conf.j2, tasks/firewall.yml) with the real nft, in throwaway
network namespaces (uniquely named, deleted afterwards; never the lab's own): a table of the lab's own that leaves a
host's tables alone when it is applied and removed, restricts only the lab's ports to lab_networks, lets ICMPv6
neighbour discovery through, and is refused before it applies when it would cut the SSH session provisioning runs
through. And the load generators' pmcd kept on the loopback (roles/loadgen)."""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys

import pytest
import yaml
from conftest import ANSIBLE_DIR, INVENTORY, VENV_BIN, Run, ansible_env, ansible_playbook, run_all
from test_render import render

NFT = shutil.which("nft") or "/usr/sbin/nft"
LAB_NETWORKS = ["10.77.0.2/32", "fd77::2/128"]     # of the client namespace's addresses, .2 is admitted, .3 not
FOREIGN = """table inet host_own {
  chain input { type filter hook input priority 0; policy accept; tcp dport 5556 drop; }
}
table ip docker_like {
  chain forward { type filter hook forward priority 0; policy drop; }
}
"""
needs_netns = pytest.mark.skipif(os.geteuid() != 0 or not os.path.exists(NFT) or not shutil.which("ip"),
                                 reason="needs root, nft (apt-get install nftables) and ip")


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> dict[str, str]:
    """{machine: the rendered rules}, with an inventory whose lab_networks hold an IPv4 and an IPv6 host."""
    base = tmp_path_factory.mktemp("firewall")
    data = yaml.safe_load(INVENTORY.read_text())
    data["all"]["vars"]["lab_networks"] = LAB_NETWORKS
    (base / "inventory.yml").write_text(yaml.safe_dump(data))
    return {m: files["base/nftables.conf"] for m, files in render(base / "r", None,
                                                                      inventory=base / "inventory.yml").items()}


def unit_stop_command() -> list[str]:
    """ExecStop of the unit tasks/firewall.yml installs: what removes the lab's table."""
    tasks = yaml.safe_load((ANSIBLE_DIR / "roles" / "base" / "tasks" / "firewall.yml").read_text())
    unit = next(t for t in tasks if t["name"] == "Install the unit that loads the table")["ansible.builtin.copy"]
    line = next(x for x in unit["content"].splitlines() if x.startswith("ExecStop="))
    return line.removeprefix("ExecStop=").lstrip("-").split()


@contextlib.contextmanager
def netns(*names: str):
    """Network namespaces named lab-fwtest-<pid>-<name>, deleted on the way out."""
    made = [f"lab-fwtest-{os.getpid()}-{n}" for n in names]
    try:
        for ns in made:
            subprocess.run(["ip", "netns", "add", ns], check=True)
            subprocess.run(["ip", "-n", ns, "link", "set", "lo", "up"], check=True)
        yield made
    finally:
        for ns in made:
            subprocess.run(["ip", "netns", "delete", ns], capture_output=True)


def nft(ns: str, *args: str, text: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", "netns", "exec", ns, NFT, *args], input=text, capture_output=True, text=True)


def tables(ns: str) -> set[str]:
    return set(nft(ns, "list", "tables").stdout.strip().splitlines())


def test_the_lab_has_a_table_of_its_own_for_its_ports(rendered):
    for machine, text in rendered.items():
        commands = [line.strip() for line in text.splitlines() if not line.lstrip().startswith("#")]
        assert not any(c.startswith("flush") for c in commands) and "table inet camel_lab {" in commands, machine
        assert "policy accept;" in text and "policy drop" not in text, machine
        assert "elements = { 80, 443, 4330, 8009, 8080, 9080, 44321, 44322, 44323 }" in text, machine
        assert "elements = { 10.77.0.2/32 }" in text and "elements = { fd77::2/128 }" in text, machine


@needs_netns
def test_a_hosts_own_tables_survive_the_labs_table_applied_again_and_removed(rendered, tmp_path):
    with netns("survive") as (ns,):
        assert nft(ns, "-f", "-", text=FOREIGN).returncode == 0
        own = tables(ns)
        for machine, text in rendered.items():
            rules = tmp_path / f"{machine}.nft"
            rules.write_text(text)
            for step in (["-c", "-f"], ["-f"], ["-f"]):        # checked, applied, applied again (replaced)
                done = nft(ns, *step, str(rules))
                assert done.returncode == 0, f"{machine}: nft {step}: {done.stderr}"
            assert tables(ns) == own | {"table inet camel_lab"}, machine
            assert len(nft(ns, "list", "table", "inet", "camel_lab").stdout.split("chain input")) == 2
        stop = subprocess.run(["ip", "netns", "exec", ns, *unit_stop_command()], capture_output=True, text=True)
        assert stop.returncode == 0, stop.stderr
        assert tables(ns) == own


PROBE = """
import json, socket, sys
out = {}
for src, dst, port in json.loads(sys.argv[1]):
    s = socket.socket(socket.AF_INET6 if ":" in dst else socket.AF_INET)
    s.settimeout(2)
    try:
        s.bind((src, 0))
        s.connect((dst, port))
        out[f"{src}>{port}"] = "open"
    except OSError as e:
        out[f"{src}>{port}"] = type(e).__name__
    s.close()
print(json.dumps(out))
"""
LISTEN = """
import socket, sys, time
socks = []
for port in map(int, sys.argv[1:]):
    s = socket.socket(socket.AF_INET6)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("::", port))
    s.listen()
    socks.append(s)
print("listening", flush=True)
time.sleep(600)
"""


@needs_netns
def test_only_the_labs_ports_are_restricted_and_neighbour_discovery_passes(rendered, tmp_path):
    """A host namespace with the lab's rules (and a table of its own) and a client one, over a veth pair: the lab's
    port 80 answers the admitted .2 / ::2 only (over IPv6: after neighbour discovery), the host's port 5555 answers
    everyone, the host's own drop of 5556 stands; with the lab's table removed, port 80 answers everyone."""
    with netns("host", "client") as (host, client):
        subprocess.run(["ip", "-n", host, "link", "add", "vh", "type", "veth", "peer", "name", "vc", "netns", client],
                       check=True)
        for ns, dev, ends in ((host, "vh", ["1"]), (client, "vc", ["2", "3"])):
            for end in ends:
                subprocess.run(["ip", "-n", ns, "addr", "add", f"10.77.0.{end}/24", "dev", dev], check=True)
                subprocess.run(["ip", "-n", ns, "addr", "add", f"fd77::{end}/64", "dev", dev, "nodad"], check=True)
            subprocess.run(["ip", "-n", ns, "link", "set", dev, "up"], check=True)
        rules = tmp_path / "tuned.nft"
        rules.write_text(rendered["tuned"])
        assert nft(host, "-f", "-", text=FOREIGN).returncode == 0
        assert nft(host, "-f", str(rules)).returncode == 0
        server = subprocess.Popen(["ip", "netns", "exec", host, sys.executable, "-c", LISTEN, "80", "5555", "5556"],
                                  stdout=subprocess.PIPE, text=True)
        try:
            assert server.stdout.readline().strip() == "listening"

            def probe(*cases) -> dict[str, str]:
                done = subprocess.run(["ip", "netns", "exec", client, sys.executable, "-c", PROBE, json.dumps(cases)],
                                      capture_output=True, text=True, timeout=60)
                return json.loads(done.stdout)
            assert probe(("fd77::2", "fd77::1", 80), ("10.77.0.2", "10.77.0.1", 80), ("10.77.0.3", "10.77.0.1", 80),
                         ("fd77::3", "fd77::1", 80), ("10.77.0.3", "10.77.0.1", 5555),
                         ("10.77.0.2", "10.77.0.1", 5556)) == {
                "fd77::2>80": "open", "10.77.0.2>80": "open", "10.77.0.3>80": "TimeoutError",
                "fd77::3>80": "TimeoutError", "10.77.0.3>5555": "open", "10.77.0.2>5556": "TimeoutError"}
            stop = subprocess.run(["ip", "netns", "exec", host, *unit_stop_command()], capture_output=True)
            assert stop.returncode == 0
            assert probe(("10.77.0.3", "10.77.0.1", 80), ("10.77.0.2", "10.77.0.1", 5556)) == {
                "10.77.0.3>80": "open", "10.77.0.2>5556": "TimeoutError"}
        finally:
            server.kill()
            server.wait()


SESSION_PLAY = """
- name: The firewall's check of the SSH session, alone (tags), on this machine
  hosts: default
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
    base_lab_ports: [80, 443]
  tasks:
    - name: The base role's firewall tasks
      ansible.builtin.import_tasks: %s
"""


def test_rules_that_would_cut_the_ssh_session_are_refused_before_they_apply(tmp_path):
    """SSH_CONNECTION as sshd sets it; port 443 stands for an sshd that listens on one of the lab's ports."""
    play = tmp_path / "play.yml"
    play.write_text(SESSION_PLAY % (ANSIBLE_DIR / "roles" / "base" / "tasks" / "firewall.yml"))

    def case(session: str, networks: list[str]):
        def run() -> Run:
            command = [str(VENV_BIN / "ansible-playbook"), "-i", str(INVENTORY), "--tags", "base_firewall_session",
                       "-e", json.dumps({"lab_networks": networks}), str(play)]
            done = subprocess.run(command, cwd=ANSIBLE_DIR, env={**ansible_env(), "SSH_CONNECTION": session},
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
            return Run(command, done.returncode, done.stdout)
        return run
    runs = run_all({
        "cut": case("203.0.113.9 50000 10.0.0.5 443", ["10.9.9.0/24"]),
        "not a lab port": case("203.0.113.9 50000 10.0.0.5 22", ["10.9.9.0/24"]),
        "admitted": case("203.0.113.9 50000 10.0.0.5 443", ["10.9.9.0/24", "203.0.113.0/24"]),
        "bad network": case("203.0.113.9 50000 10.0.0.5 22", ["10.9.9.0/33"]),
    })
    assert runs["not a lab port"].rc == 0 and runs["admitted"].rc == 0, runs["admitted"].describe()
    assert runs["cut"].rc == 2 and runs["cut"].messages("default") == [
        "default: the lab's firewall would refuse 203.0.113.9 (this SSH session's client, as the host sees it) on "
        "port 443, the host's SSH port and one of the lab's ports (base_lab_ports), since lab_networks (10.9.9.0/24) "
        "does not hold it: add 203.0.113.9 to lab_networks; no rule was applied"], runs["cut"].describe()
    assert runs["bad network"].rc == 2 and runs["bad network"].messages("default") == [
        "default: lab_networks holds what is not a network: '10.9.9.0/33'; no rule was applied"]


def test_a_load_generators_pmcd_listens_on_the_loopback_only(tmp_path):
    """roles/loadgen's task, run on a copy of Debian's /etc/default/pmcd: PMCD_LOCAL=1, and pmcd restarted."""
    role = ANSIBLE_DIR / "roles" / "loadgen"
    task = next(t for t in yaml.safe_load((role / "tasks" / "pmcd.yml").read_text())
                if t["name"].startswith("Keep pmcd local"))
    defaults = tmp_path / "pmcd"
    defaults.write_text("# Debian's, shortened\n# PMCD_LOCAL=0\nPMCD_MAXPENDING=5\n")
    play = [{"name": "The loadgen role's pmcd setting", "hosts": "default", "connection": "local",
             "gather_facts": False, "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}",
                                             "loadgen_pmcd_defaults": str(defaults)},
             "tasks": [task],
             "handlers": [{"name": "Restart pmcd", "ansible.builtin.debug": {"msg": "pmcd restarted"}}]}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    run = ansible_playbook("-i", str(INVENTORY), str(tmp_path / "play.yml"))
    assert run.rc == 0 and "RUNNING HANDLER [Restart pmcd]" in run.out, run.describe()
    assert defaults.read_text() == "# Debian's, shortened\nPMCD_LOCAL=1\nPMCD_MAXPENDING=5\n"
    handlers = yaml.safe_load((role / "handlers" / "main.yml").read_text())
    assert {h.get("listen") for h in handlers} == {"Restart pmcd"} and len(handlers) == 2


@pytest.mark.parametrize("answering", [False, True])
def test_a_pmcd_the_play_has_just_started_is_not_restarted_at_once(tmp_path, answering):
    """On a new host the init script started pmcd and the handler restarted it at once: the script found the new
    pmcd's pid file not yet its own and failed the --hosts run. A pmcd that ran before is still restarted (it must
    read PMCD_LOCAL). The role's own tasks and handlers, their commands stood in for, init not systemd."""
    role = ANSIBLE_DIR / "roles" / "loadgen"

    def stood_in(item):
        if "when" in item:
            item = {**item, "when": item["when"].replace("ansible_facts.service_mgr", "lab_service_mgr")}
        if "ansible.builtin.command" in item:
            item["ansible.builtin.command"] = "echo " + item.pop("name").replace("(", "").replace(")", "")
            item["name"] = item["ansible.builtin.command"][5:]
        return item
    tasks = [stood_in(t) for t in yaml.safe_load((role / "tasks" / "pmcd.yml").read_text())
             if t["name"].startswith(("Keep pmcd local", "Start pmcd"))]
    handlers = [stood_in(h) for h in yaml.safe_load((role / "handlers" / "main.yml").read_text())]
    defaults = tmp_path / "pmcd"
    defaults.write_text("# PMCD_LOCAL=0\n")
    play = [{"name": "The loadgen role's pmcd start", "hosts": "default", "connection": "local",
             "gather_facts": False, "vars": {"ansible_python_interpreter": "{{ ansible_playbook_python }}",
                                             "loadgen_pmcd_defaults": str(defaults), "lab_service_mgr": "sysvinit",
                                             "loadgen_pmcd": {"rc": 0 if answering else 1}},
             "tasks": tasks, "handlers": handlers}]
    (tmp_path / "play.yml").write_text(yaml.safe_dump(play, sort_keys=False))
    run = ansible_playbook("-i", str(INVENTORY), str(tmp_path / "play.yml"))
    assert run.rc == 0, run.describe()
    blocks = {block.split("]", 1)[0]: block for block in run.out.split("\n\n") if block.startswith(("TASK", "RUNNING"))}
    started = "changed: [default]" in blocks["TASK [Start pmcd with its init script init is not systemd here"]
    restarted = "changed: [default]" in blocks["RUNNING HANDLER [Restart pmcd with its init script"]
    assert (started, restarted) == ((False, True) if answering else (True, False)), run.describe()
