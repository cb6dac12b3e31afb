"""The JIT's watch during an --until-settled load (lab/experiment/jit_watch.py): the machine's loop reads the kit's
counter from a real HTTP page (here on 127.0.0.1), the host keeps what it read, and a machine gone quiet on the wire
is left to its throughput."""
from __future__ import annotations

import csv
import http.server
import subprocess
import sys
import threading
import time

import pytest

from lab.experiment import jit_watch

PAGE = """# HELP jvm_compilation_time_ms_total The JIT's compiling time
# TYPE jvm_compilation_time_ms_total counter
jvm_compilation_time_ms_total{compiler="HotSpot 64-Bit Tiered Compilers"} 1234.5
jvm_compilation_time_ms_total{compiler="other"} 100
"""


@pytest.fixture
def kit_page():
    """A stand-in for the kit's /metrics on 127.0.0.1 (any free port); the queries it was asked, kept."""
    asked = []

    class Page(http.server.BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 - http.server's name
            asked.append(self.path)
            body = PAGE.encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Page)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1], asked
    server.shutdown()


def test_the_machines_loop_prints_the_counter_summed_over_its_compilers(kit_page):
    port, asked = kit_page
    loop = subprocess.Popen(["sh", "-c", jit_watch.loop_script(port, period_s=0.2)], stdout=subprocess.PIPE, text=True)
    try:
        lines = [loop.stdout.readline().strip() for _ in range(2)]
    finally:
        loop.kill()
        loop.wait()
    assert lines == ["1334.5", "1334.5"]
    assert asked[0] == "/metrics?names=jvm_compilation_time_ms_total"


def test_an_unanswered_page_prints_nothing():
    """Not a zero: a counter read as 0 would look like a JIT that never compiled."""
    with socket_bound() as port:
        loop = subprocess.run(["timeout", "2", "sh", "-c", jit_watch.loop_script(port, period_s=0.3)],
                              capture_output=True, text=True)
    assert loop.stdout == ""


class socket_bound:       # noqa: N801 - a context manager: a port nothing answers on (bound, never listening)
    def __enter__(self):
        import socket
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        return self.sock.getsockname()[1]

    def __exit__(self, *exc):
        self.sock.close()


def test_the_watch_keeps_each_machines_readings_and_leaves_out_a_stale_one(tmp_path):
    now = [1000.0]
    printing = "import sys, time\nfor v in sys.argv[1:]:\n    print(v, flush=True)\ntime.sleep(60)\n"
    watch = jit_watch.JitWatch(tmp_path, {
        "default": [sys.executable, "-c", printing, "100", "not a number", "250.5"],
        "tuned": [sys.executable, "-c", printing, "40"]}, clock=lambda: now[0]).start()
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and (len(watch.readings["default"][0]) < 2 or not watch.readings["tuned"][0]):
            time.sleep(0.05)
        got = watch.compiled()
        assert got["default"] == ([1000.0, 1000.0], [0.1, 0.2505]) and got["tuned"] == ([1000.0], [0.04])
        now[0] += jit_watch.STALE_S
        assert watch.compiled() == {}, "no reading for STALE_S: judged by the throughput alone"
    finally:
        said = watch.stop()
    assert said == {"default": {"readings": 2, "compiling_s": 0.3}, "tuned": {"readings": 1, "compiling_s": 0.0}}
    rows = list(csv.reader(open(tmp_path / "host" / "jit.csv")))
    assert rows[0] == ["time", "machine", "compiling_ms"] and len(rows) == 4


def test_a_child_that_ignores_sigterm_is_killed_after_its_grace_and_reaped():
    """lab/procs.end, which this watch, the liveness watch and Ansible's Ctrl-C path share."""
    from lab import procs
    stubborn = subprocess.Popen([sys.executable, "-c", "import signal, sys, time\n"
                                 "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nprint('ready', flush=True)\n"
                                 "time.sleep(60)\n"], stdout=subprocess.PIPE, text=True)
    assert stubborn.stdout.readline().strip() == "ready"
    started = time.monotonic()
    procs.end(stubborn, grace=0.5)
    assert stubborn.returncode == -9 and time.monotonic() - started < 10
    procs.end(stubborn)         # an ended child: nothing to do
