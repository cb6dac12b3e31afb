"""Every endpoint over real HTTP, on each event loop."""
import socket

CUSTOMER_FIELDS = {"id", "firstName", "lastName", "email", "phone", "tier", "createdAt", "address", "notes"}


def test_health(mock):
    r = mock.get("/health")
    assert r.status == 200
    assert r.json() == {"status": "UP"}
    assert r.headers["Content-Type"] == "application/json"


def test_get_customer(mock):
    r = mock.get("/customers/7")
    assert r.status == 200
    c = r.json()
    assert set(c) == CUSTOMER_FIELDS
    assert c["id"] == 7
    assert c["tier"] in ("gold", "silver", "bronze")
    assert set(c["address"]) == {"street", "city", "zip", "country"}
    assert c["createdAt"].endswith("Z") and "T" in c["createdAt"]
    assert len(r.body) == 2048 == int(r.headers["Content-Length"])


def test_get_customer_outside_range_is_404(mock):
    for path in ("/customers/0", "/customers/51", "/customers/abc", "/customers/-1"):
        r = mock.get(path)
        assert r.status == 404, path
        assert "error" in r.json()


def test_orders(mock):
    r = mock.get("/customers/3/orders")
    assert r.status == 200
    orders = r.json()
    assert isinstance(orders, list) and len(orders) == 5
    for o in orders:
        assert set(o) == {"orderId", "customerId", "placedAt", "status", "currency", "amount", "items"}
        assert o["customerId"] == 3
        assert o["items"] and set(o["items"][0]) == {"sku", "quantity", "unitPrice"}
    assert mock.get("/customers/99/orders").status == 404


def test_account(mock):
    r = mock.get("/customers/3/account")
    assert r.status == 200
    assert set(r.json()) == {"customerId", "accountId", "currency", "balance", "creditLimit", "status"}
    assert r.json()["customerId"] == 3
    assert mock.get("/customers/99/account").status == 404


def test_post_creates_customer(mock):
    r = mock.request("POST", "/customers", body={"firstName": "Ada", "lastName": "Lovelace",
                                                  "email": "ada@example.com", "tier": "gold"})
    assert r.status == 201
    created = r.json()
    assert created["id"] == 51
    assert r.headers["Location"] == "/customers/51"
    assert (created["firstName"], created["tier"]) == ("Ada", "gold")
    assert set(created) == CUSTOMER_FIELDS
    again = mock.get("/customers/51")
    assert again.status == 200 and again.body == r.body
    assert mock.get("/customers/51/orders").status == 200
    second = mock.request("POST", "/customers", body={"firstName": "A", "lastName": "B", "email": "c"})
    assert second.json()["id"] == 52


def test_post_rejects_bad_input(mock):
    assert mock.request("POST", "/customers", body="{not json").status == 400
    assert mock.request("POST", "/customers", body=b"\xff\xfe").status == 400
    assert mock.request("POST", "/customers", body=[1, 2]).status == 400
    r = mock.request("POST", "/customers", body={"firstName": "A", "lastName": "B"})
    assert r.status == 400 and "email" in r.json()["error"]
    assert mock.request("POST", "/customers", body={"firstName": "A", "lastName": "B", "email": "e",
                                                    "tier": "platinum"}).status == 400


def test_delete(mock):
    assert mock.request("DELETE", "/customers/4").status == 204
    assert mock.get("/customers/4").status == 404
    assert mock.get("/customers/4/orders").status == 404
    assert mock.request("DELETE", "/customers/4").status == 404
    assert mock.request("DELETE", "/customers/999").status == 404
    created = mock.request("POST", "/customers", body={"firstName": "A", "lastName": "B", "email": "e"})
    path = created.headers["Location"]
    assert mock.request("DELETE", path).status == 204
    assert mock.get(path).status == 404


def test_created_customers_are_bounded(start_server):
    s = start_server("--customers", "10", "--max-created", "2")
    paths = [s.request("POST", "/customers", body={"firstName": "A", "lastName": "B", "email": "e"})
             .headers["Location"] for _ in range(3)]
    assert [s.get(p).status for p in paths] == [404, 200, 200]


def test_unknown_path_and_method(mock):
    assert mock.get("/nope").status == 404
    assert mock.get("/customers/1/invoices").status == 404
    assert mock.request("PUT", "/customers/1", body={}).status == 405
    assert mock.request("GET", "/customers").status == 405
    assert mock.request("POST", "/health", body={}).status == 405


def test_query_string_and_trailing_slash(mock):
    assert mock.get("/customers/1?expand=all").status == 200
    assert mock.get("/customers/1/").status == 200


def test_payload_size_is_configurable(start_server):
    for size in (1024, 10240):
        s = start_server("--payload-size", str(size), "--customers", "20")
        assert {len(s.get(f"/customers/{i}").body) for i in (1, 5, 20)} == {size}
        created = s.request("POST", "/customers", body={"firstName": "A", "lastName": "B", "email": "e"})
        assert len(created.body) == size


def test_same_seed_same_bytes(start_server):
    a, b, c = (start_server("--seed", seed) for seed in ("1", "1", "2"))
    for path in ("/customers/9", "/customers/9/orders", "/customers/9/account"):
        assert a.get(path).body == b.get(path).body
        assert a.get(path).body != c.get(path).body


