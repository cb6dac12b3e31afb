"""The request path: the mean time per request in each time bin, split into where it was spent —
in HTTPD and in front of the app (HTTPD's %D minus the app's time: the proxy, Tomcat's accept queue and
thread-pool wait), in the app without the backend (the rest-* routes' time minus the backend's), and waiting
for the backend (the backend-* routes' time, or the mock's own when the routes have no timer). A queue
building in front of Tomcat shows as the first part growing.

The route timers are per-second rates of a sum and a count: per bin, Σ rate × dt of each gives the seconds
and exchanges in it, so their ratio is the mean per request. Backend time is per REST exchange (a summary
makes several backend calls): backend seconds ÷ REST exchanges, at most the app's own time per exchange —
the summary's three calls run in parallel, so their summed time overlaps and can exceed the wait."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from report.read.access import ACCESS_LOG, Requests, read_access_log
from report.read.pcp import Match, Metrics, contains

if TYPE_CHECKING:
    from report.stats.machine import Machine

MIN_BIN_S = 10  # the narrowest bin: the app's timers change once a scrape (pcp_openmetrics_interval_s); finer bins
#                 would chart pmrep's interpolation
ROUTE_SUM = "openmetrics.app.camel_route_exchanges_seconds_sum"
ROUTE_COUNT = "openmetrics.app.camel_route_exchanges_seconds_count"
MOCK_SUM = "openmetrics.mock.mock_http_request_duration_seconds_sum"
REST, BACKEND = contains("route:rest-"), contains("route:backend-")

FRONT = "HTTPD and in front of the app"
FRONT_AND_APP = "HTTPD and the app (no route timers)"
APP = "in the app (without the backend)"
APP_WHOLE = "in the app (no backend timer)"
WAIT = "waiting for the backend"
WAIT_MOCK = "waiting for the backend (the mock's own time)"


@dataclass
class Breakdown:
    x: np.ndarray                              # bin centres, s since the machine's t0
    parts: list[tuple[str, np.ndarray]] = field(default_factory=list)  # (label, ms per request per bin, nan where
    #                                                                     unknown), in stack order
    missing: list[str] = field(default_factory=list)  # the sources not recorded


def _amount_per_bin(metrics: Metrics | None, metric: str, match: Match | None, t0: float, width: float,
                    n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(Σ rate × dt per bin, whether the bin has a sample) of a rate-converted counter; None when absent.
    Each value is the mean rate since the previous sample: it belongs to the bin of its own time."""
    t, v = metrics.series(metric, match) if metrics is not None else ((), ())
    if len(t) < 2:
        return None
    amount, at = v[1:] * np.diff(t), t[1:]
    idx = np.floor((at - t0) / width).astype(int)
    keep = (idx >= 0) & (idx < n)
    return (np.bincount(idx[keep], weights=amount[keep], minlength=n),
            np.bincount(idx[keep], minlength=n) > 0)


def _ratio_ms(seconds: np.ndarray, count: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(count > 0, seconds / count * 1000.0, np.nan)


def _httpd_mean(requests: Requests | None, t0: float, width: float, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(mean %D in ms, requests) per bin of arrival time."""
    if requests is None or len(requests) == 0:
        return None
    idx = np.floor((requests.time - t0) / width).astype(int)
    keep = (idx >= 0) & (idx < n)
    count = np.bincount(idx[keep], minlength=n)
    total = np.bincount(idx[keep], weights=requests.duration_ms[keep], minlength=n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(count > 0, total / count, np.nan), count


def breakdown(machine: Machine, span: float, width: float) -> Breakdown:
    """The Breakdown of one machine over [0, span] s since its t0 in bins of `width` s."""
    n = int(span // width) + 1
    t0, m = machine.t0, machine.metrics
    out = Breakdown(x=np.arange(n) * width + width / 2)
    httpd = _httpd_mean(read_access_log(machine.folder / ACCESS_LOG), t0, width, n) if machine.folder else None
    rest_s = _amount_per_bin(m, ROUTE_SUM, REST, t0, width, n)
    rest_n = _amount_per_bin(m, ROUTE_COUNT, REST, t0, width, n)
    backend_s = _amount_per_bin(m, ROUTE_SUM, BACKEND, t0, width, n)
    mock_s = _amount_per_bin(m, MOCK_SUM, None, t0, width, n)
    if httpd is None:
        out.missing.append("httpd-access.log")
    if rest_s is None or rest_n is None:
        out.missing.append("route timers")
        rest_s = rest_n = None
    app_ms = _ratio_ms(rest_s[0], rest_n[0]) if rest_n else None
    # backend time per request: its route timer, else the mock's own time, per REST exchange (per HTTPD
    # request when the app has no route timers)
    per_request = rest_n[0] if rest_n else (httpd[1] if httpd else None)
    backend_ms, wait_label = None, WAIT
    if backend_s is not None and per_request is not None:
        backend_ms = _ratio_ms(backend_s[0], per_request)
    elif mock_s is not None and per_request is not None:
        backend_ms, wait_label = _ratio_ms(mock_s[0], per_request), WAIT_MOCK
    if backend_ms is not None and app_ms is not None:
        backend_ms = np.fmin(backend_ms, app_ms)  # overlapping parallel calls: never more than the app's time
    if httpd is not None:
        mean_d = httpd[0]
        if app_ms is not None:
            # a bin without any timer sample (the app's scrape unanswered: frozen, dead) saw no request
            # finish in the app: all of HTTPD's time was spent in front of it
            inside = np.where(rest_n[1], np.nan_to_num(app_ms), 0.0)
            out.parts.append((FRONT, np.maximum(mean_d - inside, 0.0)))
        elif backend_ms is not None:
            out.parts.append((FRONT_AND_APP, np.maximum(mean_d - np.nan_to_num(backend_ms), 0.0)))
        else:
            out.parts.append((FRONT_AND_APP, mean_d))
    if app_ms is not None:
        if backend_ms is not None:
            out.parts.append((APP, app_ms - np.nan_to_num(backend_ms)))
        else:
            out.parts.append((APP_WHOLE, app_ms))
    if backend_ms is not None:
        out.parts.append((wait_label, backend_ms))
    if backend_s is None and mock_s is None:
        out.missing.append("backend timers")
    return out
