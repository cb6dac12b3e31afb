"""The load generator for real: JMeter runs jmeter/plan.jmx against the app and the mock on 127.0.0.1.

One app JVM (camel3, built here when its jar is missing) in front of one mock service serves both
"machines"; a counting TCP proxy in front of the app shows what keep-alive does to connections; a stub
that answers 200 with the wrong customer and a closed port show that the assertions mark failures.
Runs are tiny (2–3 users or 40 arrivals/s, a few seconds of ramp and hold). Every process a fixture
starts is stopped by its PID.
"""
from __future__ import annotations

import asyncio
import collections
import csv
import http.server
import json
import math
import os
import pwd
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import pytest

from lab import paths, unprivileged
from lab.experiment import load
from lab.experiment.load import engines

APP_DIR = paths.ROOT / "app"
APP_JAR = APP_DIR / "camel3" / "target" / "camel-tuning-app-camel3.jar"
VENV_PYTHON = paths.ROOT / ".venv" / "bin" / "python"
HEADER = ("timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,"
          "bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect")


# --- helpers and fixtures ------------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop_process(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)


def wait_http(url: str, timeout: float, proc: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{proc.args[0]} exited {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.5)
    pytest.fail(f"{url} not up after {timeout:.0f} s: {log.read_text()[-2000:]}")


@pytest.fixture(scope="module")
def mock(tmp_path_factory):
    """The mock service as its own process; 5 ms per call keeps the tiny runs from flooding 2 cores."""
    log = tmp_path_factory.mktemp("mock") / "mock.log"
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen([str(VENV_PYTHON), "-m", "mock_service", "--port", str(port), "--latency", "fixed:5"],
                                cwd=paths.ROOT / "mock-service", stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_http(f"http://127.0.0.1:{port}/health", 30, proc, log)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(proc)


@pytest.fixture(scope="module")
def app(mock, tmp_path_factory):
    """The camel3 app on a free port, backend = the mock (jar built first in a fresh clone)."""
    if not APP_JAR.exists():
        subprocess.run(["./mvnw", "-B", "-ntp", "-q", "package", "-DskipTests", "-pl", "camel3", "-am"],
                       cwd=APP_DIR, check=True)
    work = tmp_path_factory.mktemp("app")
    log = work / "app.log"
    port = free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            ["java", "-Xmx256m", "-XX:TieredStopAtLevel=1", "-Djava.library.path=/nonexistent", "-jar", str(APP_JAR),
             f"--server.port={port}", f"--lab.backend.url={mock}", "--lab.audit.enabled=false",
             f"--lab.log.dir={work}", "--logging.level.root=WARN"],
            cwd=work, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_http(f"http://127.0.0.1:{port}/actuator/health", 180, proc, log)
        yield f"http://127.0.0.1:{port}"
    finally:
        stop_process(proc)


class CountingProxy:
    """A TCP proxy to the app that counts the connections clients open through it."""

    def __init__(self, target: str) -> None:
        self.target_port = int(target.rsplit(":", 1)[1])
        self.connections = 0
        self.loop = asyncio.new_event_loop()
        started = threading.Event()
        self.thread = threading.Thread(target=self._run, args=(started,), daemon=True)
        self.thread.start()
        assert started.wait(10)
        self.url = f"http://127.0.0.1:{self.port}"

    def _run(self, started: threading.Event) -> None:
        asyncio.set_event_loop(self.loop)
        self.server = self.loop.run_until_complete(asyncio.start_server(self._serve, "127.0.0.1", 0))
        self.port = self.server.sockets[0].getsockname()[1]
        started.set()
        self.loop.run_forever()

    async def _serve(self, client_r, client_w) -> None:
        self.connections += 1
        try:
            app_r, app_w = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            client_w.close()
            return

        async def pipe(reader, writer):
            try:
                while data := await reader.read(65536):
                    writer.write(data)
                    await writer.drain()
            except (ConnectionError, OSError):
                pass
            finally:
                writer.close()

        await asyncio.gather(pipe(client_r, app_w), pipe(app_r, client_w))

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.server.close)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


class WrongCustomerHandler(http.server.BaseHTTPRequestHandler):
    """200 with a customer nobody asked for, to every method: only the JSON assertions can catch it."""
    BODY = json.dumps({"customerId": -1, "customer": {"customerId": -1}, "familyName": "Nobody"}).encode()

    def _answer(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(self.BODY)))
        self.end_headers()
        self.wfile.write(self.BODY)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *args) -> None:
        pass


