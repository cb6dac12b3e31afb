"""A small HTTP/1.1 server on asyncio.Protocol: framing only, no routing.

Why not a framework: measured on one core here (see README), aiohttp 3.8 spent ~0.10-0.19 ms of CPU
per request and a bare asyncio.Protocol ~0.02-0.04 ms; every millisecond the mock burns is taken from
the JVM it shares the machine with. A mock needs little of HTTP: request line, headers,
Content-Length or chunked bodies, Expect: 100-continue, keep-alive, pipelining (answered in order).

Responses can be delayed without a coroutine: the handler answers later via loop.call_later, which
is the cheapest timer asyncio (and uvloop) has.
"""
from __future__ import annotations

import asyncio
import http
import string
import time
from collections.abc import Callable

MAX_HEAD = 16 * 1024          # request line + headers
MAX_BODY = 1024 * 1024        # a POSTed customer is ~1-10 KB
_HEX = frozenset(string.hexdigits.encode())
_STATUS = {s.value: b"HTTP/1.1 %d %s\r\n" % (s.value, s.phrase.encode()) for s in http.HTTPStatus}


class HttpError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class Request:
    __slots__ = ("method", "path", "query", "headers", "body", "keep_alive", "arrived", "started")

    def __init__(self, method: str, path: str, query: str, headers: dict[str, str], body: bytes,
                 keep_alive: bool, arrived: float) -> None:
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.keep_alive = keep_alive
        self.arrived = arrived                 # loop clock: what timers are scheduled on
        self.started = time.perf_counter()     # for the metrics: uvloop's clock has 1 ms steps


class ServerState:
    """What all connections share: the request callback, the keep-alive knob, the open connections."""

    def __init__(self, on_request: Callable[[Connection, Request], None], keep_alive: bool) -> None:
        self.on_request = on_request
        self.keep_alive = keep_alive
        self.connections: set[Connection] = set()
        self.draining = False
        self.drained = asyncio.Event()
        self._date = b""
        self._date_at = 0

    def date_header(self) -> bytes:
        now = int(time.time())
        if now != self._date_at:  # formatting a date per request would cost more than the rest
            self._date_at = now
            self._date = b"Date: " + time.strftime("%a, %d %b %Y %H:%M:%S GMT", time.gmtime(now)).encode() + b"\r\n"
        return self._date

    def drain(self) -> None:
        """Stop keeping connections: close idle ones now, busy ones after their answer."""
        self.draining = True
        for conn in list(self.connections):
            if not conn.busy:
                conn.close()
        if not self.connections:
            self.drained.set()


