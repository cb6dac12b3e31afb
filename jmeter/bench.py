#!/usr/bin/env python3
"""How much load can one JMeter process make here? (So we know it is not the bottleneck for 2 × 150 users.)

Runs the lab's own plan through lab/experiment/load/, 150 users per "machine" (300 threads in one JMeter), both
machines pointed at one mock service on 127.0.0.1, with customers_path=/customers so the requests reach the mock's
/customers/{id}. Only GETs (mix get=100): the mock has no /summary. Every sample fails its JSON assertion
(the mock's customer has "id", the app's "customerId") — JMeter does the assertion work all the same,
so the figure is what JMeter can generate with the plan's full per-request machinery.

    .venv/bin/python jmeter/bench.py                       # 150 users, 5 s ramp, 20 s hold, mock latency 0
    .venv/bin/python jmeter/bench.py --latency fixed:10    # with 10 ms per request at the mock

Prints req/s (hold only), JMeter's peak RSS and CPU time, the mock's CPU, the host's load average.
Not a test: no figure is asserted. Everything it starts is stopped by its PID.
"""
from __future__ import annotations

import argparse
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from lab.experiment import load  # noqa: E402


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def mock_cpu_s(url: str) -> float:
    text = urllib.request.urlopen(f"{url}/metrics", timeout=5).read().decode()
    return float(re.search(r"^process_cpu_seconds_total (\S+)", text, re.M).group(1))


def start_mock(latency: str) -> tuple[subprocess.Popen, str]:
    port = free_port()
    python = ROOT / ".venv" / "bin" / "python"
    proc = subprocess.Popen([str(python if python.exists() else sys.executable), "-m", "mock_service",
                             "--port", str(port), "--latency", latency],
                            cwd=ROOT / "mock-service", stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    for _ in range(60):
        try:
            urllib.request.urlopen(f"{url}/health", timeout=1)
            return proc, url
        except OSError:
            time.sleep(0.5)
    proc.terminate()
    raise SystemExit(f"bench: the mock service did not start on {url}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--users", type=int, default=150, help="users per machine (default 150)")
    ap.add_argument("--ramp", type=int, default=5, help="ramp-up seconds (default 5)")
    ap.add_argument("--hold", type=int, default=20, help="measured seconds after the ramp (default 20)")
    ap.add_argument("--latency", default="fixed:0", help="the mock's --latency (default fixed:0)")
    ap.add_argument("--keep", action="store_true", help="keep the run folder (JTLs, jmeter.log)")
    args = ap.parse_args()

    profile = load.Profile(users=args.users, ramp_up_s=args.ramp, duration_s=args.hold, customers_path="/customers",
                           mix={"get": 100, "summary": 0, "post": 0, "delete": 0})
    load.ensure_jmeter()
    run_dir = Path(tempfile.mkdtemp(prefix="jmeter-bench-"))
    mock, url = start_mock(args.latency)
    try:
        cpu0 = mock_cpu_s(url)
        result = load.run(run_dir, {"default": url, "tuned": url}, profile,
                          progress=lambda line: print(line, flush=True))
        mock_cpu = mock_cpu_s(url) - cpu0
    finally:
        mock.terminate()
        mock.wait(20)
    load1, load5, _ = os.getloadavg()

    in_hold = {}
    for machine in load.MACHINES:
        stamps = [int(s["timeStamp"]) for s in load.read_jtl(run_dir / machine / "jmeter.jtl")]
        hold_from = result.test_start_ms + args.ramp * 1000
        in_hold[machine] = sum(1 for t in stamps if hold_from <= t < hold_from + args.hold * 1000)
    total = sum(result.samples.values())
    rate = sum(in_hold.values()) / args.hold
    print()
    print(f"JMeter {result.jmeter_version}, one process, {2 * args.users} threads ({args.users} per machine), "
          f"mock latency {args.latency}, {os.cpu_count()} CPUs, load average {load1:.1f} (1 min) {load5:.1f} (5 min)")
    print(f"  throughput in the hold:  {rate:8.0f} req/s   "
          f"(default {in_hold['default'] / args.hold:.0f}, tuned {in_hold['tuned'] / args.hold:.0f})")
    print(f"  JMeter peak RSS:         {result.jmeter_peak_rss_mb:8.0f} MB    (heap limit {load.JVM_OPTIONS[1][4:]})")
    print(f"  JMeter CPU:              {result.jmeter_cpu_s:8.1f} s     "
          f"= {1000 * result.jmeter_cpu_s / max(total, 1):.3f} ms per request over {total} requests")
    print(f"  mock CPU:                {mock_cpu:8.1f} s     (shares the same {os.cpu_count()} CPUs)")
    print(f"  run folder: {run_dir}" if args.keep else "")
    if not args.keep:
        import shutil
        shutil.rmtree(run_dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
