"""Stub files in WireMock's JSON mapping format read into stubs.py's StubSet (issue 38).

The format is the one Java teams already keep (https://wiremock.org/docs/stubbing, /request-matching,
/simulating-faults). A stub directory is WireMock's root layout, `mappings/*.json` with bodies under `__files/`,
or a folder of mapping files with `__files/` beside them. A file holds one mapping or `{"mappings": [...]}`.

The subset served, everything else refused by name when the stubs load (nothing starts with a stub the mock
would answer otherwise than WireMock):
- request: `method` (or ANY), one of `url` (path and query, exact), `urlPath` (path, exact), `urlPattern` (regex
  over path and query), `urlPathPattern` (regex over the path), `urlPathTemplate` (`/contacts/{id}`); none
  matches any URL. `headers` and `queryParameters`: name → {equalTo [caseInsensitive], contains,
  doesNotContain, matches, doesNotMatch, absent}; header names ignore case.
- response: `status` (200), `headers` (a value or a list), one of `body`, `jsonBody`, `base64Body`,
  `bodyFileName`; `fixedDelayMilliseconds` plus `delayDistribution` {lognormal: median, sigma[, maxValue];
  uniform: lower, upper; fixed: milliseconds}, summed as WireMock does.
- `priority` (1 first, 5 by default); among equal priorities the stub loaded last wins (WireMock: the most
  recently added), files loaded in sorted order. `name` labels the stub in the metrics (else file#index).
- numbers: no NaN or ±Infinity anywhere (WireMock's JSON reader refuses them); every delay from 0 to
  latency.MAX_DELAY_MS (1 h); a lognormal without maxValue may put at most latency.MAX_SHARE_ABOVE (5 %) of its
  delays above that hour (sigma 800 puts half: a slip, and an overflow of the float).

Each stub's answer (status line pieces, headers, body bytes) is rendered once, at load: a stubbed request costs
what the mock's built-in answers cost.
"""
from __future__ import annotations

import base64
import json
import math
import os
import re
import stat
import sys
from pathlib import Path

from .latency import MAX_DELAY_MS, MAX_SHARE_ABOVE, Distribution
from .stubs import URL_KEYS, Matcher, Stub, StubSet

DEFAULT_PRIORITY = 5                # WireMock's StubMapping.DEFAULT_PRIORITY
OPERATORS = ("equalTo", "contains", "doesNotContain", "matches", "doesNotMatch", "absent")
# what WireMock does that this mock does not: refused, naming the field, rather than answered otherwise
UNSUPPORTED = {
    "top": {"scenarioName": "stateful scenarios", "requiredScenarioState": "stateful scenarios",
            "newScenarioState": "stateful scenarios", "postServeActions": "webhooks",
            "serveEventListeners": "webhooks"},
    "request": {"bodyPatterns": "request body matching", "cookies": "cookie matching",
                "basicAuthCredentials": "basic auth matching", "multipartPatterns": "multipart matching",
                "customMatcher": "custom matchers", "formParameters": "form matching", "host": "host matching",
                "port": "port matching", "scheme": "scheme matching", "pathParameters": "path parameter matchers"},
    "response": {"transformers": "response templating", "transformerParameters": "response templating",
                 "fault": "faults", "proxyBaseUrl": "proxying", "chunkedDribbleDelay": "dribbled answers",
                 "additionalProxyRequestHeaders": "proxying"},
}
KNOWN = {"top": {"request", "response", "priority", "name", "id", "uuid", "persistent", "metadata"},
         "request": {"method", *URL_KEYS, "headers", "queryParameters"},
         "response": {"status", "statusMessage", "headers", "body", "jsonBody", "base64Body", "bodyFileName",
                      "fixedDelayMilliseconds", "delayDistribution"}}


def _latin1(text: str) -> bool:
    try:
        text.encode("latin-1")
    except UnicodeEncodeError:
        return False
    return True


class StubError(ValueError):
    """A stub the mock cannot serve as WireMock would; the message names the file, the stub and the field."""


# --- loading ---------------------------------------------------------------------------------------------

