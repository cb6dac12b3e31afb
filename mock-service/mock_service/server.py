"""Listening, the start line, and graceful shutdown on SIGTERM/SIGINT."""
from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable

from . import __version__
from .app import App
from .config import ConfigError, Settings
from .httpproto import Connection, ServerState
from .stub_files import StubError


def log(message: str) -> None:
    # stdout, line by line: journald stamps each line
    print(f"mock-service: {message}", flush=True)


def loop_factory(name: str) -> tuple[Callable[[], asyncio.AbstractEventLoop], str]:
    """The event loop to run on, and its name; uvloop costs less CPU per request (see README)."""
    if name in ("auto", "uvloop"):
        try:
            import uvloop
        except ImportError:
            if name == "uvloop":
                raise ConfigError("--event-loop: uvloop is not installed (Debian: python3-uvloop)") from None
        else:
            return uvloop.new_event_loop, "uvloop"
    return asyncio.new_event_loop, "asyncio"


async def serve(settings: Settings, loop_name: str, stop: asyncio.Event | None = None,
                on_ready: Callable[[int], None] | None = None, handle_signals: bool = True) -> None:
    """Serve until SIGTERM/SIGINT (or `stop` is set), then drain and return."""
    loop = asyncio.get_running_loop()
    app = App(settings, loop_name)
    state = ServerState(app.on_request, settings.keep_alive)
    app.connections = state.connections
    servers = [await loop.create_server(lambda: Connection(state), settings.host, port,
                                        backlog=settings.backlog, reuse_address=True)
               for port in (settings.port, *settings.extra_ports)]   # one App behind every port
    port = servers[0].sockets[0].getsockname()[1]
    stop = stop or asyncio.Event()
    received: list[str] = []
    if handle_signals:
        for sig in (signal.SIGTERM, signal.SIGINT):
            loop.add_signal_handler(sig, lambda s=sig: (received.append(s.name), stop.set()))
    also = "".join(f", :{p}" for p in settings.extra_ports)
    stubs = f"; {len(app.stubs.stubs)} stub(s) from {app.stubs.source}" if app.stubs else ""
    log(f"{__version__} listening on http://{settings.host}:{port}{also} (running on {loop_name}{stubs}) "
        f"{settings.describe()}")
    if on_ready:
        on_ready(port)

    await stop.wait()
    busy = sum(1 for c in state.connections if c.busy)
    log(f"{received[0] if received else 'stop'} received: no new connections; waiting up to "
        f"{settings.shutdown_timeout:g} s for {busy} request(s) in flight")
    for server in servers:
        server.close()
    state.drain()
    try:
        await asyncio.wait_for(state.drained.wait(), settings.shutdown_timeout)
    except TimeoutError:
        log(f"shutdown timeout: closing {len(state.connections)} connection(s) still busy")
        for conn in list(state.connections):
            conn.transport.abort()
    total = sum(app.metrics.requests.values())
    log(f"stopped after {total} request(s)")


def run(settings: Settings) -> int:
    """Run the server in this (main) thread; returns the process exit code."""
    factory, name = loop_factory(settings.event_loop)
    with asyncio.Runner(loop_factory=factory) as runner:
        try:
            runner.run(serve(settings, name))
        except StubError as e:   # a stub the mock cannot serve as WireMock would: nothing started
            print(f"mock-service: error: --stubs {settings.stubs}: {e}", file=sys.stderr)
            return 2
        except OSError as e:  # e.g. the port is taken or the host does not resolve: nothing started
            ports = ",".join(map(str, (settings.port, *settings.extra_ports)))
            print(f"mock-service: error: cannot listen on --host {settings.host} --port(s) {ports}: "
                  f"{e.strerror or e}", file=sys.stderr)
            return 2
    return 0
