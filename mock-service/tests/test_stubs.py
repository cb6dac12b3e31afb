"""Stubs in WireMock's JSON mapping format (mock_service/stubs.py): the examples of WireMock's own documentation
(https://wiremock.org/docs/stubbing, /request-matching, /simulating-faults) answered as WireMock answers them."""
from __future__ import annotations

import base64
import http.client
import json
import socket
import statistics
import time
from types import SimpleNamespace

import pytest

from mock_service import config, stub_files
from mock_service.latency import Behaviour


def write(folder, files: dict, bodies: dict | None = None):
    """A WireMock root: mappings/<name> for each of `files`, __files/<name> for each of `bodies`."""
    (folder / "mappings").mkdir(parents=True, exist_ok=True)
    for name, mapping in files.items():
        (folder / "mappings" / name).write_text(mapping if isinstance(mapping, str) else json.dumps(mapping))
    for name, content in (bodies or {}).items():
        path = folder / "__files" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content)
    return folder


def own_metrics(server) -> dict[str, float]:
    text = server.get("/__mock/metrics").body.decode()
    return {line.rpartition(" ")[0]: float(line.rpartition(" ")[2])
            for line in text.splitlines() if line and not line.startswith("#")}


# --- WireMock's documented examples, served ------------------------------------------------------------------

def test_the_basic_stub_answers_its_url_and_nothing_else(tmp_path, start_server):
    """docs/stubbing "Basic stubbing": GET /some/thing → 200 Hello world!; /some/thing/else → 404."""
    write(tmp_path, {"basic.json": {"request": {"method": "GET", "url": "/some/thing"},
                                    "response": {"status": 200, "body": "Hello world!",
                                                 "headers": {"Content-Type": "text/plain"}}}})
    server = start_server("--stubs", str(tmp_path), "--builtin", "off")
    reply = server.get("/some/thing")
    assert (reply.status, reply.body, reply.headers["Content-Type"]) == (200, b"Hello world!", "text/plain")
    missing = server.get("/some/thing/else")
    assert missing.status == 404 and missing.json() == {"error": "no stub matches GET /some/thing/else"}
    assert server.request("POST", "/some/thing", body="x").status == 404
    counted = own_metrics(server)
    assert counted['mock_unmatched_requests_total{method="GET",path="/some/thing/else"}'] == 1
    assert counted['mock_unmatched_requests_total{method="POST",path="/some/thing"}'] == 1
    assert counted['mock_http_requests_total{endpoint="mappings/basic.json",code="200"}'] == 1
    assert server.get("/__mock/health").json() == {"status": "UP"}
    assert server.get("/health").status == 404            # the built-in API is off: a service may stub /health


def test_url_matches_path_and_query_exactly_url_path_the_path_alone(tmp_path, start_server):
    write(tmp_path, {"a.json": {"request": {"url": "/with/query?x=1"}, "response": {"body": "url"}},
                     "b.json": {"request": {"urlPath": "/path/only"}, "response": {"body": "urlPath"}},
                     "c.json": {"request": {"urlPathPattern": "/things/[0-9]+"}, "response": {"body": "pattern"}},
                     "d.json": {"request": {"urlPattern": "/search\\?q=.*"}, "response": {"body": "urlPattern"}},
                     "e.json": {"request": {"urlPathTemplate": "/contacts/{contactId}/addresses/{addressId}"},
                                "response": {"body": "template"}}})
    server = start_server("--stubs", str(tmp_path), "--builtin", "off")
    said = {path: (r.status, r.body.decode()) for path in (
        "/with/query?x=1", "/with/query?x=2", "/with/query", "/path/only", "/path/only?any=thing",
        "/things/42", "/things/42/more", "/things/x", "/search?q=camel", "/search",
        "/contacts/12/addresses/99", "/contacts/12/addresses") for r in [server.get(path)]}
    assert said == {"/with/query?x=1": (200, "url"), "/with/query?x=2": (404, said["/with/query?x=2"][1]),
                    "/with/query": (404, said["/with/query"][1]), "/path/only": (200, "urlPath"),
                    "/path/only?any=thing": (200, "urlPath"), "/things/42": (200, "pattern"),
                    "/things/42/more": (404, said["/things/42/more"][1]), "/things/x": (404, said["/things/x"][1]),
                    "/search?q=camel": (200, "urlPattern"), "/search": (404, said["/search"][1]),
                    "/contacts/12/addresses/99": (200, "template"),
                    "/contacts/12/addresses": (404, said["/contacts/12/addresses"][1])}