class SlowApiHandler(http.server.BaseHTTPRequestHandler):
    """The API's answers, just enough for the plan's assertions, each after DELAY_S."""
    DELAY_S = 1.5

    def _reply(self, status: int, body: dict | None = None, location: str | None = None) -> None:
        time.sleep(self.DELAY_S)
        data = json.dumps(body).encode() if body is not None else b""
        self.send_response(status)
        if location:
            self.send_header("Location", location)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        cid = int(self.path.split("/")[3])
        self._reply(200, {"customer": {"customerId": cid}} if self.path.endswith("/summary") else {"customerId": cid})

    def do_POST(self) -> None:
        sent = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._reply(201, {"customerId": 5000, "familyName": sent["lastName"]}, location="/api/customers/5000")

    def do_DELETE(self) -> None:
        self._reply(204)

    def log_message(self, *args) -> None:
        pass


class StandInServer(http.server.ThreadingHTTPServer):
    request_queue_size = 128       # socketserver's 5 overflows when 20 connections a second meet a busy host


def serve(handler):
    server = StandInServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    thread.join(10)


@pytest.fixture(scope="module")
def wrong_customer():
    yield from serve(WrongCustomerHandler)


@pytest.fixture(scope="module")
def slow_api():
    yield from serve(SlowApiHandler)


def closed_port_url() -> str:
    return f"http://127.0.0.1:{free_port()}"     # bound and released: nothing listens there


def rows(jtl: Path) -> list[dict[str, str]]:
    return load.read_jtl(jtl)


def shares(samples: list[dict[str, str]]) -> dict[str, float]:
    counts = collections.Counter(s["label"] for s in samples)
    return {label: counts[label] / len(samples) for label in counts}


@pytest.fixture(scope="module")
def closed_run(app, tmp_path_factory):
    """3 users per machine, keep-alive on; default goes through a connection-counting proxy."""
    proxy = CountingProxy(app)
    run_dir = tmp_path_factory.mktemp("closed")
    lines: list[str] = []
    try:
        profile = load.Profile(users=3, ramp_up_s=2, duration_s=10)
        result = load.run(run_dir, {"default": proxy.url, "tuned": app}, profile, progress=lines.append,
                          progress_every_s=3)
    finally:
        proxy.close()
    return run_dir, result, lines, proxy.connections


# --- no JMeter needed --------------------------------------------------------------------------------

@pytest.mark.parametrize("changes, field", [
    ({"model": "poisson"}, "model"),
    ({"users": 0}, "users"),
    ({"users": 2.5}, "users"),
    ({"ramp_up_s": -1}, "ramp_up_s"),
    ({"duration_s": 0}, "duration_s"),
    ({"rate_per_s": 0}, "rate_per_s"),
    ({"keep_alive": "yes"}, "keep_alive"),
    ({"connect_timeout_ms": 0}, "connect_timeout_ms"),
    ({"response_timeout_ms": True}, "response_timeout_ms"),
    ({"mix": {"get": 1}}, "mix"),
    ({"mix": {"get": -1, "summary": 1, "post": 1, "delete": 0}}, "mix.get"),
    ({"mix": {"get": 0, "summary": 0, "post": 0, "delete": 0}}, "mix"),
    ({"mix": {"get": 60, "summary": 25, "post": 5, "delete": 10}}, "mix.delete"),
    ({"id_min": 0}, "id_min"),
    ({"id_min": 10, "id_max": 9}, "id_max"),
    ({"customers_path": "/api/customers/"}, "customers_path"),
    ({"customers_path": ""}, "customers_path"),
    ({"model": "steps"}, "step_rates"),
    ({"model": "steps", "step_rates": (20, 10)}, "step_rates"),
    ({"model": "steps", "step_rates": (10, 20), "step_s": 5}, "step_s"),
    ({"model": "steps", "step_rates": (10, 20), "p99_target_ms": 0}, "p99_target_ms"),
    ({"step_rates": (10, 20)}, "step_rates"),
])
def test_profile_validation_names_the_bad_field(changes, field):
    with pytest.raises(ValueError, match=rf"^{re.escape(field)}: "):
        load.Profile(**changes)


