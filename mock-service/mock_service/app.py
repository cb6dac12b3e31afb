"""The API: routing, handlers, and the knobs applied around them (limit, errors, latency, metrics).

Which answers a request: /__mock/health and /__mock/metrics (the mock's own, always); then the first stub that
matches (--stubs, stubs.py); then the built-in customer API with its /health and /metrics (--builtin on); else
404, counted as unmatched and named in the metrics.

Order for an API request (a stub's or a built-in endpoint's): over --max-concurrent → 503 at once (no latency:
an overloaded service refuses fast); else maybe an injected error (the request then has no effect); then the
answer waits out the sampled latency and is recorded in the metrics. Health and metrics bypass all knobs.
"""
from __future__ import annotations

import asyncio
import json
import sys
import time
from urllib.parse import parse_qs

from . import __version__
from .data import DataSet
from .httpproto import Connection, Request
from .latency import ENDPOINTS, Behaviour
from .metrics import Metrics
from .stub_files import load
from .stubs import Stub

JSON = b"application/json"
PROMETHEUS = b"text/plain; version=0.0.4; charset=utf-8"
_HEALTH = b'{"status":"UP"}'
_BUSY = b'{"error":"too many concurrent requests"}'
_INJECTED = b'{"error":"injected failure"}'
_INTERNAL = b'{"error":"internal error"}'
_TIERS = ("gold", "silver", "bronze")
_ADDRESS_FIELDS = ("street", "city", "zip", "country")


def _error(message: str) -> bytes:
    return json.dumps({"error": message}).encode()


def _names(query: str) -> frozenset[str] | None:
    """/metrics?names=a,b[&names=c]: the samples to show (a scraper that reads few parses few lines); None: all."""
    wanted = [n for v in parse_qs(query).get("names", []) for n in v.split(",") if n]
    return frozenset(wanted) if wanted else None


def _not_found(cid: int) -> tuple[int, bytes, bytes]:
    return 404, _error(f"customer {cid} not found"), b""