def test_headers_and_query_parameters_match_with_wiremocks_operators(tmp_path, start_server):
    """docs/request-matching: equalTo (caseInsensitive), contains, doesNotMatch, absent; query equalTo."""
    write(tmp_path, {"match.json": {
        "request": {"method": "POST", "urlPath": "/everything",
                    "headers": {"Content-Type": {"equalTo": "APPLICATION/JSON", "caseInsensitive": True},
                                "Accept": {"contains": "xml"}, "etag": {"doesNotMatch": "abcd.*"},
                                "X-Absent": {"absent": True}},
                    "queryParameters": {"search_term": {"equalTo": "WireMock"}}},
        "response": {"status": 201}}})
    server = start_server("--stubs", str(tmp_path), "--builtin", "off")
    good = {"Content-Type": "application/json", "Accept": "text/xml", "ETag": "xyz"}

    def status(query="?search_term=WireMock", **headers):
        return server.request("POST", "/everything" + query, body="{}", headers={**good, **headers}).status
    assert status() == 201
    assert status(**{"Accept": "text/html"}) == 404
    assert status(**{"ETag": "abcdef"}) == 404
    assert status(**{"X-Absent": "here"}) == 404
    assert status(**{"Content-Type": "text/plain"}) == 404
    assert status("?search_term=Other") == 404 and status("") == 404


def test_the_lower_priority_number_wins_and_among_equals_the_last_loaded(tmp_path, start_server):
    """docs/stubbing "Stub priority": a catch-all 401 at priority 10 under a specific 200 at priority 1."""
    write(tmp_path, {"1-catch-all.json": {"priority": 10, "request": {"method": "GET", "urlPattern": "/api/.*"},
                                          "response": {"status": 401}},
                     "2-specific.json": {"priority": 1, "request": {"method": "GET",
                                                                    "url": "/api/specific-resource"},
                                         "response": {"status": 200}},
                     "3-first.json": {"request": {"url": "/same"}, "response": {"body": "first"}},
                     "4-second.json": {"request": {"url": "/same"}, "response": {"body": "second"}}})
    server = start_server("--stubs", str(tmp_path), "--builtin", "off")
    assert server.get("/api/specific-resource").status == 200
    assert server.get("/api/other").status == 401
    assert server.get("/same").body == b"second"


def test_bodies_json_base64_and_files(tmp_path, start_server):
    write(tmp_path, {"many.json": {"mappings": [
        {"name": "json", "request": {"url": "/json"}, "response": {"jsonBody": {"id": 1, "names": ["a"]}}},
        {"name": "b64", "request": {"url": "/b64"}, "response": {"base64Body": base64.b64encode(b"\x00\x01").decode()}},
        {"name": "file", "request": {"url": "/file"},
         "response": {"bodyFileName": "customer.json", "headers": {"Content-Type": "application/json",
                                                                   "X-Many": ["1", "2"]}}}]}},
          bodies={"customer.json": b'{"from":"a file"}'})
    server = start_server("--stubs", str(tmp_path), "--builtin", "off")
    json_reply = server.get("/json")
    assert json_reply.json() == {"id": 1, "names": ["a"]} and json_reply.headers["Content-Type"] == "application/json"
    assert server.get("/b64").body == b"\x00\x01"
    file_reply = server.get("/file")
    assert file_reply.json() == {"from": "a file"} and file_reply.headers.get_all("X-Many") == ["1", "2"]
    assert 'mock_http_requests_total{endpoint="json",code="200"}' in own_metrics(server)


def test_stubs_answer_first_and_the_builtin_api_behind_them(tmp_path, start_server):
    write(tmp_path, {"one.json": {"request": {"method": "GET", "url": "/customers/1"},
                                  "response": {"status": 418}}})
    server = start_server("--stubs", str(tmp_path), "--customers", "5")
    assert server.get("/customers/1").status == 418
    assert server.get("/customers/2").json()["id"] == 2
    assert server.get("/health").status == 200 and server.get("/metrics").status == 200