def test_named_loads_the_lab_mix_and_the_articles_plan():
    assert load.named("lab") == load.Profile()
    article = load.named("article-2018")
    props = article.jmeter_properties()
    # the article's JMeter plan: one GET that calls the backend, no keep-alive, 10 s timeouts, 150 over 150 s
    assert (props["mix_get"], props["mix_summary"], props["mix_post"], props["mix_delete"]) == ("1", "0", "0", "0")
    timeouts = (props["connect_timeout_ms"], props["response_timeout_ms"])
    assert (props["keep_alive"], *timeouts) == ("false", "10000", "10000")
    assert (article.users, article.ramp_up_s, article.duration_s, article.name) == (150, 150, 300, "article-2018")
    longer = load.named("article-2018", duration_s=1200, users=None)       # None: keep the named value
    assert (longer.duration_s, longer.users, longer.keep_alive) == (1200, 150, False)
    with pytest.raises(ValueError, match="--load 'nosuch': unknown load"):
        load.named("nosuch")


def test_the_command_line_starts_from_the_named_load():
    from lab import cli
    opts = cli.run_options(cli.parser().parse_args(["--load", "article-2018", "--duration", "20m"]))
    assert (opts.profile.name, opts.profile.duration_s, opts.profile.keep_alive) == ("article-2018", 1200, False)
    assert cli.run_options(cli.parser().parse_args([])).profile == load.Profile()


def test_targets_must_be_both_machines_as_plain_urls():
    good = {"default": "http://192.168.56.11", "tuned": "https://h:8443/"}
    props = load.target_properties(good)
    assert props["default_port"] == "80" and props["tuned_port"] == "8443" and props["tuned_scheme"] == "https"
    with pytest.raises(ValueError, match="targets: need exactly default and tuned"):
        load.target_properties({"default": "http://a"})
    with pytest.raises(ValueError, match=r"targets\.tuned: "):
        load.target_properties({"default": "http://a", "tuned": "http://b/api"})
    with pytest.raises(ValueError, match=r"targets\.default: "):
        load.target_properties({"default": "ftp://a", "tuned": "http://b"})


def test_plan_defaults_are_the_profile_defaults():
    """The plan run by hand (no -J) and Profile() describe the same scenario."""
    plan = load.PLAN.read_text()
    found = dict(re.findall(r"__P\((\w+),([^)]*)\)", plan))
    found.update(re.findall(r"props\.getProperty\('(\w+)', '([^']*)'\)", plan))
    want = load.Profile().jmeter_properties()
    for name, value in want.items():
        assert name in found, f"the plan does not read the property {name}"
        assert float(found[name]) == float(value) if value[:1].isdigit() else found[name] == value, name


def test_a_half_written_last_record_is_cut_off(tmp_path):
    jtl = tmp_path / "jmeter.jtl"
    whole = f'{HEADER}\n1,2,GET x,500,,t 1-1,text,false,"two\nlines",1,1,1,1,u,1,0,0\n'
    jtl.write_bytes(whole.encode() + b'1,2,GET x,200,,t 1-1,text,true,"half')
    tail = load.JtlTail(jtl)
    tail.read()
    assert (tail.samples, tail.errors) == (1, 1)
    assert tail.trim_partial_tail() == len(b'1,2,GET x,200,,t 1-1,text,true,"half')
    assert jtl.read_text() == whole and rows(jtl)[0]["failureMessage"] == "two\nlines"


def test_jmeter_home_is_assembled_once_with_its_config_files():
    home = load.ensure_jmeter()
    stamp = home / load.STAMP_NAME
    built_at = stamp.stat().st_mtime_ns
    assert load.ensure_jmeter() == home and stamp.stat().st_mtime_ns == built_at, "rebuilt without a pom change"
    assert stamp.read_text().strip() == load.pom_hash()
    for name in ("ApacheJMeter.jar", "jmeter.properties", "saveservice.properties", "upgrade.properties",
                 "log4j2.xml", "reportgenerator.properties", "report-template/index.html.fmkr"):
        assert (home / "bin" / name).is_file(), name
    assert load.jmeter_version(home) == "5.6.3"


