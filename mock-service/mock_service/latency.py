"""The service's behaviour knobs: latency distributions, slow tail, error injection.

A distribution is written NAME:PARAMS in milliseconds, e.g. fixed:10, uniform:5,15,
lognormal:10,0.5 (median, sigma of the log), pareto:5,2 (scale = minimum, shape alpha).
A bare number means fixed. Sampling uses one seeded RNG, so a run is repeatable request by request.
"""
from __future__ import annotations

import dataclasses
import math
import random
from statistics import NormalDist

# The API endpoints that behave (health and metrics always answer at once and never fail).
ENDPOINTS = ("customer_get", "customer_post", "customer_delete", "orders", "account")

# The longest delay the mock ever waits, in ms: one hour, the ceiling --latency-cap and --slow-delay already had. A
# load test measures nothing with an answer an hour late, so a longer delay can only be a slip (seconds written as
# ms, a sigma of 800 for 0.8); and bounding every sample keeps every delay and every sum of delays a finite float.
MAX_DELAY_MS = 3_600_000
# A distribution with more than this share of its samples above MAX_DELAY_MS is refused: they would all be served
# as the bound, which is not the distribution written. 5 % lets through the heavy tails the README invites (a pareto
# with ALPHA <= 1 cut by --latency-cap: pareto:10,0.3 puts 2 % there) and refuses lognormal:10,800 (49 %).
MAX_SHARE_ABOVE = 0.05
_LOG_MAX_DELAY = math.log(MAX_DELAY_MS)

_PARAMS = {"fixed": 1, "uniform": 2, "lognormal": 2, "pareto": 2}


@dataclasses.dataclass(frozen=True)
class Distribution:
    kind: str
    params: tuple[float, ...]

    def __str__(self) -> str:
        return f"{self.kind}:" + ",".join(f"{p:g}" for p in self.params)

    @property
    def median_ms(self) -> float:
        p = self.params
        if self.kind == "fixed":
            return p[0]
        if self.kind == "uniform":
            return (p[0] + p[1]) / 2
        if self.kind == "lognormal":
            return p[0]
        return p[0] * 2 ** (1 / p[1])  # pareto

    def sample_ms(self, rng: random.Random) -> float:
        """A sample, at most MAX_DELAY_MS. The heavy tails are drawn as random's lognormvariate and paretovariate
        draw them (the same numbers for a seed) but bounded in log space, so no sample can overflow and raise."""
        p = self.params
        if self.kind == "fixed":
            return p[0]
        if self.kind == "uniform":
            return rng.uniform(p[0], p[1])
        if self.kind == "lognormal":
            log_ms = rng.normalvariate(math.log(p[0]), p[1])
            return MAX_DELAY_MS if log_ms >= _LOG_MAX_DELAY else min(math.exp(log_ms), MAX_DELAY_MS)
        u = 1.0 - rng.random()                                   # pareto: SCALE × u^(-1/ALPHA), u in (0, 1]
        log_growth = -math.log(u) / p[1]
        if math.log(p[0]) + log_growth >= _LOG_MAX_DELAY:
            return MAX_DELAY_MS
        if log_growth > 700:                                     # u^(-1/ALPHA) alone would overflow (SCALE < 1e-290)
            return math.exp(math.log(p[0]) + log_growth)
        return min(p[0] * u ** (-1.0 / p[1]), MAX_DELAY_MS)

    def share_above_max(self) -> float:
        """The share of samples above MAX_DELAY_MS, before any cap: beyond MAX_SHARE_ABOVE the spec is refused."""
        p = self.params
        if self.kind == "fixed":
            return float(p[0] > MAX_DELAY_MS)
        if self.kind == "uniform":
            above = p[1] - max(p[0], MAX_DELAY_MS)
            return 0.0 if above <= 0 else 1.0 if p[0] == p[1] else above / (p[1] - p[0])
        if self.kind == "lognormal":
            log_over = math.log(p[0]) - _LOG_MAX_DELAY              # log(MEDIAN / MAX_DELAY_MS)
            return float(log_over > 0) if p[1] == 0 else NormalDist().cdf(log_over / p[1])
        return 1.0 if p[0] >= MAX_DELAY_MS else (p[0] / MAX_DELAY_MS) ** p[1]   # pareto: P(X > x) = (SCALE/x)^ALPHA