class Connection(asyncio.Protocol):
    def __init__(self, state: ServerState) -> None:
        self.state = state
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.busy = False            # a request is being answered; later ones wait in buf
        self.closed = False
        self._keep_alive = True      # what the current request asked for
        self._http10 = False
        self._head_request = False
        self._in_process = False
        self._paused = False
        self._continued = False      # "100 Continue" already sent for the request in buf
        self._loop = asyncio.get_running_loop()

    # --- asyncio callbacks -------------------------------------------------------------------------

    def connection_made(self, transport) -> None:
        self.transport = transport
        self.state.connections.add(self)
        if self.state.draining:
            self.close()

    def connection_lost(self, exc) -> None:
        self.closed = True
        self.state.connections.discard(self)
        if self.state.draining and not self.state.connections:
            self.state.drained.set()

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if not self.busy:
            self._process()
        elif len(self.buf) > MAX_HEAD + MAX_BODY and not self._paused:
            self._paused = True  # a client pipelining too far ahead: stop reading until we catch up
            self.transport.pause_reading()

    # --- answering ---------------------------------------------------------------------------------

    def respond(self, status: int, body: bytes = b"", content_type: bytes = b"application/json",
                extra_headers: bytes = b"") -> None:
        """Send the answer to the current request, then go on with the next one in the buffer."""
        if self.closed:
            self.busy = False
            return
        keep = self._keep_alive and self.state.keep_alive and not self.state.draining
        head = [_STATUS.get(status) or b"HTTP/1.1 %d Unknown\r\n" % status, self.state.date_header(),
                b"Server: mock-service\r\n"]
        if status != 204 and status != 304:
            head.append(b"Content-Type: %s\r\nContent-Length: %d\r\n" % (content_type, len(body)))
        if not keep:
            head.append(b"Connection: close\r\n")
        elif self._http10:
            head.append(b"Connection: keep-alive\r\n")  # HTTP/1.0 clients assume close otherwise
        head.append(extra_headers)
        head.append(b"\r\n")
        if not self._head_request:
            head.append(body)
        self.transport.write(b"".join(head))
        self.busy = False
        if not keep:
            self.close()
            return
        if self._paused:
            self._paused = False
            self.transport.resume_reading()
        if self.buf and not self._in_process:
            self._process()

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self.transport.close()  # flushes what was written first

    # --- parsing -----------------------------------------------------------------------------------

    def _process(self) -> None:
        self._in_process = True
        try:
            while not self.busy and not self.closed:
                try:
                    request = self._parse_one()
                except HttpError as e:
                    self._keep_alive = False
                    self.busy = True
                    self.respond(e.status, b'{"error":"%s"}' % str(e).encode())
                    return
                if request is None:
                    return
                self.busy = True
                self.state.on_request(self, request)
        finally:
            self._in_process = False

    def _parse_one(self) -> Request | None:
        buf = self.buf
        while buf[:2] == b"\r\n":  # tolerated before a request line (RFC 9112 2.2)
            del buf[:2]
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if len(buf) > MAX_HEAD:
                raise HttpError(431, "request header too large")
            return None
        if end > MAX_HEAD:
            raise HttpError(431, "request header too large")
        lines = bytes(buf[:end]).decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3 or not parts[0].isalpha() or not parts[1].startswith("/"):
            raise HttpError(400, "bad request line")
        method, target, version = parts
        if version not in ("HTTP/1.1", "HTTP/1.0"):
            raise HttpError(505, "HTTP version not supported")
        headers: dict[str, str] = {}
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep or not name or name != name.strip():
                raise HttpError(400, "bad header line")
            name = name.lower()
            value = value.strip()
            if name == "content-length" and headers.get(name, value) != value:
                raise HttpError(400, "conflicting Content-Length")
            headers[name] = value

        body_start = end + 4
        te = headers.get("transfer-encoding")
        if te is not None:
            if te.lower() != "chunked":
                raise HttpError(501, "only chunked transfer-encoding is supported")
            framed = self._chunked(body_start)
        else:
            length_text = headers.get("content-length", "0")
            if not length_text.isdigit():
                raise HttpError(400, "bad Content-Length")
            length = int(length_text)
            if length > MAX_BODY:
                raise HttpError(413, "request body too large")
            framed = None
            if len(buf) >= body_start + length:
                framed = bytes(buf[body_start:body_start + length]), body_start + length
        if framed is None:  # body incomplete: ask the client to send it if it waits for that
            if headers.get("expect", "").lower() == "100-continue" and not self._continued:
                self._continued = True
                self.transport.write(b"HTTP/1.1 100 Continue\r\n\r\n")
            return None
        body, consumed = framed
        del buf[:consumed]
        self._continued = False

        connection = headers.get("connection", "").lower()
        if version == "HTTP/1.1":
            keep_alive = "close" not in connection
        else:
            keep_alive = "keep-alive" in connection
        self._keep_alive = keep_alive
        self._http10 = version == "HTTP/1.0"
        self._head_request = method == "HEAD"
        path, _, query = target.partition("?")
        return Request(method, path, query, headers, body, keep_alive, self._loop.time())

    def _chunked(self, pos: int) -> tuple[bytes, int] | None:
        buf, parts, total = self.buf, [], 0
        while True:
            eol = buf.find(b"\r\n", pos)
            if eol < 0:
                return None
            size_text = bytes(buf[pos:eol]).split(b";")[0].strip()
            if not size_text or not _HEX.issuperset(size_text):
                raise HttpError(400, "bad chunk size")
            size = int(size_text, 16)
            total += size
            if total > MAX_BODY:
                raise HttpError(413, "request body too large")
            pos = eol + 2
            if size == 0:
                while True:  # trailer fields, then the empty line
                    eol = buf.find(b"\r\n", pos)
                    if eol < 0:
                        return None
                    if eol == pos:
                        return b"".join(parts), eol + 2
                    pos = eol + 2
            if len(buf) < pos + size + 2:
                return None
            if buf[pos + size:pos + size + 2] != b"\r\n":
                raise HttpError(400, "bad chunk")
            parts.append(bytes(buf[pos:pos + size]))
            pos += size + 2