# --- real runs ----------------------------------------------------------------------------------------

def test_closed_run_writes_a_jtl_per_machine_with_the_exact_header(closed_run):
    run_dir, result, _, _ = closed_run
    for machine in load.MACHINES:
        jtl = run_dir / machine / "jmeter.jtl"
        assert jtl.read_text().splitlines()[0] == HEADER
        samples = rows(jtl)
        assert len(samples) == result.samples[machine] > 200
        assert {s["threadName"].split(" ")[0] for s in samples} == {machine}
        assert max(int(s["grpThreads"]) for s in samples) == 3
        failed = [s for s in samples if s["success"] != "true"]
        assert not failed, failed[:3]
    assert (run_dir / "jmeter.log").stat().st_size > 0


@pytest.mark.skipif(os.geteuid() != 0, reason="only a lab run as root hands JMeter to its own user")
def test_jmeter_runs_as_the_labs_user_never_as_root(closed_run):
    """JMeter runs a customer's text (a plan's samplers and functions, --allow-plan-code's scripts): as the lab's
    user camel-lab, which the kernel saw running it, and which made the JTLs in folders lent for the load only."""
    run_dir, result, _, _ = closed_run
    user = pwd.getpwnam(unprivileged.NAME)
    assert result.jmeter_uid == user.pw_uid != 0
    assert result.runs_as["user"] == unprivileged.NAME and result.runs_as["uid"] == user.pw_uid
    # pytest's folders are root's only: JMeter was shown what it needed there (lab/confine.py), no capability to read
    # past permissions (issue 85)
    assert result.runs_as["read_all"] is False and "why" not in result.runs_as
    for machine in load.MACHINES:
        assert (run_dir / machine / "jmeter.jtl").stat().st_uid == user.pw_uid
        assert (run_dir / machine).stat().st_uid == os.geteuid(), "the folder was lent for the load only"
    assert (run_dir / "jmeter.log").stat().st_uid == user.pw_uid


def test_closed_run_realises_the_weighted_mix(closed_run):
    run_dir, result, _, _ = closed_run
    weights = load.Profile().mix
    for machine in load.MACHINES:
        samples = rows(run_dir / machine / "jmeter.jtl")
        got = shares(samples)
        for key, label in load.LABELS.items():
            want = weights[key] / sum(weights.values())
            # a few points, or 4 binomial standard deviations when the host was slow and samples few
            allowed = max(0.03, 4 * math.sqrt(want * (1 - want) / len(samples)))
            assert abs(got.get(label, 0) - want) <= allowed, f"{machine} {label}: {got.get(label, 0):.3f} vs {want:.3f}"


def test_closed_run_records_what_ran(closed_run):
    run_dir, result, lines, _ = closed_run
    assert result.jmeter_version == "5.6.3" and str(load.PLAN) in result.command
    assert "-Jusers=3" in result.command and "-Jdefault_host=127.0.0.1" in result.command
    assert (result.interrupted, result.ended_by, result.exit_code) == (False, "completed", 0)
    assert result.started_at < result.ended_at and result.trimmed_bytes == {"default": 0, "tuned": 0}
    assert json.loads(json.dumps(result.to_dict()))["samples"] == result.samples
    assert result.jmeter_peak_rss_mb and result.jmeter_cpu_s
    first = min(int(s["timeStamp"]) for s in rows(run_dir / "default" / "jmeter.jtl"))
    assert 0 <= first - result.test_start_ms < 5000


def test_progress_shows_phase_time_and_rate_per_machine(closed_run):
    _, _, lines, _ = closed_run
    live = [line for line in lines if re.search(r"(ramp-up|hold) +\d+:\d\d elapsed, \d+:\d\d left", line)]
    assert live, lines
    assert all(re.search(r"default +[\d.]+ req/s .* err .*\| tuned +[\d.]+ req/s", line) for line in live)
    assert any(re.search(r"default +[1-9][\d.]* req/s", line) for line in live), lines
    assert lines[-1].startswith("load: done")


