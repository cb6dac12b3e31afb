"""Before the load: each machine answers a real request through HTTPD, both probed at once from where the
machines are reached; one that does not is diagnosed (its services' states, the journal of those not running)."""
from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor

from lab import shell
from lab.errors import LabError
from lab.experiment import services
from lab.machines import reach

CHECK_TIMEOUT_S = 600       # both JVMs start at once (equal start): ~2–3.5 min under TCG, then slow first requests
SLICE_S = 30                # a probe's time before the machine's units are asked whether they keep dying


class RunError(LabError):
    """The run could not go on; the message says which phase and why."""


def check_answers(targets: dict[str, str], path: str, status: int = 200, log=print, timeout_s: float = CHECK_TIMEOUT_S,
                  diagnose=services.diagnose, looping=services.crash_looping) -> dict[str, float]:
    """Each machine answers GET path (its descriptor's check: the sample app's /api/customers/1) through HTTPD with
    status, from inside the lab namespace; both probed at once. Returns {machine: seconds until it answered}. One
    that does not answer fails the check with what diagnose(its name) finds on it (its services' states, the
    journal of those not running): at the timeout, or as soon as looping(its name) says systemd keeps restarting
    one of its units (a JVM that dies at every start does not answer by waiting: it took the whole 10 minutes)."""
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
             "        print(got); sys.exit(0)\n"
             "    if got is not None:\n"
             "        last = f'HTTP {got}, not {sys.argv[3]}'\n"
             "    time.sleep(2)\n"
             "print(last); sys.exit(1)\n")

    def one(item):
        name, base = item
        url, start = base + path, time.monotonic()
        while True:                 # probed a slice at a time, the units' restarts read between slices
            left = timeout_s - (time.monotonic() - start)
            try:
                done = shell.run(reach.wrap([sys.executable, "-c", probe, url, f"{max(min(left, SLICE_S), 1):.0f}",
                                             str(status)]), f"{name} does not answer {url} through HTTPD",
                                 error=RunError)
                break
            except RunError as silent:
                why = looping(name)
                if why is None and time.monotonic() - start < timeout_s:
                    continue
                raise RunError(f"{silent}" + (f"\n  {why}" if why else "") + "\n  its services now:\n  "
                               + diagnose(name).replace("\n", "\n  ")) from None
        answered = done.stdout.split()[0]
        after = time.monotonic() - start
        log(f"{name}: {url} answers {answered} after {after:.0f} s")
        return name, after
    with ThreadPoolExecutor(len(targets)) as pool:
        return dict(pool.map(one, targets.items()))
