"""A service's load as a request list (load: {requests: FILE.csv}): parsed with its refusals named by line, replayed
by weight by the plan the lab writes, which JMeter runs for real on both machines at once (two stand-in services on
127.0.0.1): each row's method, path, body and expected status."""
from __future__ import annotations

import collections
import http.server
import json
import re
import threading

import pytest
from service_parts import BOOT32, boot_jar

from lab import paths
from lab.experiment import load, service
from lab.experiment.load import plan_check, request_list

HEAD = "method,path,body_file,weight,expected_status\n"


def write(tmp_path, rows: str, files: dict | None = None):
    for name, text in (files or {}).items():
        (tmp_path / name).write_text(text)
    (tmp_path / "requests.csv").write_text(HEAD + rows)
    return tmp_path / "requests.csv"


@pytest.mark.parametrize("rows, said", [
    ("FETCH,/x,,1,200\n", "line 2: method 'FETCH' is not one of GET"),
    ("GET,x,,1,200\n", "line 2: path 'x' must start with /"),
    ("GET,/x,,0,200\n", "line 2: weight '0' must be a whole number of at least 1"),
    ("GET,/x,,\u00b2,200\n", "line 2: weight '\u00b2' must be a whole number"),     # a ValueError before
    ("GET,/x,,1,2\u00b900\n", "line 2: expected_status '2\u00b900' must be an HTTP status"),
    ('GET,/x,"' + "a" * 140_000 + '",1,200\n', "not a request list CSV (field larger than field limit"),
    ("GET,/x,,1,700\n", "line 2: expected_status '700' must be an HTTP status"),
    ("GET,/x,,1\n", "line 2: 4 columns, not 5"),
    ("GET,/x,,1,200\nPOST,/y,missing.json,1,201\n", "line 3: body_file 'missing.json': No such file"),
    ("# only a comment\n", "no request"),
    # JMeter evaluates functions on the lab's host: only those computing a value are sent
    ('GET,"/x${__groovy(System.exit(1))}",,1,200\n', "line 2: path calls JMeter's __groovy: JMeter would run it"),
    ("POST,/y,body.json,1,201\n", "line 2: body_file 'body.json' calls JMeter's __FileToString"),
    ('GET,"/x/${__setProperty(host,10.0.0.1)}",,1,200\n', "calls JMeter's __setProperty"),
    ("POST,/y,../outside.json,1,201\n", "line 2: body_file '../outside.json' is outside the list's folder"),
    ("POST,/y,/etc/hostname,1,201\n", "line 2: body_file '/etc/hostname' is outside the list's folder"),
    ("GET,/a,,1,200\nGET,/b,,1000,200\n", "requests.csv: the weights 1, 1000 need 1001 units to draw by (at most"),
])
def test_a_list_the_lab_cannot_replay_is_refused_by_line(tmp_path, rows, said):
    folder = tmp_path / "list"
    folder.mkdir()
    (tmp_path / "outside.json").write_text("{}")
    files = {"body.json": '{"x": "${__FileToString(/etc/shadow)}"}'}
    with pytest.raises(plan_check.PlanError, match=re.escape(said)):
        request_list.plan_xml(request_list.parse(write(folder, rows, files)), "requests.csv")


def test_weights_are_reduced_and_labels_read_without_their_functions(tmp_path):
    got = request_list.parse(write(tmp_path, "GET,\"/shop/price/${__Random(1,9)}\",,60,200\n"
                                             "POST,/shop/orders,order.json,30,201\nDELETE,/shop/x,,10,204\n",
                                   {"order.json": '{"item": 1}'}))
    assert [r.label for r in got] == ["GET /shop/price/{…}", "POST /shop/orders", "DELETE /shop/x"]
    assert request_list.repeats(got) == [6, 3, 1]
    assert got[1].body == '{"item": 1}' and got[1].json_body and not got[0].json_body