def test_keep_alive_on_reuses_connections(closed_run):
    _, result, _, connections = closed_run
    # Tomcat closes a connection after 100 requests (max-keep-alive-requests)
    assert connections <= result.samples["default"] / 20 + 3, (connections, result.samples["default"])


def test_dashboards_are_generated(closed_run):
    run_dir, _, _, _ = closed_run
    lines: list[str] = []
    made = load.dashboards(run_dir, progress=lines.append)
    for machine in load.MACHINES:
        assert made[machine] == run_dir / "jmeter-dashboard" / machine
        stats = json.loads((made[machine] / "statistics.json").read_text())
        assert stats["Total"]["sampleCount"] == len(rows(run_dir / machine / "jmeter.jtl"))
        assert (made[machine] / "index.html").is_file()
        if os.geteuid() == 0:       # JMeter made it as the lab's user, from a root-only run folder
            assert (made[machine] / "index.html").stat().st_uid == pwd.getpwnam(unprivileged.NAME).pw_uid
    assert not list(Path(unprivileged.HOME).glob("dashboard-*")), "a scratch folder is left"


def test_an_empty_or_missing_jtl_gets_no_dashboard_and_says_so(tmp_path):
    (tmp_path / "default").mkdir()
    (tmp_path / "default" / "jmeter.jtl").write_text(HEADER + "\n")
    lines: list[str] = []
    assert load.dashboards(tmp_path, progress=lines.append) == {"default": None, "tuned": None}
    assert any("default: skipped" in line and "no sample" in line for line in lines), lines
    assert any("tuned: skipped" in line and "missing" in line for line in lines), lines


def test_keep_alive_off_connects_per_request_and_assertions_mark_failures(app, wrong_customer, tmp_path):
    proxy = CountingProxy(app)
    try:
        profile = load.Profile(users=2, ramp_up_s=1, duration_s=6, keep_alive=False)
        result = load.run(tmp_path, {"default": proxy.url, "tuned": wrong_customer}, profile, progress=lambda _: None)
    finally:
        proxy.close()
    default = rows(tmp_path / "default" / "jmeter.jtl")
    assert all(s["success"] == "true" for s in default)
    assert proxy.connections >= 0.95 * len(default), (proxy.connections, len(default))
    tuned = rows(tmp_path / "tuned" / "jmeter.jtl")
    assert tuned and all(s["success"] == "false" for s in tuned) and result.errors["tuned"] == len(tuned)
    messages = collections.Counter(s["failureMessage"] for s in tuned)
    assert any(re.fullmatch(r"Value in json path '\$\.customerId' expected to be '\d+', but found '-1'", m)
               for m in messages), messages
    assert "expected HTTP status 201" in messages, messages         # POST answered 200


def test_open_model_reaches_its_rate_and_unreachable_targets_fail(app, tmp_path):
    rate, ramp, hold = 40, 2, 10
    profile = load.Profile(model="open", rate_per_s=rate, ramp_up_s=ramp, duration_s=hold, response_timeout_ms=2000)
    result = load.run(tmp_path, {"default": app, "tuned": closed_port_url()}, profile, progress=lambda _: None)
    planned = rate * hold + rate * ramp / 2
    for machine in load.MACHINES:
        assert abs(result.samples[machine] - planned) <= 0.1 * planned, (machine, result.samples[machine])
    default = rows(tmp_path / "default" / "jmeter.jtl")
    assert all(s["success"] == "true" for s in default)
    # arrivals in the hold, on JMeter's schedule clock; its first second is left out: JMeter starts the
    # thread groups a moment after the test, then catches up with the arrivals it owes
    hold_from = result.test_start_ms + (ramp + 1) * 1000
    hold_to = result.test_start_ms + (ramp + hold) * 1000
    in_hold = [s for s in default if hold_from <= int(s["timeStamp"]) < hold_to]
    # Poisson alone is ±5 % (1 σ); on a loaded host JMeter also catches up owed arrivals in bursts (seen +22 %
    # with two VMs busy). ±35 % still tells the hold's rate from the ramp's mean (half) or a double schedule;
    # the whole schedule's count is checked to ±10 % above.
    assert abs(len(in_hold) / (hold - 1) - rate) <= 0.35 * rate, len(in_hold) / (hold - 1)
    tuned = rows(tmp_path / "tuned" / "jmeter.jtl")
    assert all(s["success"] == "false" and "Non HTTP response code" in s["responseCode"] for s in tuned)
    assert all(s["failureMessage"].startswith("expected HTTP status") for s in tuned)