def test_a_fixed_delay_is_waited_out(tmp_path, start_server):
    write(tmp_path, {"slow.json": {"request": {"url": "/delayed"},
                                   "response": {"status": 200, "fixedDelayMilliseconds": 200}}})
    server = start_server("--stubs", str(tmp_path), "--builtin", "off")
    started = time.perf_counter()
    assert server.get("/delayed").status == 200
    assert time.perf_counter() - started >= 0.19


def test_the_same_service_answers_on_its_extra_ports(tmp_path, start_server):
    write(tmp_path, {"a.json": {"request": {"url": "/bookCar"}, "response": {"body": "car"}}})
    with socket.socket() as probe:         # a port free a moment ago (the mock binds it at once)
        probe.bind(("127.0.0.1", 0))
        extra = probe.getsockname()[1]
    server = start_server("--stubs", str(tmp_path), "--builtin", "off", "--extra-ports", str(extra))
    assert server.get("/bookCar").body == b"car"
    conn = http.client.HTTPConnection("127.0.0.1", extra, timeout=10)
    conn.request("GET", "/bookCar")
    assert conn.getresponse().read() == b"car"
    conn.close()
    assert own_metrics(server)['mock_http_requests_total{endpoint="mappings/a.json",code="200"}'] == 2


# --- the delays sampled as WireMock's distributions ------------------------------------------------------------

def behaviour(**settings):
    base = {"seed": 7, "endpoint_latency": (), "latency": config.parse_distribution("fixed:3"),
            "latency_cap": 30000.0, "slow_probability": 0.0, "slow_delay": 0.0, "error_rate": 0.0}
    return Behaviour(SimpleNamespace(**{**base, **settings}))


def one_stub(tmp_path, response: dict) -> stub_files.Stub:
    write(tmp_path, {"s.json": {"request": {"url": "/x"}, "response": response}})
    return stub_files.load(tmp_path).stubs[0]


def test_a_lognormal_delay_has_its_median_and_is_capped_at_max_value(tmp_path):
    stub = one_stub(tmp_path, {"delayDistribution": {"type": "lognormal", "median": 90, "sigma": 0.4}})
    b = behaviour()
    samples = [b.stub_delay_s(stub) * 1000 for _ in range(4000)]
    assert 85 < statistics.median(samples) < 95
    capped = one_stub(tmp_path / "c", {"delayDistribution": {"type": "lognormal", "median": 90, "sigma": 2,
                                                             "maxValue": 120}})
    assert max(b.stub_delay_s(capped) * 1000 for _ in range(2000)) <= 120


def test_a_uniform_delay_stays_in_its_bounds_and_adds_to_the_fixed_one(tmp_path):
    stub = one_stub(tmp_path, {"fixedDelayMilliseconds": 100,
                               "delayDistribution": {"type": "uniform", "lower": 15, "upper": 25}})
    b = behaviour()
    samples = [b.stub_delay_s(stub) * 1000 for _ in range(2000)]
    assert 115 <= min(samples) and max(samples) <= 125 and 119 < statistics.mean(samples) < 121


def test_a_stub_without_a_delay_takes_the_global_latency(tmp_path):
    assert behaviour().stub_delay_s(one_stub(tmp_path, {"status": 200})) == pytest.approx(0.003)


def test_the_same_seed_gives_the_same_delays(tmp_path):
    stub = one_stub(tmp_path, {"delayDistribution": {"type": "lognormal", "median": 50, "sigma": 0.5}})
    first, second = behaviour(), behaviour()
    assert [first.stub_delay_s(stub) for _ in range(20)] == [second.stub_delay_s(stub) for _ in range(20)]


# --- what the mock refuses, named ------------------------------------------------------------------------------

