"""Real hosts, when the user is done with the lab there (`./start.sh down --hosts INVENTORY`, `--down` on a --hosts
run): the hosts checked as a run checks them, then ansible/down_hosts.yml deletes the lab's table inet camel_lab and
stops HTTPD, which needs it; no other table or rule of a host is touched, and the lab's packages and files stay."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

from lab import paths
from lab.provision import hosts, playbook

DOWN_PLAYBOOK = paths.ANSIBLE_DIR / "down_hosts.yml"
DOWN_TIMEOUT_S = 600
DOWN_SAID = re.compile(r'^ok: \[(?P<host>[^\]]+)\] => (?P<json>\{.*"lab-down: .*\})\s*$')   # down_hosts.yml's last line


def down(path: Path | str, log=print, state: Path = hosts.STATE) -> None:
    """The hosts of this inventory checked as for a run (their keys too), then down_hosts.yml run on them; each
    host's outcome logged. hosts.HostsError naming the hosts where it failed."""
    reached = hosts.prepare(path, log, state)
    command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", reached["inventory"], str(DOWN_PLAYBOOK)]
    env = {**playbook.ansible_env(), **playbook.JSON_RESULTS}
    try:
        done = subprocess.run(command, cwd=paths.ANSIBLE_DIR, env=env, capture_output=True, text=True,
                              timeout=DOWN_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise hosts.HostsError(f"removing the lab from the hosts took over {DOWN_TIMEOUT_S} s "
                               f"(ansible-playbook {DOWN_PLAYBOOK.name})") from None
    failed = hosts.host_failures(done.stdout)
    if done.returncode != 0 or failed:
        inv = hosts.read(path)
        lines = [f"  {name}: {hosts.why(result, inv.hosts.get(name), state / 'known_hosts')}"
                 for name, result in failed]
        tail = "\n    ".join((done.stderr or done.stdout).strip().splitlines()[-6:])
        raise hosts.HostsError("the lab could not be removed from every host (the others are done):\n"
                               + ("\n".join(lines) or f"  ansible-playbook exited {done.returncode}:\n    {tail}"))
    removed = {}
    for line in done.stdout.splitlines():
        said = DOWN_SAID.match(line)
        if said:
            removed[said.group("host")] = json.loads(said.group("json")).get("msg", "").removeprefix("lab-down: ")
    for side, name in reached["hosts"].items():
        units = [u for u in removed.get(side, "").split(",") if u]
        log(f"{side} ({name}): " + (f"stopped and disabled {', '.join(units)} (the table inet camel_lab goes with "
                                    f"its unit); nothing else touched" if units else
                                    "no unit of the lab found: nothing to remove"))
