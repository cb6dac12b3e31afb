#!/usr/bin/env python3
"""Benchmark of the mock service: req/s, p99 latency and CPU seconds per 10 k requests.

Each case starts the server pinned to one core (--server-core) and drives it with wrk pinned to
another (--client-core), 50 connections, keep-alive, GET /customers/1; only 127.0.0.1 is used.
CPU is the server's utime+stime from /proc over the measured run (warm-up excluded).
Not a test: figures depend on what else runs on the machine; the load average is printed with them.

    python3 mock-service/bench.py                          # uvloop and asyncio, 0 and 10 ms
    python3 mock-service/bench.py --reference aiohttp      # plus a minimal aiohttp app, same load

Needs wrk (Debian: apt-get install wrk).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
TICK = os.sysconf("SC_CLK_TCK")

# The same answer as the mock's customer_get (2 KB JSON), from the lightest aiohttp app there is:
# the reference the library choice was made against.
AIOHTTP_REFERENCE = r"""
import asyncio, sys
from aiohttp import web
delay, loop = float(sys.argv[1]) / 1000, sys.argv[2]
body = b'{"id":1,"notes":"' + b"x" * 2030 + b'"}'
async def customer(request):
    if delay:
        await asyncio.sleep(delay)
    return web.Response(body=body, content_type="application/json")
app = web.Application()
app.router.add_get("/customers/{id}", customer)
if loop == "uvloop":
    import uvloop; uvloop.install()
async def main():
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    print("listening on http://127.0.0.1:%d" % site._server.sockets[0].getsockname()[1], flush=True)
    await asyncio.Event().wait()
asyncio.run(main())
"""


def cpu_seconds(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK  # utime, stime


def start_server(kind: str, loop: str, latency_ms: float, core: int, python: str) -> tuple[subprocess.Popen, int]:
    if kind == "mock-service":
        cmd = [python, "-m", "mock_service", "--port", "0", "--latency", f"fixed:{latency_ms:g}",
               "--event-loop", loop]
    else:
        cmd = [python, "-c", AIOHTTP_REFERENCE, str(latency_ms), loop]
    env = dict(os.environ, PYTHONPATH=HERE + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                            preexec_fn=lambda: os.sched_setaffinity(0, {core}))
    line = proc.stdout.readline()
    match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    if not match:
        proc.kill()
        raise SystemExit(f"bench: {kind} ({loop}) did not start: {line.strip()} {proc.stdout.read()[:500]}")
    return proc, int(match.group(1))


def run_wrk(wrk: str, url: str, seconds: int, connections: int, core: int) -> dict:
    cmd = ["taskset", "-c", str(core), wrk, "-t2", f"-c{connections}", f"-d{seconds}s", "--latency", url]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    requests = int(re.search(r"(\d+) requests in", out).group(1))
    rps = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
    p99 = re.search(r"^\s+99%\s+([\d.]+)(us|ms|s)\s*$", out, re.M)
    p99_ms = float(p99.group(1)) * {"us": 0.001, "ms": 1.0, "s": 1000.0}[p99.group(2)]
    bad = re.search(r"Non-2xx or 3xx responses: (\d+)", out)
    errors = re.search(r"Socket errors: (.*)", out)
    return {"requests": requests, "rps": rps, "p99_ms": p99_ms, "non2xx": int(bad.group(1)) if bad else 0,
            "socket_errors": errors.group(1) if errors else ""}


def bench_case(args, kind: str, loop: str, latency_ms: float) -> dict:
    proc, port = start_server(kind, loop, latency_ms, args.server_core, args.python)
    try:
        url = f"http://127.0.0.1:{port}/customers/1"
        run_wrk(args.wrk, url, args.warmup, args.connections, args.client_core)
        cpu0, t0 = cpu_seconds(proc.pid), time.monotonic()
        result = run_wrk(args.wrk, url, args.duration, args.connections, args.client_core)
        cpu1 = cpu_seconds(proc.pid)
        result["cpu_s"] = cpu1 - cpu0
        result["server_cpu_share"] = (cpu1 - cpu0) / (time.monotonic() - t0)
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
    result["cpu_s_per_10k"] = result["cpu_s"] / result["requests"] * 10_000
    result.update(server=kind, event_loop=loop, latency_ms=latency_ms, load_avg=os.getloadavg()[0])
    return result


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--latencies", default="0,10", help="fixed latencies to test, ms (default 0,10)")
    p.add_argument("--event-loops", default="uvloop,asyncio", help="default uvloop,asyncio")
    p.add_argument("--reference", choices=["aiohttp"], action="append", default=[],
                   help="also measure a minimal app of this library under the same load")
    p.add_argument("--connections", type=int, default=50)
    p.add_argument("--duration", type=int, default=10, help="measured seconds per case")
    p.add_argument("--warmup", type=int, default=2, help="unmeasured seconds before each case")
    p.add_argument("--server-core", type=int, default=1)
    p.add_argument("--client-core", type=int, default=0)
    p.add_argument("--python", default=sys.executable, help="interpreter that runs the servers")
    p.add_argument("--wrk", default=shutil.which("wrk"))
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    args = p.parse_args()
    if not args.wrk:
        raise SystemExit("bench: wrk not found (Debian: apt-get install wrk)")

    cases = [("mock-service", loop) for loop in args.event_loops.split(",")]
    cases += [(ref, loop) for ref in args.reference for loop in args.event_loops.split(",")]
    print(f"# {args.connections} connections, {args.duration} s per case, server on core {args.server_core}, "
          f"wrk on core {args.client_core}, {os.cpu_count()} cores; load average before: "
          f"{' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    header = (f"{'server':<13} {'loop':<8} {'latency':>7} {'req/s':>8} {'p99 ms':>7} "
              f"{'CPU s/10k':>9} {'ms CPU/req':>10} {'CPU %':>6} {'non-2xx':>7} {'load':>5}")
    print(header)
    results = []
    for latency in (float(x) for x in args.latencies.split(",")):
        for kind, loop in cases:
            r = bench_case(args, kind, loop, latency)
            results.append(r)
            print(f"{kind:<13} {loop:<8} {latency:>5g}ms {r['rps']:>8.0f} {r['p99_ms']:>7.2f} "
                  f"{r['cpu_s_per_10k']:>9.2f} {r['cpu_s_per_10k'] / 10:>10.3f} "
                  f"{r['server_cpu_share'] * 100:>5.0f}% {r['non2xx']:>7} {r['load_avg']:>5.2f}"
                  + (f"  socket errors: {r['socket_errors']}" if r["socket_errors"] else ""), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
