"""Flags and MOCK_* environment variables → one validated, immutable Settings.

Precedence: flag, then environment variable (MOCK_<FLAG>, dashes as underscores; empty counts as
unset), then default.
Any bad value stops the program before anything starts: one line naming the flag (or the variable
it came from) and the problem, exit code 2 — systemd and Ansible then show the cause, not a trace.
"""
from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from collections.abc import Callable, Mapping, Sequence

from . import __version__
from .latency import ENDPOINTS, MAX_DELAY_MS, Distribution, parse_distribution

PROG = "mock-service"


class ConfigError(Exception):
    """A bad flag or value; the message names the flag and the problem."""


@dataclasses.dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 9080
    seed: int = 42
    customers: int = 1000
    payload_size: int = 2048
    orders_per_customer: int = 5
    max_created: int = 10000
    latency: Distribution = dataclasses.field(default_factory=lambda: parse_distribution("fixed:0"))
    endpoint_latency: tuple[tuple[str, Distribution], ...] = ()
    latency_cap: float = 30000.0
    slow_probability: float = 0.0
    slow_delay: float = 1000.0
    error_rate: float = 0.0
    error_status: int = 500
    keep_alive: bool = True
    max_concurrent: int = 0
    event_loop: str = "auto"
    shutdown_timeout: float = 10.0
    backlog: int = 1024
    stubs: str = ""                     # a directory of stubs in WireMock's mapping format (stubs.py); "": none
    builtin: bool = True                # the customer API (off: only the stubs answer, and /__mock/*)
    extra_ports: tuple[int, ...] = ()   # more ports the same service answers on (a service with several backends)

    def describe(self) -> str:
        """The effective settings as one log line (key=value, flag names)."""
        parts = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if f.name == "endpoint_latency":
                value = ";".join(f"{n}={d}" for n, d in value) or "none"
            elif f.name == "extra_ports":
                value = ",".join(map(str, value)) or "none"
            elif f.name == "stubs":
                value = value or "none"
            elif isinstance(value, bool):
                value = "on" if value else "off"
            elif isinstance(value, float) and value.is_integer():
                value = int(value)
            parts.append(f"{f.name.replace('_', '-')}={value}")
        return " ".join(parts)


# --- value parsers: each returns the value or raises ValueError with a short reason -------------

def _int(lo: int, hi: int) -> Callable[[str], int]:
    def parse(text: str) -> int:
        try:
            value = int(text.strip())
        except ValueError:
            raise ValueError(f"expected an integer, got {text!r}") from None
        if not lo <= value <= hi:
            raise ValueError(f"must be between {lo} and {hi}, got {value}")
        return value
    return parse


def _float(lo: float, hi: float) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = float(text.strip())
        except ValueError:
            raise ValueError(f"expected a number, got {text!r}") from None
        if not lo <= value <= hi:  # also rejects nan
            raise ValueError(f"must be between {lo:g} and {hi:g}, got {text.strip()}")
        return value
    return parse


def _bool(text: str) -> bool:
    value = text.strip().lower()
    if value in ("on", "true", "yes", "1"):
        return True
    if value in ("off", "false", "no", "0"):
        return False
    raise ValueError(f"expected on or off, got {text!r}")


def _choice(*choices: str) -> Callable[[str], str]:
    def parse(text: str) -> str:
        value = text.strip().lower()
        if value not in choices:
            raise ValueError(f"expected one of {', '.join(choices)}, got {text!r}")
        return value
    return parse


def _host(text: str) -> str:
    value = text.strip()
    if not value or any(c.isspace() for c in value):
        raise ValueError(f"expected a host name or IP address, got {text!r}")
    return value


def _directory(text: str) -> str:
    value = text.strip()
    if value and not os.path.isdir(value):
        raise ValueError(f"{text!r} is not a directory")
    return value


def _ports(text: str) -> tuple[int, ...]:
    ports = []
    for item in (i for i in text.split(",") if i.strip()):
        port = _int(1, 65535)(item)
        if port in ports:
            raise ValueError(f"port {port} is given twice")
        ports.append(port)
    return tuple(ports)


def _endpoint_latency(items: Sequence[str]) -> tuple[tuple[str, Distribution], ...]:
    result: dict[str, Distribution] = {}
    for item in items:
        name, sep, spec = item.partition("=")
        name = name.strip()
        if not sep:
            raise ValueError(f"expected ENDPOINT=DISTRIBUTION, got {item!r}")
        if name not in ENDPOINTS:
            raise ValueError(f"unknown endpoint {name!r} (endpoints: {', '.join(ENDPOINTS)})")
        result[name] = parse_distribution(spec)
    return tuple(sorted(result.items()))


# --- the flag table: (flag, metavar, parser, help); defaults come from Settings ---------------------

