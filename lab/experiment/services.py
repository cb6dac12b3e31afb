"""Equal start: before every trial the services of both machines are restarted together, so the two JVMs
have the same history (Abedi & Brecht 2017: fresh, comparable trials), and each machine's start is recorded.

The run's PCP archive starts on both machines at once afterwards (collect.mark), as it always did.
"""
from __future__ import annotations

import subprocess
from concurrent.futures import ThreadPoolExecutor

from lab import machines, paths, shell
from lab.errors import LabError
from lab.machines import reach

# The units come from the machine's manifest (Ansible lists each role's service there); one `systemctl
# restart` takes them all (the app is After= the mock). A machine without a manifest fails here, by name.
UNITS = f"units=$(python3 -c 'import json; print(*json.load(open(\"{paths.GUEST_MANIFEST}\"))[\"services\"])')"
RESTART_TIMEOUT_S = 300     # the stop of a loaded JVM (TimeoutStopSec=60) and apache2's graceful stop


class RestartFailed(LabError):
    """A machine's services could not be restarted; the message names the machine."""


# A unit systemd failed to spawn (result 'resources': systemd 257 in a trixie container, on a read-only systemd cgroup
# hierarchy, once in four starts: "Failed to spawn executor: No such file or directory") is started once more at
# once; a unit that fails again fails the equal start as before.
RESTART = "sudo systemctl restart $units || { sleep 1; sudo systemctl start $units; }"


def _restart(name: str) -> dict:
    command = reach.ssh_command(name, f"{UNITS} && {{ {RESTART}; }} && systemctl show "
                                         "-p Id -p ActiveEnterTimestamp -p ActiveState $units")
    done = shell.run(command, f"{name}: restarting the services of its manifest failed", error=RestartFailed,
                     timeout=RESTART_TIMEOUT_S)
    return parse_show(done.stdout)


def _units(text: str) -> dict[str, dict]:
    """`systemctl show -p Id -p … a b` → {unit: {property: value}}."""
    units, current = {}, {}
    for line in text.splitlines() + [""]:
        if not line.strip():
            if current.get("Id"):
                units[current["Id"].removesuffix(".service")] = current
            current = {}
            continue
        key, _, value = line.partition("=")
        current[key] = value
    return units


def parse_show(text: str) -> dict:
    """`systemctl show -p Id -p ActiveEnterTimestamp -p ActiveState a b` → {unit: {state, since}}."""
    return {unit: {"state": p.get("ActiveState"), "since": p.get("ActiveEnterTimestamp")}
            for unit, p in _units(text).items()}


CRASH_LOOP = 3              # systemd's restarts of a unit since the equal start that say waiting will not help


def crash_looping(name: str) -> str | None:
    """The machine's units systemd has restarted CRASH_LOOP times or more since the equal start (Restart=on-failure:
    a JVM that dies at every start; a manual restart sets the count back to 0), as "camel-app: restarted 5 times since
    the equal start"; None where none is, or SSH does not answer."""
    try:
        found = reach.ssh(name, f"{UNITS} && systemctl show -p Id -p NRestarts $units", timeout=60)
    except subprocess.TimeoutExpired:
        return None
    said = [f"{unit}: restarted {n} times since the equal start" for unit, p in _units(found.stdout).items()
            if (n := int(p.get("NRestarts") or 0)) >= CRASH_LOOP]
    return "; ".join(said) or None


def restart_together(names=machines.NAMES) -> dict:
    """Restarts every machine's services at the same moment; {machine: {unit: {state, since}}}."""
    with ThreadPoolExecutor(len(names)) as pool:
        return dict(zip(names, pool.map(_restart, names), strict=True))


def diagnose(name: str, lines: int = 12) -> str:
    """Why a machine may not answer: the state of each unit of its manifest, and the journal's last lines of
    those not active (provisioning no longer starts the app itself: a start that fails shows up here)."""
    command = (f"{UNITS} && for u in $units; do echo \"$u: $(systemctl is-active $u)\"; done; "
               f"for u in $units; do systemctl is-active --quiet $u || sudo journalctl -u $u -n {lines} "
               "--no-pager -o cat; done")
    try:
        found = reach.ssh(name, command, timeout=60)
    except subprocess.TimeoutExpired:
        return f"{name}: no answer over SSH either"
    return (found.stdout.strip() or found.stderr.strip() or "nothing to say")[-3000:]