def test_metrics(mock):
    mock.get("/customers/1")
    mock.get("/customers/999")
    r = mock.get("/metrics")
    assert r.status == 200
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    m = mock.metrics()
    assert m['mock_http_requests_total{endpoint="customer_get",code="200"}'] == 1
    assert m['mock_http_requests_total{endpoint="customer_get",code="404"}'] == 1
    assert m['mock_http_request_duration_seconds_count{endpoint="customer_get"}'] == 2
    assert m['mock_http_request_duration_seconds_bucket{endpoint="customer_get",le="+Inf"}'] == 2
    assert m['mock_http_request_duration_seconds_count{endpoint="orders"}'] == 0
    assert m["mock_http_requests_in_flight"] == 0
    assert m["process_cpu_seconds_total"] > 0
    assert m['mock_injected_errors_total{endpoint="account"}'] == 0


def test_metrics_only_the_samples_named(mock):
    """?names= (comma-separated sample names, as PCP's agent asks): only those lines, with their family's HELP
    and TYPE once, so a scrape parses a few lines instead of every histogram bucket."""
    mock.get("/customers/1")
    page = mock.get("/metrics?names=mock_http_request_duration_seconds_sum,mock_http_request_duration_seconds_count"
                    "&names=mock_http_requests_in_flight").body.decode()
    samples = [line for line in page.splitlines() if not line.startswith("#")]
    assert {line.split("{")[0].split(" ")[0] for line in samples} == {
        "mock_http_request_duration_seconds_sum", "mock_http_request_duration_seconds_count",
        "mock_http_requests_in_flight"}
    assert 'mock_http_request_duration_seconds_count{endpoint="customer_get"} 1' in samples
    assert page.count("# TYPE mock_http_request_duration_seconds histogram") == 1
    assert (page.index("# TYPE mock_http_request_duration_seconds")
            < page.index("mock_http_request_duration_seconds_sum"))
    assert "# TYPE mock_http_requests_in_flight gauge" in page and "_bucket" not in page and "mock_info" not in page
    assert "mock_info" in mock.get("/metrics?names=").body.decode()


# --- HTTP details the Camel client (Apache HttpClient) may use -------------------------------------

def _raw(port: int, data: bytes, expect_responses: int, timeout: float = 10) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(data)
        received = b""
        while received.count(b"HTTP/1.1 ") < expect_responses or not _complete(received):
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
        return received


def _complete(data: bytes) -> bool:
    head, sep, body = data.rpartition(b"\r\n\r\n")
    if not sep:
        return False
    last_head = head.split(b"HTTP/1.1 ")[-1]
    for line in last_head.split(b"\r\n"):
        if line.lower().startswith(b"content-length:"):
            return len(body) >= int(line.split(b":")[1])
    return True


def test_keep_alive_and_pipelining(mock):
    req = b"GET /customers/%d/account HTTP/1.1\r\nHost: x\r\n\r\n"
    data = _raw(mock.port, req % 1 + req % 2 + req % 3, 3)
    assert data.count(b"HTTP/1.1 200 OK") == 3
    # answered in order
    assert data.index(b'"customerId":1,') < data.index(b'"customerId":2,') < data.index(b'"customerId":3,')


def test_chunked_post_and_expect_continue(mock):
    body = b'{"firstName":"Chunky","lastName":"B","email":"e"}'
    chunked = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
    data = _raw(mock.port, b"POST /customers HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                + chunked, 1)
    assert b"201 Created" in data and b"Chunky" in data
    with socket.create_connection(("127.0.0.1", mock.port), timeout=10) as sock:
        sock.sendall(b"POST /customers HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body))
        assert sock.recv(1000).startswith(b"HTTP/1.1 100 Continue")
        sock.sendall(body)
        assert b"201 Created" in sock.recv(65536)


def test_bad_request_line_gets_400_and_close(mock):
    data = _raw(mock.port, b"NONSENSE\r\n\r\n", 1)
    assert data.startswith(b"HTTP/1.1 400 ") and b"Connection: close" in data


def test_keep_alive_off_closes_each_connection(start_server):
    s = start_server("--keep-alive", "off")
    r = s.get("/customers/1")
    assert r.status == 200 and r.headers["Connection"] == "close"
    req = b"GET /health HTTP/1.1\r\nHost: x\r\n\r\n"
    data = _raw(s.port, req + req, 2, timeout=5)  # the server closes after the first answer
    assert data.count(b"HTTP/1.1 200") == 1


def test_http10_closes_unless_keep_alive(mock):
    data = _raw(mock.port, b"GET /health HTTP/1.0\r\n\r\nGET /health HTTP/1.0\r\n\r\n", 2)
    assert data.count(b"HTTP/1.1 200") == 1


def test_pathological_body_gets_500_and_server_goes_on(mock):
    deep = "[" * 100_000 + "]" * 100_000  # json.loads raises RecursionError
    assert mock.request("POST", "/customers", body=deep).status in (400, 500)
    assert mock.metrics()["mock_http_requests_in_flight"] == 0
    assert mock.get("/customers/1").status == 200


def test_http10_keep_alive_and_head(mock):
    req = b"GET /health HTTP/1.0\r\nConnection: keep-alive\r\n\r\n"
    data = _raw(mock.port, req + req, 2)
    assert data.count(b"HTTP/1.1 200") == 2 and b"Connection: keep-alive" in data
    data = _raw(mock.port, b"HEAD /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", 1)
    assert data.startswith(b"HTTP/1.1 405 ") and data.endswith(b"\r\n\r\n")  # no body after HEAD