class App:
    def __init__(self, settings, event_loop: str) -> None:
        self.data = DataSet(settings.seed, settings.customers, settings.payload_size,
                            settings.orders_per_customer, settings.max_created)
        self.behaviour = Behaviour(settings)
        self.builtin = settings.builtin
        self.stubs = load(settings.stubs) if settings.stubs else None      # StubError names a bad stub
        stubbed = {s.label: s.status for s in self.stubs.stubs} if self.stubs else {}
        endpoints = (ENDPOINTS if self.builtin else ()) + (self.stubs.labels if self.stubs else ())
        self.metrics = Metrics(endpoints, {"version": __version__, "event_loop": event_loop,
                                           "seed": str(settings.seed), "stubs": str(len(stubbed))},
                               usual=stubbed)
        self.max_concurrent = settings.max_concurrent
        self.error_status = settings.error_status
        self.in_flight = 0
        self.connections: set = set()  # the server's open connections, for the metrics
        self._handlers = {
            "customer_get": self._customer_get,
            "customer_post": self._customer_post,
            "customer_delete": self._customer_delete,
            "orders": self._orders,
            "account": self._account,
        }

    # --- dispatch ----------------------------------------------------------------------------------

    def on_request(self, conn: Connection, req: Request) -> None:
        if req.path.startswith("/__mock/"):
            self._other(conn, req, self._own(req.method, req.path[len("/__mock"):]))
            return
        if self.stubs is not None:
            stub = self.stubs.match(req.method, req.path, req.query, req.headers)
            if stub is not None:
                self._stubbed(conn, req, stub)
                return
            if not self.builtin:
                self.metrics.unmatched_request(req.method, req.path)
                self._other(conn, req, "unmatched")
                return
        endpoint, cid = self._route(req.method, req.path)
        handler = self._handlers.get(endpoint)
        if handler is None:
            self._other(conn, req, endpoint)
            return
        if self._refused(conn, req, endpoint):
            return
        self._answer(conn, req, endpoint, self._builtin_answer, endpoint, handler, cid)

    def _refused(self, conn: Connection, req: Request, endpoint: str) -> bool:
        """Over --max-concurrent: 503 at once (True); else the request counts as in flight."""
        if self.max_concurrent and self.in_flight >= self.max_concurrent:
            self.metrics.rejected += 1
            self._finish(conn, req, endpoint, 503, _BUSY, b"", counted=False)
            return True
        self.in_flight += 1
        return False

    def _stubbed(self, conn: Connection, req: Request, stub: Stub) -> None:
        """A stub's answer, rendered at load, through the same limit, injected errors and delays."""
        if self._refused(conn, req, stub.label):
            return
        self._answer(conn, req, stub.label, self._stub_answer, stub)

    def _answer(self, conn: Connection, req: Request, endpoint: str, compute, *args) -> None:
        """Answers a request counted in flight (_refused) after its delay, both from compute(req, *args). Until the
        timer holds it, whatever raises answers 500 at once: every request must leave the in-flight count, or it
        keeps a --max-concurrent slot and the gauge for good (and the client's connection drops)."""
        answer = (endpoint, 500, _INTERNAL, b"")          # unless compute() gives the real one
        try:
            answer, delay = compute(req, *args)
            if delay > 0:
                # counted from the request's arrival, so parsing and handling are part of the delay
                asyncio.get_running_loop().call_at(req.arrived + delay, self._finish, conn, req, *answer)
                answer = None                               # the timer's _finish counts it out
        except Exception as e:
            print(f"mock-service: error in {endpoint}: {e!r}", file=sys.stderr, flush=True)
            answer = (endpoint, 500, _INTERNAL, b"")
        finally:
            if answer is not None:
                self._finish(conn, req, *answer)

    def _builtin_answer(self, req: Request, endpoint: str, handler, cid: int) -> tuple[tuple, float]:
        if self.behaviour.fails():
            self.metrics.injected[endpoint] += 1
            answer = (endpoint, self.error_status, _INJECTED, b"")
        else:
            try:
                answer = (endpoint, *handler(req, cid))
            except Exception as e:  # a bug or a pathological body: a 500, after the endpoint's delay as any answer
                print(f"mock-service: error in {endpoint}: {e!r}", file=sys.stderr, flush=True)
                answer = (endpoint, 500, _INTERNAL, b"")
        return answer, self.behaviour.delay_s(endpoint)

    def _stub_answer(self, req: Request, stub: Stub) -> tuple[tuple, float]:
        if self.behaviour.fails():
            self.metrics.injected[stub.label] += 1
            answer = (stub.label, self.error_status, _INJECTED, b"", True, JSON)
        else:
            answer = (stub.label, stub.status, stub.body, stub.extra_headers, True, stub.content_type)
        return answer, self.behaviour.stub_delay_s(stub)

    def _finish(self, conn: Connection, req: Request, endpoint: str, status: int, body: bytes,
                extra: bytes, counted: bool = True, content_type: bytes = JSON) -> None:
        if counted:
            self.in_flight -= 1
        self.metrics.observe(endpoint, status, time.perf_counter() - req.started)
        conn.respond(status, body, content_type, extra)

    def _other(self, conn: Connection, req: Request, endpoint: str) -> None:
        if endpoint == "health":
            status, body, ctype = 200, _HEALTH, JSON
        elif endpoint == "metrics":
            status, ctype = 200, PROMETHEUS
            body = self.metrics.render(self.in_flight, len(self.connections), _names(req.query))
        elif endpoint == "method_not_allowed":
            status, body, ctype = 405, _error(f"method {req.method} not allowed on {req.path}"), JSON
        elif endpoint == "unmatched":
            status, body, ctype = 404, _error(f"no stub matches {req.method} {req.path}"), JSON
        else:
            status, body, ctype = 404, _error(f"no such resource: {req.path}"), JSON
        self.metrics.observe(endpoint, status, 0.0)
        conn.respond(status, body, ctype)

    @staticmethod
    def _own(method: str, path: str) -> str:
        """The mock's own endpoints (/health, /metrics; under /__mock/ whatever else answers)."""
        if path in ("/health", "/metrics"):
            return path[1:] if method == "GET" else "method_not_allowed"
        return "not_found"

    @classmethod
    def _route(cls, method: str, path: str) -> tuple[str, int]:
        """(endpoint name, customer id or 0). Unknown paths → not_found, wrong methods → method_not_allowed."""
        if len(path) > 1 and path.endswith("/"):
            path = path[:-1]
        parts = path.split("/")
        if len(parts) < 2 or parts[1] != "customers":
            return cls._own(method, path), 0
        if len(parts) == 2:
            return ("customer_post" if method == "POST" else "method_not_allowed"), 0
        if not parts[2].isdigit() or len(parts) > 4:
            return "not_found", 0
        cid = int(parts[2])
        if len(parts) == 3:
            if method == "GET":
                return "customer_get", cid
            if method == "DELETE":
                return "customer_delete", cid
            return "method_not_allowed", 0
        if parts[3] in ("orders", "account"):
            return (parts[3] if method == "GET" else "method_not_allowed"), cid
        return "not_found", 0

    # --- handlers: (status, body, extra header lines) -------------------------------------------------

    def _customer_get(self, req: Request, cid: int) -> tuple[int, bytes, bytes]:
        body = self.data.customer(cid)
        return (200, body, b"") if body is not None else _not_found(cid)

    def _customer_delete(self, req: Request, cid: int) -> tuple[int, bytes, bytes]:
        return (204, b"", b"") if self.data.delete(cid) else _not_found(cid)

    def _orders(self, req: Request, cid: int) -> tuple[int, bytes, bytes]:
        body = self.data.orders(cid)
        return (200, body, b"") if body is not None else _not_found(cid)

    def _account(self, req: Request, cid: int) -> tuple[int, bytes, bytes]:
        body = self.data.account(cid)
        return (200, body, b"") if body is not None else _not_found(cid)

    def _customer_post(self, req: Request, cid: int) -> tuple[int, bytes, bytes]:
        try:
            fields = json.loads(req.body)
        except (ValueError, UnicodeDecodeError) as e:
            return 400, _error(f"invalid JSON: {e}"), b""
        problem = _validate_customer(fields)
        if problem:
            return 400, _error(problem), b""
        new_id, body = self.data.create(fields)
        return 201, body, b"Location: /customers/%d\r\n" % new_id


def _validate_customer(fields) -> str | None:
    if not isinstance(fields, dict):
        return "expected a JSON object"
    for name in ("firstName", "lastName", "email"):
        if not isinstance(fields.get(name), str) or not fields[name].strip():
            return f"{name} is required (a non-empty string)"
    if "tier" in fields and fields["tier"] not in _TIERS:
        return f"tier must be one of {', '.join(_TIERS)}"
    if "phone" in fields and not isinstance(fields["phone"], str):
        return "phone must be a string"
    address = fields.get("address")
    if address is not None:
        if not isinstance(address, dict) or not all(isinstance(address.get(k), str) for k in _ADDRESS_FIELDS):
            return "address must be an object with string fields " + ", ".join(_ADDRESS_FIELDS)
    return None