def test_steps_model_holds_each_stages_rate(app, tmp_path):
    """The capacity search's schedule: each rate held for its stage, a jump between stages (not a ramp)."""
    profile = load.Profile(model="steps", step_rates=(10, 40), step_s=10, ramp_up_s=0, response_timeout_ms=2000)
    assert profile.steps_schedule() == ("rate(10/s) random_arrivals(10 s) rate(10/s) rate(40/s) random_arrivals(10 s) "
                                        "rate(40/s) pause(2000 ms)")
    assert profile.planned_s == 22
    result = load.run(tmp_path, {"default": app, "tuned": app}, profile, progress=lambda _: None)
    assert abs(result.samples["default"] - 500) <= 0.15 * 500, result.samples["default"]
    default = rows(tmp_path / "default" / "jmeter.jtl")
    for rate, start, end in profile.stages():
        # a stage's first second left out (JMeter catches up owed arrivals at a change); same tolerance as above
        inside = [r for r in default
                  if result.test_start_ms + (start + 1) * 1000 <= int(r["timeStamp"])
                  < result.test_start_ms + end * 1000]
        assert abs(len(inside) / (end - start - 1) - rate) <= 0.35 * rate, (rate, len(inside))


def test_open_model_lets_requests_in_flight_finish(slow_api, tmp_path):
    """JMeter cuts what still runs when an open schedule ends: the plan's closing pause prevents it."""
    rate, ramp, hold = 10, 1, 3
    profile = load.Profile(model="open", rate_per_s=rate, ramp_up_s=ramp, duration_s=hold, response_timeout_ms=3000)
    result = load.run(tmp_path, {"default": slow_api, "tuned": slow_api}, profile, progress=lambda _: None)
    for machine in load.MACHINES:
        samples = rows(tmp_path / machine / "jmeter.jtl")
        assert len(samples) == result.samples[machine]
        assert abs(len(samples) - (rate * hold + rate * ramp / 2)) <= 1
        assert all(s["success"] == "true" and int(s["elapsed"]) >= 1500 for s in samples), \
            collections.Counter((s["responseCode"], s["failureMessage"]) for s in samples)


RUNNER = """
import json, signal, sys
signal.signal(signal.SIGINT, signal.default_int_handler)   # even where the parent ignores SIGINT
sys.path.insert(0, sys.argv[1])
from pathlib import Path
from lab.experiment import load
profile = load.Profile(users=2, ramp_up_s=1, duration_s=120)
result = load.run(Path(sys.argv[2]), {"default": sys.argv[3], "tuned": sys.argv[3]}, profile, progress_every_s=1,
                  progress=lambda line: print(line, flush=True))
print("RESULT " + json.dumps(result.to_dict()), flush=True)
"""


