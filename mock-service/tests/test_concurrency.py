"""--max-concurrent: requests beyond the limit get 503 at once; health and metrics still answer."""
import concurrent.futures
import time


def test_requests_beyond_the_limit_get_503(start_server):
    s = start_server("--max-concurrent", "2", "--latency", "fixed:1500")
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        timed = list(pool.map(lambda i: _timed(s, f"/customers/{i + 1}"), range(6)))
    statuses = sorted(status for status, _ in timed)
    assert statuses == [200, 200, 503, 503, 503, 503]
    assert all(elapsed < 1.4 for status, elapsed in timed if status == 503)  # refused, not delayed
    m = s.metrics()
    assert m["mock_rejected_requests_total"] == 4
    assert m['mock_http_requests_total{endpoint="customer_get",code="503"}'] == 4
    assert m["mock_http_requests_in_flight"] == 0


def test_health_and_metrics_bypass_the_limit(start_server):
    s = start_server("--max-concurrent", "1", "--latency", "fixed:1500")
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        busy = pool.submit(s.get, "/customers/1")
        time.sleep(0.5)
        assert s.get("/health").status == 200
        assert s.metrics()["mock_http_requests_in_flight"] == 1
        assert s.get("/customers/2").status == 503
        assert busy.result().status == 200


def _timed(s, path):
    t0 = time.monotonic()
    status = s.get(path).status
    return status, time.monotonic() - t0