def test_a_heavy_body_stands_once_in_the_plan_whatever_its_weight(tmp_path):
    """Issue 53, item 10: a 100 KB body at weight 199 made a 20 MB plan (a sampler copy per unit of weight)."""
    body = '{"blob": "' + "x" * 100_000 + '"}'
    source = write(tmp_path, "POST,/shop/orders,big.json,199,201\nGET,/shop/a,,1,200\n", {"big.json": body})
    text = request_list.plan_xml(request_list.parse(source), "requests.csv")
    assert text.count("x" * 100_000) == 1 and len(text) < len(body) + 60_000
    assert text.count("<HTTPSamplerProxy ") == 2 and "${__V(lab_pick_${__Random(1,200)})}" in text
    assert text.count('>0</stringProp><stringProp name="Argument.metadata">') == 199, "199 units draw row 0"


def test_a_descriptors_request_list_becomes_a_plan_the_lab_checks(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "STATE_DIR", tmp_path / "state")
    boot_jar(tmp_path / "shop.jar", BOOT32, ("spring-boot-3.5.7.jar", "tomcat-embed-core-10.1.48.jar"))
    write(tmp_path, "GET,/shop/a,,3,200\nGET,/shop/b,,1,200\n")
    (tmp_path / "shop.yml").write_text("name: shop\njar: shop.jar\nhealth: /h\nload: {requests: requests.csv}\n")
    svc = service.load(str(tmp_path / "shop.yml"))
    assert svc.plan.path == str(tmp_path / "state" / "services" / "shop" / "requests.jmx")
    assert svc.plan.samplers == ("GET /shop/a", "GET /shop/b")      # each row once, its weight in the draw
    assert {"host", "users", "ramp_up_s", "duration_s"} <= set(svc.plan.reads)
    (tmp_path / "shop.yml").write_text("name: shop\njar: shop.jar\nhealth: /h\nload: {requests: a.csv, plan: b}\n")
    with pytest.raises(service.ServiceError, match="load: must be {plan: FILE.jmx}"):
        service.load(str(tmp_path / "shop.yml"))


class Shop(http.server.BaseHTTPRequestHandler):
    def _answer(self, status: int) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length).decode() if length else ""
        self.server.seen.append((self.command, self.path.split("/")[2], self.headers.get("Content-Type"), body))
        self.send_response(status)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_GET(self):  # noqa: N802 - http.server's names
        self._answer(200)

    def do_POST(self):  # noqa: N802
        self._answer(201)

    def do_DELETE(self):  # noqa: N802
        self._answer(200)          # the list expects 204: JMeter must call these failures

    def log_message(self, *args):
        pass


def test_jmeter_replays_the_list_by_weight_on_both_machines(tmp_path):
    source = write(tmp_path, "GET,\"/shop/price/${__Random(1,9)}\",,6,200\nPOST,/shop/orders,order.json,3,201\n"
                             "DELETE,/shop/orders,,1,204\n", {"order.json": '{"item": 7}'})
    plan = request_list.write_plan(source, tmp_path / "requests.jmx")
    servers = {}
    for side in load.MACHINES:
        servers[side] = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Shop)
        servers[side].seen = []
        threading.Thread(target=servers[side].serve_forever, daemon=True).start()
    try:
        run_dir = tmp_path / "run"
        run_dir.mkdir()
        load.run(run_dir, {side: f"http://127.0.0.1:{s.server_address[1]}" for side, s in servers.items()},
                 load.Profile(users=3, ramp_up_s=1, duration_s=6), progress=lambda _: None, plan=plan)
    finally:
        for s in servers.values():
            s.shutdown()
    for side, server in servers.items():
        samples = load.read_jtl(run_dir / side / "jmeter.jtl")
        by_label = collections.Counter(s["label"] for s in samples)
        assert set(by_label) == {"GET /shop/price/{…}", "POST /shop/orders", "DELETE /shop/orders"}, side
        assert by_label["GET /shop/price/{…}"] > by_label["POST /shop/orders"] > by_label["DELETE /shop/orders"]
        ok = {s["label"]: s["success"] for s in samples}
        assert ok["GET /shop/price/{…}"] == "true" and ok["POST /shop/orders"] == "true"
        assert ok["DELETE /shop/orders"] == "false"           # 200 where the list expects 204
        posts = [seen for seen in server.seen if seen[0] == "POST"]
        assert posts and all(json.loads(body) == {"item": 7} and kind == "application/json"
                             for _, _, kind, body in posts)
        assert len(server.seen) == len(samples)
