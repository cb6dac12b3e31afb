"""`./start.sh status`: each machine's state, address, box, provider, accelerator, memory, CPUs, uptime and CPU
placement; without root, what the lab's own files say."""
from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

from lab import machines
from lab.machines import netns, reach, vagrant


def show() -> None:
    """Each machine's state, IP, box (its Debian suite), provider, accelerator, memory, CPUs, uptime and vCPU
    placement."""
    resolved = vagrant.read_resolved() or {}
    states = vagrant.states()
    print(f"lab namespace: {'up' if vagrant.healthy() else 'down'}; provider: {resolved.get('provider', '-')} "
          f"({resolved.get('provider_reason', 'not resolved yet')}); accelerator: "
          f"{resolved.get('accelerator', '-')} ({resolved.get('accelerator_reason', 'not resolved yet')})")
    print(f"{'machine':8} {'state':12} {'ip':15} {'box':9} {'provider':10} {'accel':6} {'memory':>8} {'cpus':>4} "
          f"{'uptime':>8}  placement")
    with ThreadPoolExecutor(len(machines.NAMES)) as pool:     # both at once: an SSH login and a placement each
        probed = dict(zip(machines.NAMES, pool.map(lambda n: probe(n, states[n]), machines.NAMES), strict=True))
    for name in machines.NAMES:
        state = states[name]
        memory, cpus, uptime, cores = probed[name]
        print(f"{name:8} {state:12} {resolved.get('machines', {}).get(name, '-'):15} "
              f"{(resolved.get('suites') or {}).get(name, '-'):9} {resolved.get('provider', '-'):10} "
              f"{resolved.get('accelerator', '-'):6} {memory:>8} {cpus:>4} {uptime:>8}  {cores}")


def probe(name: str, state: str) -> tuple[str, str, str, str]:
    """A running machine's memory, CPUs, uptime and vCPU placement, as the table shows them ("-": unknown)."""
    memory = cpus = uptime = cores = "-"
    if state == "running":
        said = reach.ssh(name, MEMORY_CPUS_UPTIME)
        if said.returncode == 0 and len(said.stdout.split()) == 3:
            mem, cpus, up_s = said.stdout.split()
            memory, uptime = f"{mem} MB", f"{float(up_s):.0f} s"
        cores = vagrant.vcpu_placement(name)
    return memory, cpus, uptime, cores


# A machine's memory (its cgroup's limit where it has one below its RAM: a container's), CPUs and uptime. A
# container's /proc/meminfo and `free` show the host's memory; its uptime is the host's too, so a container's is
# its PID 1's age.
MEMORY_CPUS_UPTIME = (
    "lim=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory.max 2>/dev/null | head -1); "
    "ram=$(free -m | awk '/^Mem:/{print $2}'); "
    "case \"$lim\" in ''|max) echo $ram;; *) m=$((lim / 1048576)); [ $m -lt $ram ] && echo $m || echo $ram;; esac; "
    "nproc; "
    "if [ \"$(cat /run/systemd/container 2>/dev/null)\" ]; then ps -o etimes= -p 1 | tr -d ' '; "
    "else cut -d' ' -f1 /proc/uptime; fi")


def show_without_root() -> None:
    """What the lab's files say. The machines' state, memory and placement are libvirt's or the lab's Docker
    daemon's, in the lab's namespace: root's."""
    resolved = vagrant.read_resolved() or {}
    print(f"lab namespace {netns.NAME}: {'present' if netns.exists() else 'absent'}; provider: "
          f"{resolved.get('provider', '-')}; accelerator: {resolved.get('accelerator', '-')} "
          f"({resolved.get('accelerator_reason', 'not resolved yet')})")
    for name in machines.NAMES:
        print(f"{name:8} ip {resolved.get('machines', {}).get(name, '-')}")
    print("not shown without root: each machine's state, memory, CPUs, uptime and CPU placement (the machines and "
          "the lab namespace are root's): sudo ./start.sh status", file=sys.stderr)
