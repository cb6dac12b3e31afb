"""Fixtures: a mock service running in a background thread on a free port, and a tiny HTTP client."""
from __future__ import annotations

import asyncio
import http.client
import json
import threading

import pytest

from mock_service import config, server

try:
    import uvloop  # noqa: F401
    LOOPS = ["asyncio", "uvloop"]
except ImportError:  # the tests still run where uvloop is absent
    LOOPS = ["asyncio"]


class Reply:
    def __init__(self, resp: http.client.HTTPResponse) -> None:
        self.status = resp.status
        self.headers = resp.headers
        self.body = resp.read()

    def json(self):
        return json.loads(self.body)


class RunningServer:
    """mock_service.server.serve() in its own thread and event loop; stop() drains it like SIGTERM."""

    def __init__(self, *argv: str) -> None:
        self.settings = config.parse(["--port", "0", *argv], environ={})
        factory, self.loop_name = server.loop_factory(self.settings.event_loop)
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(factory,), daemon=True)
        self._thread.start()
        assert self._ready.wait(10), "mock service did not start"

    def _run(self, factory) -> None:
        with asyncio.Runner(loop_factory=factory) as runner:
            runner.run(self._main())

    async def _main(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._stop = asyncio.Event()
        await server.serve(self.settings, self.loop_name, stop=self._stop,
                           on_ready=self._on_ready, handle_signals=False)

    def _on_ready(self, port: int) -> None:
        self.port = port
        self._ready.set()

    def stop(self) -> None:
        self.loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(15)

    def request(self, method: str, path: str, body=None, headers=None, timeout: float = 30) -> Reply:
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            if body is not None and not isinstance(body, (bytes, str)):
                body = json.dumps(body)
                headers = {"Content-Type": "application/json", **(headers or {})}
            conn.request(method, path, body=body, headers=headers or {})
            return Reply(conn.getresponse())
        finally:
            conn.close()

    def get(self, path: str, **kw) -> Reply:
        return self.request("GET", path, **kw)

    def metrics(self) -> dict[str, float]:
        """The /metrics samples as {'name{labels}': value}."""
        text = self.get("/metrics").body.decode()
        samples = {}
        for line in text.splitlines():
            if line and not line.startswith("#"):
                name, _, value = line.rpartition(" ")
                samples[name] = float(value)
        return samples


@pytest.fixture
def start_server():
    """Factory: start_server('--flag', 'value', ...) → RunningServer, stopped after the test."""
    servers = []

    def start(*argv: str) -> RunningServer:
        s = RunningServer(*argv)
        servers.append(s)
        return s

    yield start
    for s in servers:
        s.stop()


@pytest.fixture(params=LOOPS)
def mock(request, start_server):
    """A server with small, fast defaults, once per event loop."""
    return start_server("--customers", "50", "--event-loop", request.param)