def load(directory: str | Path) -> StubSet:
    """Every mapping under `directory` (mappings/ when it has one), validated; StubError names the first problem."""
    root = Path(directory)
    if not root.is_dir():
        raise StubError(f"{root}: not a directory of stubs")
    _plain(root)
    mappings = root / "mappings" if (root / "mappings").is_dir() else root
    files_dir = root / "__files"
    paths = sorted(p for p in mappings.rglob("*.json") if "__files" not in p.relative_to(root).parts)
    if not paths:
        raise StubError(f"{mappings}: no stub files (*.json, WireMock's mapping format)")
    stubs: list[Stub] = []
    labels: set[str] = set()
    for path in paths:
        where = str(path.relative_to(root))
        try:
            document = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise StubError(f"{where}: not readable JSON ({e})") from None
        except RecursionError:      # json's parser recurses per level: thousands of [ exhaust Python's stack
            raise StubError(f"{where}: nested too deeply to be a stub (JSON of thousands of levels)") from None
        entries = document.get("mappings") if isinstance(document, dict) and "mappings" in document else [document]
        if not isinstance(entries, list):
            raise StubError(f"{where}: 'mappings' must be a list of stubs")
        for n, mapping in enumerate(entries):
            name = where if len(entries) == 1 and "mappings" not in document else f"{where}#{n}"
            stub = _stub(mapping, name, len(stubs), files_dir)
            if stub.label in labels:
                raise StubError(f"{name}: the name {stub.label!r} is taken by another stub")
            labels.add(stub.label)
            stubs.append(stub)
    return StubSet(stubs, str(root))


def _plain(root: Path) -> None:
    """Every entry under `root` a folder or a regular file, seen with lstat (nothing followed): a symbolic link, a
    FIFO, a device or a socket is refused by name, since the folder is served, and copied to the machines and into
    run folders, by whoever reads it (a link to /etc/shadow would be copied as /etc/shadow's text)."""
    for folder, dirs, files in os.walk(root, onerror=_unreadable):
        for name in sorted(dirs + files):
            path = Path(folder) / name
            mode = path.lstat().st_mode
            if stat.S_ISLNK(mode):
                raise StubError(f"{path.relative_to(root)}: a symbolic link (to {os.readlink(path)}): a stubs folder "
                                "holds its files themselves, no links")
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                raise StubError(f"{path.relative_to(root)}: not a regular file (a FIFO, device or socket): a stubs "
                                "folder holds folders and regular files only")


def _unreadable(error: OSError) -> None:
    raise StubError(f"{error.filename}: not readable ({error.strerror or error})")


def _stub(mapping, where: str, index: int, files_dir: Path) -> Stub:
    if not isinstance(mapping, dict):
        raise StubError(f"{where}: a stub must be a JSON object with request and response")
    _known(mapping, "top", where)
    request, response = mapping.get("request"), mapping.get("response", {})
    if not isinstance(request, dict):
        raise StubError(f"{where}: request: missing, or not an object")
    if not isinstance(response, dict):
        raise StubError(f"{where}: response: not an object")
    _known(request, "request", where)
    _known(response, "response", where)
    _finite(mapping, where)
    priority = mapping.get("priority", DEFAULT_PRIORITY)
    if not _is_int(priority) or priority < 1:
        raise StubError(f"{where}: priority: must be a whole number from 1, got {priority!r}")
    label = mapping.get("name", where)
    if not isinstance(label, str) or not label.strip():
        raise StubError(f"{where}: name: must be a non-empty string")
    stub = Stub(label=_label(label), priority=priority, index=index, method=_method(request, where), url_key=None)
    _url(stub, request, where)
    stub.headers = _matchers(request.get("headers"), f"{where}: request.headers", lower=True)
    stub.query = _matchers(request.get("queryParameters"), f"{where}: request.queryParameters")
    _response(stub, response, where, files_dir)
    return stub


def _known(block: dict, part: str, where: str) -> None:
    for key in block:
        if key in UNSUPPORTED[part]:
            raise StubError(f"{where}: {'' if part == 'top' else part + '.'}{key}: {UNSUPPORTED[part][key]} "
                            "are not served by the lab's mock")
        if key not in KNOWN[part]:
            raise StubError(f"{where}: {'' if part == 'top' else part + '.'}{key}: not a WireMock field the "
                            f"lab's mock knows (known: {', '.join(sorted(KNOWN[part]))})")


def _finite(mapping: dict, where: str) -> None:
    """Refuses the first NaN or ±Infinity anywhere in a mapping, in document order: Python's json reads them (and
    reads a number beyond ±1.8e308 as Infinity), JSON has no such numbers, and WireMock's reader refuses them."""
    todo = list(reversed(mapping.items()))
    while todo:
        path, value = todo.pop()
        if isinstance(value, float) and not math.isfinite(value):
            text = "NaN" if value != value else "Infinity" if value > 0 else "-Infinity"
            raise StubError(f"{where}: {path}: {text} is not a finite number (JSON has no NaN or Infinity and "
                            "WireMock refuses them; a number beyond ±1.8e308 reads as Infinity)")
        if isinstance(value, dict):
            todo += [(f"{path}.{k}", v) for k, v in reversed(value.items())]
        elif isinstance(value, list):
            todo += [(f"{path}[{i}]", v) for i, v in reversed(list(enumerate(value)))]


