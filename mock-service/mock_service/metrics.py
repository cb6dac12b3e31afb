"""Prometheus text exposition (format 0.0.4) of request counts, latency, in-flight and process CPU.

Kept by hand rather than with prometheus_client: recording is a dict increment and a bisect, and
there is no extra package for the guests. The series exist from the start (at 0), so PCP's
openmetrics agent sees a stable set of metrics; only unusual status codes appear later.
"""
from __future__ import annotations

import bisect
import os
import time

# seconds; spans the sub-millisecond answers at 0 ms latency up to the slow tail
MAX_UNMATCHED_PATHS = 50      # distinct (method, path) named; the rest counted as "other"
BUCKETS = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)


class Metrics:
    def __init__(self, endpoints: tuple[str, ...], info: dict[str, str], usual: dict[str, int] | None = None) -> None:
        self._info = info
        self._start = time.time()
        # the usual answers exist at 0 from the start (a stub's: its status); other codes appear when they first occur
        usual = {"customer_post": 201, "customer_delete": 204, **(usual or {})}
        self.requests: dict[tuple[str, int], int] = {(e, usual.get(e, 200)): 0 for e in endpoints}
        self.unmatched: dict[tuple[str, str], int] = {}     # (method, path) no stub matched → count
        self.injected: dict[str, int] = dict.fromkeys(endpoints, 0)
        self.rejected = 0
        self._buckets = {e: [0] * (len(BUCKETS) + 1) for e in endpoints}
        self._sum = dict.fromkeys(endpoints, 0.0)
        self._endpoints = endpoints

    def observe(self, endpoint: str, status: int, seconds: float) -> None:
        key = (endpoint, status)
        self.requests[key] = self.requests.get(key, 0) + 1
        buckets = self._buckets.get(endpoint)
        if buckets is not None:
            buckets[bisect.bisect_left(BUCKETS, seconds)] += 1
            self._sum[endpoint] += seconds

    def unmatched_request(self, method: str, path: str) -> None:
        """Counted by method and path, at most MAX_UNMATCHED_PATHS of them named (the rest: path "other")."""
        key = (method, path)
        if key not in self.unmatched and len(self.unmatched) >= MAX_UNMATCHED_PATHS:
            key = ("other", "other")
        self.unmatched[key] = self.unmatched.get(key, 0) + 1

    def render(self, in_flight: int, connections: int, names: frozenset[str] | None = None) -> bytes:
        """The page; with `names` only those samples (by sample name, e.g. mock_http_request_duration_seconds_sum)
        and their families' HELP and TYPE lines: a scraper that reads a few series parses a few lines."""
        out = []
        add = out.append
        info = ",".join(f'{k}="{v}"' for k, v in sorted(self._info.items()))
        add("# HELP mock_info Version and settings of the mock service.\n# TYPE mock_info gauge\n")
        add(f"mock_info{{{info}}} 1\n")
        add("# HELP mock_http_requests_total HTTP requests answered, by endpoint and status code.\n"
            "# TYPE mock_http_requests_total counter\n")
        for (endpoint, status), n in sorted(self.requests.items()):
            add(f'mock_http_requests_total{{endpoint="{endpoint}",code="{status}"}} {n}\n')
        add("# HELP mock_http_request_duration_seconds Time from a request's arrival to its answer "
            "(API endpoints, including the injected latency).\n"
            "# TYPE mock_http_request_duration_seconds histogram\n")
        for endpoint in self._endpoints:
            cumulative = 0
            for bound, n in zip(BUCKETS + (float("inf"),), self._buckets[endpoint], strict=True):
                cumulative += n
                le = "+Inf" if bound == float("inf") else repr(bound)
                add(f'mock_http_request_duration_seconds_bucket{{endpoint="{endpoint}",le="{le}"}} '
                    f"{cumulative}\n")
            add(f'mock_http_request_duration_seconds_sum{{endpoint="{endpoint}"}} {self._sum[endpoint]!r}\n')
            add(f'mock_http_request_duration_seconds_count{{endpoint="{endpoint}"}} {cumulative}\n')
        add("# HELP mock_http_requests_in_flight API requests being served (waiting out their latency).\n"
            f"# TYPE mock_http_requests_in_flight gauge\nmock_http_requests_in_flight {in_flight}\n")
        add("# HELP mock_http_connections_open Client connections open.\n"
            f"# TYPE mock_http_connections_open gauge\nmock_http_connections_open {connections}\n")
        add("# HELP mock_injected_errors_total API requests failed on purpose (--error-rate).\n"
            "# TYPE mock_injected_errors_total counter\n")
        for endpoint in self._endpoints:
            add(f'mock_injected_errors_total{{endpoint="{endpoint}"}} {self.injected[endpoint]}\n')
        add("# HELP mock_rejected_requests_total API requests refused with 503 (--max-concurrent).\n"
            f"# TYPE mock_rejected_requests_total counter\nmock_rejected_requests_total {self.rejected}\n")
        if self.unmatched:
            add("# HELP mock_unmatched_requests_total Requests no stub matched (answered 404), by method and path.\n"
                "# TYPE mock_unmatched_requests_total counter\n")
            for (method, path), n in sorted(self.unmatched.items()):
                add(f'mock_unmatched_requests_total{{method="{_escape(method)}",path="{_escape(path)}"}} {n}\n')
        add(_process_metrics(self._start))
        text = "".join(out)
        return (text if names is None else _only(text, names)).encode()


def _escape(value: str) -> str:
    """A label value as the exposition format wants it: backslash, quote and line feed escaped."""
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")[:200]


def _only(text: str, names: frozenset[str]) -> str:
    """The exposition text with only the samples named, each family's HELP and TYPE before its first kept one."""
    kept, family, written, in_samples = [], [], False, False
    for line in text.splitlines(keepends=True):
        if line.startswith("#"):
            if in_samples:                      # the next family's comments
                family, written, in_samples = [], False, False
            family.append(line)
            continue
        in_samples = True
        if line.split("{", 1)[0].split(" ", 1)[0] in names:
            if not written:
                kept += family
                written = True
            kept.append(line)
    return "".join(kept)


def _process_metrics(start: float) -> str:
    # the mock's own cost is part of what the lab must know (it shares the machine with the JVM)
    cpu = time.process_time()
    text = ("# HELP process_cpu_seconds_total User and system CPU time of the mock service.\n"
            f"# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total {cpu!r}\n"
            "# HELP process_start_time_seconds Start time since the Unix epoch.\n"
            f"# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds {start!r}\n")
    try:
        with open("/proc/self/statm") as f:
            rss = int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        text += ("# HELP process_resident_memory_bytes Resident memory size.\n"
                 f"# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes {rss}\n")
    except (OSError, ValueError, IndexError):
        pass
    return text
