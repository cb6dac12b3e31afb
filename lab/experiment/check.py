"""Before the load: each machine answers a real request through HTTPD, both probed at once from where the
machines are reached; one that does not is diagnosed (its services' states, the journal of those not running)."""
from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

from lab import shell
from lab.errors import LabError
from lab.experiment import services
from lab.machines import reach

CHECK_TIMEOUT_S = 600       # both JVMs start at once (equal start): ~2–3.5 min under TCG, then slow first requests


class RunError(LabError):
    """The run could not go on; the message says which phase and why."""


def check_answers(targets: dict[str, str], path: str, status: int = 200, log=print, timeout_s: float = CHECK_TIMEOUT_S,
                  diagnose=services.diagnose) -> dict[str, float]:
    """Each machine answers GET path (its descriptor's check: the sample app's /api/customers/1) through HTTPD with
    status, from inside the lab namespace; both probed at once. Returns {machine: seconds until it answered}. One
    that does not answer fails the check with what diagnose(its name) finds on it (its services' states, the
    journal of those not running)."""
    probe = ("import ssl, sys, time, urllib.error, urllib.request\n"
             "deadline = time.time() + float(sys.argv[2]); last = ''\n"
             "tls = ssl._create_unverified_context()  # the lab's own self-signed front, as JMeter takes it\n"
             "while time.time() < deadline:\n"
             "    try:\n"
             "        with urllib.request.urlopen(sys.argv[1], timeout=60, context=tls) as r:\n"
             "            got = r.status\n"
             "    except urllib.error.HTTPError as e:\n"
             "        got, last = e.code, str(e)\n"
             "    except Exception as e:\n"
             "        got, last = None, str(e)\n"
             "    if got == int(sys.argv[3]):\n"
             "        print(got, round(time.time() - deadline + float(sys.argv[2]), 1)); sys.exit(0)\n"
             "    if got is not None:\n"
             "        last = f'HTTP {got}, not {sys.argv[3]}'\n"
             "    time.sleep(2)\n"
             "print(last); sys.exit(1)\n")

    def one(item):
        name, base = item
        url = base + path
        try:
            done = shell.run(reach.wrap([sys.executable, "-c", probe, url, str(timeout_s), str(status)]),
                             f"{name} does not answer {url} through HTTPD", error=RunError)
        except RunError as silent:
            raise RunError(f"{silent}\n  its services now:\n  " + diagnose(name).replace("\n", "\n  ")) from None
        answered, after = done.stdout.split()[:2]
        log(f"{name}: {url} answers {answered} after {float(after):.0f} s")
        return name, float(after)
    with ThreadPoolExecutor(len(targets)) as pool:
        return dict(pool.map(one, targets.items()))