def _is_int(value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _label(name: str) -> str:
    """A metric label value: no quotes, backslashes or line breaks."""
    return re.sub(r'["\\\n\r]', "_", name.strip())[:80]


def _method(request: dict, where: str) -> str | None:
    method = request.get("method", "ANY")
    if not isinstance(method, str) or not re.fullmatch(r"[A-Za-z]+", method):
        raise StubError(f"{where}: request.method: must be an HTTP method or ANY, got {method!r}")
    return None if method.upper() == "ANY" else method.upper()


def _compile(text: str, where: str) -> re.Pattern:
    try:
        return re.compile(text)
    except re.error as e:
        raise StubError(f"{where}: not a regular expression Python can read ({e})") from None


def _url(stub: Stub, request: dict, where: str) -> None:
    given = [k for k in URL_KEYS if k in request]
    if len(given) > 1:
        raise StubError(f"{where}: request: {' and '.join(given)}: give one way to match the URL")
    if not given:
        return
    key = stub.url_key = given[0]
    value = request[key]
    literal = key in ("url", "urlPath", "urlPathTemplate")
    if not isinstance(value, str) or (literal and not value.startswith("/")):
        raise StubError(f"{where}: request.{key}: must be a string starting with /, got {value!r}")
    stub.url = value
    if key in ("urlPattern", "urlPathPattern"):
        stub.pattern = _compile(value, f"{where}: request.{key}")
    elif key == "urlPathTemplate":
        parts = re.split(r"\{([A-Za-z_][\w-]*)\}", value)
        if any("{" in p or "}" in p for p in parts[::2]):
            raise StubError(f"{where}: request.urlPathTemplate: {value!r} has a malformed {{name}}")
        stub.pattern = re.compile("".join(re.escape(p) if i % 2 == 0 else "[^/]+" for i, p in enumerate(parts)))


def _matchers(block, where: str, lower: bool = False) -> tuple[Matcher, ...]:
    if block is None:
        return ()
    if not isinstance(block, dict):
        raise StubError(f"{where}: must be an object of name → condition")
    out = []
    for name, condition in block.items():
        here = f"{where}.{name}"
        if not isinstance(condition, dict):
            raise StubError(f"{here}: must be an object like {{\"equalTo\": \"…\"}}")
        ops = [k for k in condition if k in OPERATORS]
        extra = set(condition) - set(OPERATORS) - {"caseInsensitive"}
        if extra:
            raise StubError(f"{here}: {', '.join(sorted(extra))}: not served by the lab's mock (it knows "
                            f"{', '.join(OPERATORS)} and caseInsensitive)")
        if len(ops) != 1:
            raise StubError(f"{here}: give exactly one of {', '.join(OPERATORS)}")
        op, value = ops[0], condition[ops[0]]
        if op == "absent" and not isinstance(value, bool) or op != "absent" and not isinstance(value, str):
            raise StubError(f"{here}.{op}: must be {'true or false' if op == 'absent' else 'a string'}")
        insensitive = condition.get("caseInsensitive", False)
        if not isinstance(insensitive, bool):
            raise StubError(f"{here}.caseInsensitive: must be true or false")
        pattern = _compile(value, f"{here}.{op}") if op in ("matches", "doesNotMatch") else None
        out.append(Matcher(name.lower() if lower else name, op, value, insensitive, pattern))
    return tuple(out)


def _response(stub: Stub, response: dict, where: str, files_dir: Path) -> None:
    status = response.get("status", 200)
    if not _is_int(status) or not 100 <= status <= 599:
        raise StubError(f"{where}: response.status: must be an HTTP status from 100 to 599, got {status!r}")
    stub.status = status
    bodies = [k for k in ("body", "jsonBody", "base64Body", "bodyFileName") if k in response]
    if len(bodies) > 1:
        raise StubError(f"{where}: response: {' and '.join(bodies)}: give one body")
    content_type = None
    if bodies:
        key, value = bodies[0], response[bodies[0]]
        stub.body, content_type = _body(key, value, f"{where}: response.{key}", files_dir)
    headers = response.get("headers") or {}
    if not isinstance(headers, dict):
        raise StubError(f"{where}: response.headers: must be an object of name → value or list of values")
    lines = []
    for name, value in headers.items():
        values = value if isinstance(value, list) else [value]
        if not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", name) or not all(
                isinstance(v, (str, int, float)) and not isinstance(v, bool) and "\n" not in str(v)
                and "\r" not in str(v) for v in values):
            raise StubError(f"{where}: response.headers.{name}: not a header name with text values")
        if not all(_latin1(str(v)) for v in values):
            raise StubError(f"{where}: response.headers.{name}: {values!r} holds characters an HTTP header cannot "
                            "carry (ISO-8859-1 only): percent-encode them, or put the text in the body")
        if name.lower() == "content-type":
            content_type = str(values[0])
        elif name.lower() not in ("content-length", "transfer-encoding", "connection", "date", "server"):
            lines += [f"{name}: {v}\r\n" for v in values]       # framing headers are the mock's own
    stub.content_type = (content_type or "text/plain").encode("latin-1")
    stub.extra_headers = "".join(lines).encode("latin-1")
    _delays(stub, response, where)