def parse_distribution(text: str) -> Distribution:
    """Parse NAME:P1[,P2]; raises ValueError saying what is wrong."""
    spec = text.strip().lower()
    kind, sep, rest = spec.partition(":")
    if not sep:
        kind, rest = "fixed", spec
    if kind not in _PARAMS:
        raise ValueError(f"unknown distribution {kind!r} in {text!r} "
                         f"(use fixed:MS, uniform:MIN,MAX, lognormal:MEDIAN,SIGMA, pareto:SCALE,ALPHA)")
    try:
        params = tuple(float(p) for p in rest.split(","))
    except ValueError:
        raise ValueError(f"{text!r}: parameters must be numbers") from None
    if len(params) != _PARAMS[kind] or not all(math.isfinite(p) for p in params):
        raise ValueError(f"{text!r}: {kind} takes {_PARAMS[kind]} finite number(s)")
    if kind == "fixed" and params[0] < 0:
        raise ValueError(f"{text!r}: the delay must be >= 0 ms")
    if kind == "uniform" and not 0 <= params[0] <= params[1]:
        raise ValueError(f"{text!r}: uniform needs 0 <= MIN <= MAX")
    if kind == "lognormal" and not (params[0] > 0 and params[1] >= 0):
        raise ValueError(f"{text!r}: lognormal needs MEDIAN > 0 and SIGMA >= 0")
    if kind == "pareto" and not (params[0] > 0 and params[1] > 0):
        raise ValueError(f"{text!r}: pareto needs SCALE > 0 and ALPHA > 0")
    if max(params if kind in ("fixed", "uniform") else params[:1]) > MAX_DELAY_MS:   # the delays, not SIGMA, ALPHA
        raise ValueError(f"{text!r}: {MAX_DELAY_MS} ms (1 h) is the longest delay the mock waits")
    dist = Distribution(kind, params)
    share = dist.share_above_max()
    if share > MAX_SHARE_ABOVE:
        raise ValueError(f"{text!r}: {share:.1%} of its samples would be above {MAX_DELAY_MS} ms (1 h), the longest "
                         f"delay the mock waits; at most {MAX_SHARE_ABOVE:.0%} may be")
    return dist


class Behaviour:
    """Decides, per API request, whether it fails and how long it waits (in seconds)."""

    def __init__(self, settings) -> None:
        self._rng = random.Random(f"behaviour/{settings.seed}")
        overrides = dict(settings.endpoint_latency)
        self._dist = {name: overrides.get(name, settings.latency) for name in ENDPOINTS}
        self._default = settings.latency
        self._cap_ms = settings.latency_cap
        self._slow_p = settings.slow_probability
        self._slow_ms = settings.slow_delay
        self._error_rate = settings.error_rate

    def delay_s(self, endpoint: str) -> float:
        return self._with_tail(self._sample(self._dist[endpoint]))

    def stub_delay_s(self, stub) -> float:
        """A stub's own delay (fixed plus its distribution, capped at its maxValue), or --latency when it has none;
        then the slow tail and --latency-cap, as for the built-in endpoints."""
        if not stub.has_delay():
            return self._with_tail(self._sample(self._default))
        ms = stub.fixed_ms
        if stub.delay is not None:
            sampled = self._sample(stub.delay)
            ms += sampled if stub.delay_cap_ms is None else min(sampled, stub.delay_cap_ms)
        return self._with_tail(ms)

    def _sample(self, dist: Distribution) -> float:
        return dist.params[0] if dist.kind == "fixed" else dist.sample_ms(self._rng)

    def _with_tail(self, ms: float) -> float:
        if self._slow_p and self._rng.random() < self._slow_p:
            ms += self._slow_ms
        return min(ms, self._cap_ms) / 1000.0

    def fails(self) -> bool:
        return bool(self._error_rate) and self._rng.random() < self._error_rate