@pytest.mark.parametrize(("mapping", "said"), [
    ({"request": {"url": "/a"}, "response": {"transformers": ["response-template"]}},
     "mappings/bad.json: response.transformers: response templating are not served by the lab's mock"),
    ({"request": {"url": "/a", "bodyPatterns": [{"equalToJson": "{}"}]}, "response": {}},
     "mappings/bad.json: request.bodyPatterns: request body matching are not served by the lab's mock"),
    ({"scenarioName": "s", "request": {"url": "/a"}, "response": {}},
     "mappings/bad.json: scenarioName: stateful scenarios are not served by the lab's mock"),
    ({"request": {"url": "/a"}, "response": {"fault": "CONNECTION_RESET_BY_PEER"}},
     "mappings/bad.json: response.fault: faults are not served by the lab's mock"),
    ({"request": {"url": "/a", "urlPath": "/a"}, "response": {}},
     "mappings/bad.json: request: url and urlPath: give one way to match the URL"),
    ({"request": {"urlPathPattern": "/a/(["}, "response": {}},
     "mappings/bad.json: request.urlPathPattern: not a regular"),
    ({"request": {"url": "/a", "headers": {"Accept": {"equalToXml": "<a/>"}}}, "response": {}},
     "mappings/bad.json: request.headers.Accept: equalToXml: not served by the lab's mock"),
    ({"request": {"url": "/a"}, "response": {"status": 700}},
     "mappings/bad.json: response.status: must be an HTTP status from 100 to 599, got 700"),
    ({"request": {"url": "/a"}, "response": {"bodyFileName": "../../etc/passwd"}},
     "mappings/bad.json: response.bodyFileName: '../../etc/passwd' is outside"),
    ({"request": {"url": "/a"}, "response": {"bodyFileName": "missing.json"}},
     "mappings/bad.json: response.bodyFileName: "),
    ({"request": {"url": "/a"}, "response": {"delayDistribution": {"type": "pareto"}}},
     "mappings/bad.json: response.delayDistribution.type: must be lognormal, uniform or fixed, got 'pareto'"),
    ({"request": {"url": "/a"}, "response": {"body": "a", "jsonBody": {}}},
     "mappings/bad.json: response: body and jsonBody: give one body"),
    ({"request": {"url": "/a"}, "response": {}, "priority": 0},
     "mappings/bad.json: priority: must be a whole number from 1, got 0"),
    ({"request": {"url": "/a"}, "respons": {}}, "mappings/bad.json: respons: not a WireMock field"),
    # issue 53, item 7: a UnicodeEncodeError traceback before
    ({"request": {"url": "/a"}, "response": {"headers": {"X-Name": "caf\u00e9 \u2615"}}},
     "mappings/bad.json: response.headers.X-Name: ['caf\u00e9 \u2615'] holds characters an HTTP header cannot carry"),
    ("{not json", "mappings/bad.json: not readable JSON"),
])
def test_a_stub_the_mock_would_answer_otherwise_than_wiremock_is_refused_by_name(tmp_path, mapping, said):
    write(tmp_path, {"bad.json": mapping})
    with pytest.raises(stub_files.StubError) as refused:
        stub_files.load(tmp_path)
    assert str(refused.value).startswith(said), str(refused.value)


def test_an_empty_or_missing_directory_is_refused(tmp_path):
    with pytest.raises(stub_files.StubError, match="not a directory of stubs"):
        stub_files.load(tmp_path / "nowhere")
    (tmp_path / "mappings").mkdir()
    with pytest.raises(stub_files.StubError, match="no stub files"):
        stub_files.load(tmp_path)


def test_a_bad_stub_stops_the_mock_before_it_listens(tmp_path, capsys):
    from mock_service import server
    write(tmp_path, {"bad.json": {"request": {"url": "/a"}, "response": {"fault": "EMPTY_RESPONSE"}}})
    code = server.run(config.parse(["--port", "0", "--stubs", str(tmp_path), "--builtin", "off"], environ={}))
    assert code == 2 and "mappings/bad.json: response.fault: faults" in capsys.readouterr().err


@pytest.mark.parametrize(("argv", "said"), [
    (["--builtin", "off"], "--builtin off needs --stubs DIR"),
    (["--stubs", "/nonexistent-stubs"], "--stubs: '/nonexistent-stubs' is not a directory"),
    (["--port", "9000", "--extra-ports", "9000"], "--extra-ports: 9000 is already --port"),
    (["--extra-ports", "8082,8082"], "--extra-ports: port 8082 is given twice"),
])
def test_bad_stub_flags_are_refused(argv, said):
    with pytest.raises(config.ConfigError) as refused:
        config.parse(argv, environ={})
    assert said in str(refused.value)
