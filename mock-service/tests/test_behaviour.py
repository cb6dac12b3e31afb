"""Latency distributions, slow tail and error injection: sampled server-side, checked statistically.

The samplers are seeded, so these checks are repeatable; the tolerances would hold for any seed.
Over HTTP only lower bounds and generous upper bounds are checked, so a busy machine cannot fail them.
"""
import concurrent.futures
import statistics
import time

import pytest

from mock_service import config
from mock_service.latency import Behaviour, parse_distribution


def behaviour(*argv: str, seed: str = "42") -> Behaviour:
    return Behaviour(config.parse(["--seed", seed, *argv], environ={}))


@pytest.mark.parametrize("seed", ["1", "42", "2024"])
@pytest.mark.parametrize("spec, expected_median_ms", [
    ("fixed:10", 10.0),
    ("uniform:5,15", 10.0),
    ("lognormal:10,0.5", 10.0),
    ("pareto:5,2", 5 * 2 ** 0.5),
])
def test_median_of_500_samples_within_10_percent(spec, expected_median_ms, seed):
    b = behaviour("--latency", spec, seed=seed)
    samples = [b.delay_s("customer_get") * 1000 for _ in range(500)]
    assert statistics.median(samples) == pytest.approx(expected_median_ms, rel=0.10)
    assert parse_distribution(spec).median_ms == pytest.approx(expected_median_ms)


def test_distribution_shapes():
    b = behaviour("--latency", "uniform:5,15")
    u = [b.delay_s("orders") * 1000 for _ in range(2000)]
    assert 5 <= min(u) and max(u) <= 15
    assert statistics.mean(u) == pytest.approx(10, rel=0.05)
    b = behaviour("--latency", "pareto:5,2")
    p = [b.delay_s("orders") * 1000 for _ in range(2000)]
    assert min(p) >= 5
    assert statistics.mean(p) == pytest.approx(10, rel=0.25)  # mean = scale*alpha/(alpha-1); heavy tail
    b = behaviour("--latency", "lognormal:10,0.5")
    logn = sorted(b.delay_s("orders") * 1000 for _ in range(2000))
    assert logn[int(0.8413 * 2000)] == pytest.approx(10 * 2.718281828 ** 0.5, rel=0.15)  # +1 sigma


def test_endpoint_overrides():
    b = behaviour("--latency", "fixed:5", "--endpoint-latency", "orders=fixed:50",
                  "--endpoint-latency", "account=uniform:1,2")
    assert b.delay_s("customer_get") == pytest.approx(0.005)
    assert b.delay_s("customer_post") == pytest.approx(0.005)
    assert b.delay_s("orders") == pytest.approx(0.050)
    assert 0.001 <= b.delay_s("account") <= 0.002


def test_latency_cap():
    b = behaviour("--latency", "pareto:10,0.3", "--latency-cap", "200")
    samples = [b.delay_s("orders") for _ in range(2000)]
    assert max(samples) == pytest.approx(0.2)


def test_slow_tail():
    b = behaviour("--latency", "fixed:2", "--slow-probability", "0.1", "--slow-delay", "500")
    samples = [b.delay_s("customer_get") for _ in range(5000)]
    slow = [s for s in samples if s > 0.1]
    assert len(slow) / len(samples) == pytest.approx(0.1, abs=0.015)
    assert set(round(s, 6) for s in slow) == {0.502}


def test_error_rate_sampled():
    b = behaviour("--error-rate", "0.2")
    rate = sum(b.fails() for _ in range(10000)) / 10000
    assert rate == pytest.approx(0.2, abs=0.02)
    assert not any(behaviour().fails() for _ in range(1000))


def test_error_injection_over_http(start_server):
    s = start_server("--error-rate", "0.3", "--error-status", "503")
    statuses = [s.get(f"/customers/{1 + i % 100}").status for i in range(400)]
    failed = statuses.count(503)
    assert set(statuses) == {200, 503}
    assert failed / 400 == pytest.approx(0.3, abs=0.08)
    assert s.metrics()['mock_injected_errors_total{endpoint="customer_get"}'] == failed
    assert s.get("/health").status == 200  # health never fails


def test_injected_error_has_no_effect(start_server):
    s = start_server("--error-rate", "1", "--error-status", "500")
    assert s.request("DELETE", "/customers/1").status == 500
    r = s.request("POST", "/customers", body={"firstName": "A", "lastName": "B", "email": "e"})
    assert r.status == 500 and "error" in r.json()


def test_latency_over_http(start_server):
    s = start_server("--latency", "fixed:400", "--endpoint-latency", "orders=fixed:0")
    t0 = time.monotonic()
    assert s.get("/customers/1").status == 200
    slow = time.monotonic() - t0
    t0 = time.monotonic()
    assert s.get("/customers/1/orders").status == 200
    fast = time.monotonic() - t0
    assert slow >= 0.39  # uvloop's timers step by 1 ms: up to 1 ms early (see README)
    assert fast < slow
    m = s.metrics()
    assert m['mock_http_request_duration_seconds_bucket{endpoint="customer_get",le="0.25"}'] == 0
    assert m['mock_http_request_duration_seconds_sum{endpoint="customer_get"}'] >= 0.39


def test_latency_is_concurrent(start_server):
    """20 requests of 500 ms at once finish in far less than 20 x 500 ms: the wait blocks nothing."""
    s = start_server("--latency", "fixed:500")
    t0 = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(20) as pool:
        statuses = list(pool.map(lambda i: s.get(f"/customers/{i + 1}/account").status, range(20)))
    assert statuses == [200] * 20
    assert time.monotonic() - t0 < 5
