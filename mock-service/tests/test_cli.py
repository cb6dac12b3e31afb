"""The process as systemd runs it: flags and MOCK_* variables, bad input, the start line, SIGTERM."""
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import threading
import urllib.request
from pathlib import Path

import pytest

from mock_service import config


def run_cli(*argv: str, env: dict | None = None, timeout: float = 20) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mock_service", *argv], capture_output=True, text=True,
                          timeout=timeout, env={**_clean_env(), **(env or {})})


def _clean_env() -> dict:
    return {k: v for k, v in os.environ.items() if not k.startswith("MOCK_")}


@pytest.mark.parametrize("argv, env, names", [
    (["--port", "70000"], {}, "--port"),
    (["--port", "http"], {}, "--port"),
    (["--latency", "gaussian:10"], {}, "--latency"),
    (["--latency", "uniform:15,5"], {}, "--latency"),
    (["--latency", "lognormal:10"], {}, "--latency"),
    (["--latency", "pareto:0,2"], {}, "--latency"),
    (["--error-rate", "1.5"], {}, "--error-rate"),
    (["--error-rate", "nan"], {}, "--error-rate"),
    (["--error-status", "200"], {}, "--error-status"),
    (["--keep-alive", "maybe"], {}, "--keep-alive"),
    (["--event-loop", "trio"], {}, "--event-loop"),
    (["--customers", "0"], {}, "--customers"),
    (["--endpoint-latency", "invoices=fixed:1"], {}, "--endpoint-latency"),
    (["--endpoint-latency", "orders"], {}, "--endpoint-latency"),
    (["--no-such-flag"], {}, "--no-such-flag"),
    (["--port"], {}, "--port"),
    ([], {"MOCK_PORT": "abc"}, "MOCK_PORT"),
    ([], {"MOCK_SLOW_PROBABILITY": "2"}, "MOCK_SLOW_PROBABILITY"),
    ([], {"MOCK_ENDPOINT_LATENCY": "orders=fixed:1;bogus=fixed:2"}, "MOCK_ENDPOINT_LATENCY"),
])
def test_bad_flag_or_value_exits_2_with_one_clear_line(argv, env, names):
    result = run_cli(*argv, env=env)
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("mock-service: error:") and names in lines[0]
    assert "listening" not in result.stdout  # nothing started


def test_port_in_use_exits_2():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        result = run_cli("--port", str(taken.getsockname()[1]), "--event-loop", "asyncio")
    assert result.returncode == 2
    assert "cannot listen" in result.stderr and "--port" in result.stderr


def test_help_documents_every_flag_and_variable():
    result = run_cli("--help")
    assert result.returncode == 0
    for flag, *_ in config._OPTIONS:
        assert f"--{flag}" in result.stdout and config.env_name(flag) in result.stdout
    assert "MOCK_ENDPOINT_LATENCY" in result.stdout


def test_environment_and_precedence():
    s = config.parse([], environ={"MOCK_PORT": "9999", "MOCK_KEEP_ALIVE": "off",
                                  "MOCK_ENDPOINT_LATENCY": "orders=fixed:3; account=pareto:1,2"})
    assert (s.port, s.keep_alive) == (9999, False)
    assert [(n, str(d)) for n, d in s.endpoint_latency] == [("account", "pareto:1,2"), ("orders", "fixed:3")]
    assert config.parse(["--port", "1234"], environ={"MOCK_PORT": "9999"}).port == 1234
    assert config.parse([], environ={"MOCK_PORT": "", "MOCK_LATENCY": " "}).port == 9080
    defaults = config.parse([], environ={})
    assert (defaults.host, defaults.port, str(defaults.latency)) == ("127.0.0.1", 9080, "fixed:0")


def test_console_script_is_installed():
    script = Path(sys.executable).parent / "mock-service"
    if not script.exists():
        script = shutil.which("mock-service")
    if not script:
        pytest.skip("package not installed (pip install -e mock-service)")
    result = subprocess.run([str(script), "--version"], capture_output=True, text=True, timeout=20)
    assert result.returncode == 0 and result.stdout.startswith("mock-service ")


class Process:
    """`python -m mock_service` on a free port; reads the start line for the port."""

    def __init__(self, *argv: str, env: dict | None = None) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "mock_service", "--port", "0", *argv],
                                     stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                                     env={**_clean_env(), **(env or {})})
        self.start_line = self.proc.stdout.readline()
        match = re.search(r"listening on http://127\.0\.0\.1:(\d+)", self.start_line)
        if not match:
            self.proc.kill()
            raise AssertionError(f"did not start: {self.start_line}{self.proc.stdout.read()}")
        self.url = f"http://127.0.0.1:{match.group(1)}"

    def stop(self) -> tuple[int, str]:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        rest = self.proc.communicate(timeout=20)[0]
        return self.proc.returncode, rest


def test_start_line_shows_effective_settings():
    p = Process("--latency", "lognormal:10,0.5", env={"MOCK_CUSTOMERS": "77", "MOCK_EVENT_LOOP": "asyncio"})
    try:
        assert "customers=77" in p.start_line and "latency=lognormal:10,0.5" in p.start_line
        assert "running on asyncio" in p.start_line
        assert urllib.request.urlopen(p.url + "/customers/77").status == 200
    finally:
        code, _ = p.stop()
    assert code == 0


def test_sigterm_lets_requests_in_flight_finish():
    p = Process("--latency", "fixed:1500")
    result = {}

    def slow_request():
        with urllib.request.urlopen(p.url + "/customers/1", timeout=20) as r:
            result["status"] = r.status
            result["connection"] = r.headers["Connection"]

    client = threading.Thread(target=slow_request)
    client.start()
    # wait until the request is in flight, then ask the service to stop
    for _ in range(100):
        metrics = urllib.request.urlopen(p.url + "/metrics").read().decode()
        if "mock_http_requests_in_flight 1" in metrics:
            break
        threading.Event().wait(0.05)
    code, log = p.stop()
    client.join(20)
    assert code == 0
    assert result == {"status": 200, "connection": "close"}
    assert "SIGTERM received" in log and "stopped" in log


def test_sigterm_when_idle_exits_at_once():
    p = Process()
    urllib.request.urlopen(p.url + "/health")
    code, log = p.stop()
    assert code == 0 and "stopped after 1 request(s)" in log
