"""A service's backends as stubs, matched and answered (issue 38); the stubs are read from WireMock's JSON mapping
files by stub_files.py, which says what of the format is served.

A request goes to the first stub that matches it, best first: the lowest `priority` number (WireMock's default
5), and among equal priorities the stub loaded last (WireMock: the most recently added). Each stub's answer is
rendered once, at load: a stubbed request costs what the mock's built-in answers cost.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import parse_qs

from .latency import Distribution

URL_KEYS = ("url", "urlPath", "urlPattern", "urlPathPattern", "urlPathTemplate")


@dataclass(frozen=True)
class Matcher:
    """One header's or query parameter's condition."""
    name: str
    operator: str
    value: str | bool
    case_insensitive: bool = False
    pattern: re.Pattern | None = None

    def test(self, values: list[str]) -> bool:
        if self.operator == "absent":
            return (not values) == bool(self.value)
        if not values:
            return self.operator in ("doesNotContain", "doesNotMatch")
        return any(self._one(v) for v in values)

    def _one(self, value: str) -> bool:
        op, want = self.operator, self.value
        if op == "equalTo":
            return value.lower() == want.lower() if self.case_insensitive else value == want
        if op == "contains":
            return want in value
        if op == "doesNotContain":
            return want not in value
        if op == "matches":
            return self.pattern.fullmatch(value) is not None
        return self.pattern.fullmatch(value) is None      # doesNotMatch


@dataclass
class Stub:
    """One mapping, compiled: what it matches and its answer, rendered."""
    label: str
    priority: int
    index: int                       # load order: among equal priorities the later wins
    method: str | None               # None: any
    url_key: str | None              # which of URL_KEYS, or None: any URL
    url: str = ""
    pattern: re.Pattern | None = None
    headers: tuple[Matcher, ...] = ()
    query: tuple[Matcher, ...] = ()
    status: int = 200
    content_type: bytes = b"application/json"
    extra_headers: bytes = b""
    body: bytes = b""
    fixed_ms: float = 0.0
    delay: Distribution | None = None   # sampled on top of fixed_ms
    delay_cap_ms: float | None = None   # lognormal's maxValue

    def matches(self, method: str, path: str, query: str, headers: dict[str, str]) -> bool:
        if self.method is not None and method != self.method:
            return False
        key = self.url_key
        if key == "urlPath" and path != self.url:
            return False
        if key == "url" and (f"{path}?{query}" if query else path) != self.url:
            return False
        if key in ("urlPathPattern", "urlPathTemplate") and self.pattern.fullmatch(path) is None:
            return False
        if key == "urlPattern" and self.pattern.fullmatch(f"{path}?{query}" if query else path) is None:
            return False
        if any(not m.test([headers[m.name]] if m.name in headers else []) for m in self.headers):
            return False
        if self.query:
            params = parse_qs(query, keep_blank_values=True)
            if any(not m.test(params.get(m.name, [])) for m in self.query):
                return False
        return True

    def has_delay(self) -> bool:
        return self.fixed_ms > 0 or self.delay is not None


@dataclass
class StubSet:
    """The stubs of a directory, best first: (priority, latest loaded)."""
    stubs: list[Stub] = field(default_factory=list)
    source: str = ""

    def __post_init__(self) -> None:
        self.stubs.sort(key=lambda s: (s.priority, -s.index))

    @property
    def labels(self) -> tuple[str, ...]:
        return tuple(s.label for s in sorted(self.stubs, key=lambda s: s.index))

    def match(self, method: str, path: str, query: str, headers: dict[str, str]) -> Stub | None:
        for stub in self.stubs:
            if stub.matches(method, path, query, headers):
                return stub
        return None