def test_ctrl_c_stops_the_load_and_leaves_whole_jtls(app, tmp_path):
    run_dir = tmp_path / "run"
    runner = subprocess.Popen([sys.executable, "-c", RUNNER, str(paths.ROOT), str(run_dir), app],
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        jtl = run_dir / "default" / "jmeter.jtl"
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not (jtl.exists() and jtl.stat().st_size > 20000):
            time.sleep(0.5)
        assert runner.poll() is None and jtl.exists(), runner.stdout.read() if runner.poll() is not None else ""
        stopped_at = time.monotonic()
        runner.send_signal(signal.SIGINT)
        out, _ = runner.communicate(timeout=60)
        took = time.monotonic() - stopped_at
    finally:
        stop_process(runner)
    assert runner.returncode == 0, out
    result = json.loads(out.split("RESULT ", 1)[1])
    assert result["interrupted"] and result["ended_by"] == "shutdown", out
    assert took < 30, took
    assert "load: stopping: asking JMeter to Shutdown" in out and "load: stopped early" in out
    for machine in load.MACHINES:
        path = run_dir / machine / "jmeter.jtl"
        text = path.read_text()
        assert text.startswith(HEADER + "\n") and text.endswith("\n")
        with open(path, newline="") as f:
            records = list(csv.reader(f))
        assert all(len(r) == 17 for r in records) and len(records) - 1 == result["samples"][machine] > 0
    # JMeter is gone (its PID was the runner's child; nothing else to look for)
    assert "end of run" in (run_dir / "jmeter.out").read_text()


def test_the_steps_model_warms_up_at_its_first_rate_before_the_judged_stages():
    profile = load.Profile(model="steps", step_rates=(5, 10), step_s=60, ramp_up_s=120, response_timeout_ms=2000)
    assert profile.steps_schedule() == ("rate(5/s) random_arrivals(120 s) rate(5/s) rate(5/s) random_arrivals(60 s) "
                                        "rate(5/s) rate(10/s) random_arrivals(60 s) rate(10/s) pause(2000 ms)")
    assert profile.stages() == [(5, 120, 180), (10, 180, 240)] and profile.planned_s == 242
    assert "120 s of warm-up, then stages of 60 s" in profile.describe()


# --- JMeter's distributed mode: remote engines on this host ---------------------------------------------------

def test_each_engine_gets_its_share_of_the_load():
    closed = load.Profile(users=150)
    assert closed.per_engine(1) is closed
    assert closed.per_engine(3).users == 50
    with pytest.raises(ValueError, match="150 users per machine do not divide between 4 load generators"):
        closed.per_engine(4)
    opened = load.Profile(model="open", rate_per_s=50).per_engine(4)
    assert opened.rate_per_s == 12.5 and opened.users == 150
    steps = load.Profile(model="steps", step_rates=(10, 20), ramp_up_s=0).per_engine(2)
    assert steps.step_rates == (5, 10)


def engine_processes(run_id: str) -> list[str]:
    """Command lines of the processes that belong to a run's engines (its work folder is in them)."""
    found = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            text = cmdline.read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if f"{engines.WORK}/{run_id}/" in text:
            found.append(text)
    return found


def test_two_remote_engines_load_both_machines_and_the_controller_writes_the_jtls(app, tmp_path):
    run_id = f"test-{tmp_path.parent.name}-{tmp_path.name}"   # unique: pytest-N per session
    pair = [engines.Engine("gen1", "127.0.0.1", port=free_port(), object_port=free_port()),
            engines.Engine("gen2", "127.0.0.1", port=free_port(), object_port=free_port())]
    lines: list[str] = []
    with engines.Engines(run_id, tmp_path, pair, lambda e: engines.Remote.local(), controller_address="127.0.0.1",
                         log=lines.append) as started:
        assert all(e.pid for e in pair) and len(engine_processes(run_id)) == 2
        props = (Path(engines.WORK) / run_id / "rmi.properties").read_text()
        assert (Path(engines.WORK) / run_id).stat().st_mode & 0o777 == 0o700       # the two generators took it too
        assert "server.rmi.ssl.disable=false" in props and "server.rmi.ssl.keystore.password=" in props
        profile = load.Profile(users=4, ramp_up_s=1, duration_s=6)
        result = load.run(tmp_path, {"default": app, "tuned": app}, profile, progress=lines.append, engines=started)
        password = re.search(r"keystore\.password=(\S+)", props).group(1)
        assert password not in " ".join(result.command)       # in a 0600 file, not on a command line
    assert engine_processes(run_id) == [] and not (Path(engines.WORK) / run_id).exists()
    assert "Starting distributed test" in (tmp_path / "jmeter.out").read_text()
    for machine in load.MACHINES:
        samples = rows(tmp_path / machine / "jmeter.jtl")
        assert samples and all(s["success"] == "true" for s in samples), machine
        # each engine ran its share: 2 of the 4 users of each machine
        by_engine = collections.Counter(s["threadName"].split("-")[0] for s in samples)
        assert set(by_engine) == {e.endpoint for e in pair}, by_engine
        assert max(int(s["grpThreads"]) for s in samples) == 2
    assert [e["name"] for e in result.engines] == ["gen1", "gen2"] and result.test_start_ms
    for engine in pair:
        assert "Bound to RMI registry" in (tmp_path / "loadgen" / engine.name / "jmeter-server.log").read_text()


def test_a_generator_without_java_is_named_and_nothing_is_left_running(tmp_path):
    run_id = f"test-{tmp_path.parent.name}-{tmp_path.name}"   # unique: pytest-N per session
    pair = [engines.Engine("gen1", "127.0.0.1", port=free_port(), object_port=free_port()),
            engines.Engine("nojava", "127.0.0.1", port=free_port(), object_port=free_port())]
    # nojava: a login whose PATH has no java (nor anything else but a shell's builtins)
    bare = engines.Remote(lambda script: ["env", "PATH=/nonexistent", "/bin/bash", "-c", script])
    with pytest.raises(engines.EngineError, match=r"load generator nojava \(127.0.0.1\) has no `java`"):
        with engines.Engines(run_id, tmp_path, pair, lambda e: bare if e.name == "nojava" else engines.Remote.local(),
                             "127.0.0.1", log=lambda _: None):
            pytest.fail("the engines must not start")
    assert engine_processes(run_id) == [] and not (Path(engines.WORK) / run_id).exists()


def test_an_engine_that_cannot_start_is_named_with_its_last_words(tmp_path):
    run_id = f"test-{tmp_path.parent.name}-{tmp_path.name}"   # unique: pytest-N per session
    taken = socket.socket()
    taken.bind(("127.0.0.1", 0))
    taken.listen()
    try:    # its registry port is taken: JMeter's server cannot serve
        pair = [engines.Engine("gen1", "127.0.0.1", port=taken.getsockname()[1], object_port=free_port())]
        with pytest.raises(engines.EngineError, match="load generator gen1 .*: its JMeter engine could not open its "
                                                      "RMI registry on port .*; its console"):
            with engines.Engines(run_id, tmp_path, pair, lambda e: engines.Remote.local(), "127.0.0.1",
                                 log=lambda _: None):
                pytest.fail("the engine must not be ready")
    finally:
        taken.close()
    assert engine_processes(run_id) == [] and not (Path(engines.WORK) / run_id).exists()
    assert (tmp_path / "loadgen" / "gen1" / "engine.out").exists()


def test_until_settled_ends_the_hold_once_both_machines_settled(app, tmp_path):
    """--until-settled 60s with a 10-minute cap: the load ends after about a minute and a half of steady state
    (the report's rule needs a minute at least), by JMeter's own Shutdown, with whole JTLs and where each settled."""
    lines: list[str] = []
    began = time.monotonic()
    result = load.run(tmp_path / "run", {"default": app, "tuned": app},
                      load.Profile(users=2, ramp_up_s=2, duration_s=600), progress=lines.append, until_settled_s=60)
    took = time.monotonic() - began
    assert result.ended_by == "settled" and not result.interrupted, "\n".join(lines)
    assert took < 300, f"{took:.0f} s: the cap (600 s) was not what ended it"
    assert set(result.settled["at_s"]) == set(load.MACHINES) and min(result.settled["steady_s"].values()) >= 60
    assert any("both machines settled" in line and "the hold ends here" in line for line in lines)
    for machine in load.MACHINES:
        text = (tmp_path / "run" / machine / "jmeter.jtl").read_text()
        assert text.startswith(HEADER + "\n") and text.endswith("\n") and result.samples[machine] > 0


def test_a_race_ends_the_hold_once_decided(app, tmp_path):
    """A tune's search run (lab/experiment/tune/race.py) against a bar it cannot reach (the twins equal, the bar 2×):
    the load ends once both machines settled with a minute of steady state, by JMeter's own Shutdown, and says why."""
    from lab.experiment.tune import race
    lines: list[str] = []
    began = time.monotonic()
    result = load.run(tmp_path / "run", {"default": app, "tuned": app},
                      load.Profile(users=2, ramp_up_s=2, duration_s=600), progress=lines.append,
                      race=race.Race(bar=2.0, tau=0.05))
    assert result.ended_by == "raced" and not result.interrupted, "\n".join(lines)
    assert time.monotonic() - began < 300, "the cap (600 s) was not what ended it"
    assert result.race["ended"].startswith("cannot beat 2.000×"), result.race
    assert any("the hold ends here (a tune's race)" in line for line in lines)