_OPTIONS: list[tuple[str, str, Callable[[str], object], str]] = [
    ("host", "ADDR", _host, "address to bind"),
    ("port", "PORT", _int(0, 65535), "TCP port (0: any free port, printed in the start line)"),
    ("seed", "N", _int(0, 2**63 - 1), "seed of the generated data and of the sampled behaviour"),
    ("customers", "N", _int(1, 10_000_000), "number of generated customers (ids 1..N)"),
    ("payload-size", "BYTES", _int(0, 1_048_576),
     "size of a customer's JSON; the notes field pads it (0: no padding)"),
    ("orders-per-customer", "N", _int(0, 1000), "orders in GET /customers/{id}/orders"),
    ("max-created", "N", _int(1, 1_000_000),
     "customers created by POST kept in memory; the oldest is dropped beyond"),
    ("latency", "DIST", parse_distribution,
     "latency of every API endpoint: fixed:MS, uniform:MIN,MAX, lognormal:MEDIAN,SIGMA, pareto:SCALE,ALPHA"),
    ("latency-cap", "MS", _float(0, MAX_DELAY_MS), "upper bound of any delay (pareto has a heavy tail)"),
    ("slow-probability", "P", _float(0, 1), "probability that a request also gets --slow-delay"),
    ("slow-delay", "MS", _float(0, MAX_DELAY_MS), "extra delay of a slow-tail request"),
    ("error-rate", "P", _float(0, 1), "probability that an API request fails with --error-status"),
    ("error-status", "CODE", _int(400, 599), "HTTP status of an injected error"),
    ("keep-alive", "on|off", _bool, "keep connections open between requests (off: Connection: close)"),
    ("max-concurrent", "N", _int(0, 1_000_000),
     "API requests served at once; more get 503 at once (0: no limit)"),
    ("event-loop", "auto|asyncio|uvloop", _choice("auto", "asyncio", "uvloop"),
     "event loop; auto takes uvloop when installed"),
    ("shutdown-timeout", "S", _float(0, 3600), "on SIGTERM, wait this long for requests in flight"),
    ("backlog", "N", _int(1, 65535), "listen backlog"),
    ("stubs", "DIR", _directory,
     "stubs in WireMock's JSON mapping format (DIR/mappings/*.json, bodies in DIR/__files), answered before the "
     "built-in API; requests no stub matches get 404 and are counted"),
    ("builtin", "on|off", _bool, "the built-in customer API (off: only the stubs and /__mock/* answer)"),
    ("extra-ports", "P1,P2", _ports, "more TCP ports the same service answers on, e.g. 8082,8083"),
]


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, not argparse's usage block
        raise ConfigError(message)


def _build_parser() -> argparse.ArgumentParser:
    defaults = Settings()
    parser = _Parser(
        prog=PROG,
        description="Mock of the external customer service called by the Camel routes. "
        "Every flag can also be set by the environment variable MOCK_<FLAG> (e.g. MOCK_PORT).",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    for flag, metavar, _, help_text in _OPTIONS:
        default = getattr(defaults, flag.replace("-", "_"))
        if isinstance(default, bool):
            default = "on" if default else "off"
        elif default in ("", ()):
            default = "none"
        parser.add_argument(f"--{flag}", metavar=metavar, default=None,
                            help=f"{help_text} [env {env_name(flag)}, default {default}]")
    parser.add_argument("--endpoint-latency", metavar="ENDPOINT=DIST", action="append", default=None,
                        help="latency of one endpoint, repeatable; endpoints: " + ", ".join(ENDPOINTS)
                        + f" [env {env_name('endpoint-latency')}: ENDPOINT=DIST;ENDPOINT=DIST]")
    return parser


def env_name(flag: str) -> str:
    return "MOCK_" + flag.upper().replace("-", "_")


def parse(argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from argv and environ; raises ConfigError naming the flag or variable at fault."""
    environ = os.environ if environ is None else environ
    args = _build_parser().parse_args(argv)
    values: dict[str, object] = {}

    for flag, _, parse_value, _ in _OPTIONS:
        field = flag.replace("-", "_")
        text, source = getattr(args, field), f"--{flag}"
        if text is None and environ.get(env_name(flag), "").strip():  # empty = unset (templated unit files)
            text, source = environ[env_name(flag)], env_name(flag)
        if text is not None:
            try:
                values[field] = parse_value(text)
            except ValueError as e:
                raise ConfigError(f"{source}: {e}") from None

    items, source = args.endpoint_latency, "--endpoint-latency"
    if items is None and env_name("endpoint-latency") in environ:
        source = env_name("endpoint-latency")
        items = [i for i in environ[source].split(";") if i.strip()]
    if items:
        try:
            values["endpoint_latency"] = _endpoint_latency(items)
        except ValueError as e:
            raise ConfigError(f"{source}: {e}") from None

    settings = Settings(**values)
    if not settings.builtin and not settings.stubs:
        raise ConfigError("--builtin off needs --stubs DIR: nothing would answer")
    if settings.port in settings.extra_ports:
        raise ConfigError(f"--extra-ports: {settings.port} is already --port")
    return settings


def parse_or_exit(argv: Sequence[str] | None = None) -> Settings:
    try:
        return parse(argv)
    except ConfigError as e:
        print(f"{PROG}: error: {e} (see {PROG} --help)", file=sys.stderr)
        raise SystemExit(2) from None