def _body(key: str, value, where: str, files_dir: Path) -> tuple[bytes, str | None]:
    if key == "jsonBody":
        return json.dumps(value, separators=(",", ":")).encode(), "application/json"
    if not isinstance(value, str):
        raise StubError(f"{where}: must be a string")
    if key == "body":
        return value.encode(), None
    if key == "base64Body":
        try:
            return base64.b64decode(value, validate=True), None
        except ValueError:
            raise StubError(f"{where}: not base64") from None
    if Path(value).is_absolute() or ".." in Path(value).parts:
        raise StubError(f"{where}: {value!r} is outside {files_dir}: a body file is a path inside __files, "
                        "neither absolute nor through ..")
    path = (files_dir / value).resolve()
    if files_dir.resolve() not in path.parents:
        raise StubError(f"{where}: {value!r} is outside {files_dir}")
    try:
        return path.read_bytes(), None
    except OSError as e:
        raise StubError(f"{where}: {files_dir / value}: {e.strerror or e}") from None


def _number(block: dict, key: str, where: str, delay: bool = True) -> float:
    """A finite number ≥ 0; a delay (ms) at most MAX_DELAY_MS: a longer one is a slip, not a wait."""
    value = block.get(key)
    high = MAX_DELAY_MS if delay else sys.float_info.max       # also keeps float() of a huge int from overflowing
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= high:
        bound = (f"a number of ms from 0 to {MAX_DELAY_MS} (1 h, the longest delay the mock waits)" if delay
                 else "a finite number ≥ 0")
        raise StubError(f"{where}.{key}: must be {bound}, got {value!r}")
    return float(value)


def _delays(stub: Stub, response: dict, where: str) -> None:
    if "fixedDelayMilliseconds" in response:
        stub.fixed_ms = _number(response, "fixedDelayMilliseconds", f"{where}: response")
    dist = response.get("delayDistribution")
    if dist is None:
        return
    here = f"{where}: response.delayDistribution"
    if not isinstance(dist, dict):
        raise StubError(f"{here}: must be an object with a type")
    kind = dist.get("type")
    fields = {"lognormal": {"type", "median", "sigma", "maxValue"}, "uniform": {"type", "lower", "upper"},
              "fixed": {"type", "milliseconds"}}
    if kind not in fields:
        raise StubError(f"{here}.type: must be lognormal, uniform or fixed, got {kind!r}")
    extra = set(dist) - fields[kind]
    if extra:
        raise StubError(f"{here}: {', '.join(sorted(extra))}: not a field of the {kind} distribution")
    if kind == "lognormal":
        median, sigma = _number(dist, "median", here), _number(dist, "sigma", here, delay=False)
        if median <= 0:
            raise StubError(f"{here}.median: must be above 0 ms")
        stub.delay = Distribution("lognormal", (median, sigma))
        if "maxValue" in dist:          # the delays served stay within it (WireMock's spike at maxValue)
            stub.delay_cap_ms = _number(dist, "maxValue", here)
        elif (share := stub.delay.share_above_max()) > MAX_SHARE_ABOVE:
            raise StubError(f"{here}.sigma: {sigma:g} puts {share:.1%} of the delays above {MAX_DELAY_MS} ms (1 h, "
                            f"the longest delay the mock waits; at most {MAX_SHARE_ABOVE:.0%} may be): sigma is the "
                            "spread of the log of the delay (WireMock's example: 0.1); or cap the delays with maxValue")
    elif kind == "uniform":
        lower, upper = _number(dist, "lower", here), _number(dist, "upper", here)
        if upper < lower:
            raise StubError(f"{here}: upper ({upper:g}) is below lower ({lower:g})")
        stub.delay = Distribution("uniform", (lower, upper))
    else:
        stub.delay = Distribution("fixed", (_number(dist, "milliseconds", here),))
