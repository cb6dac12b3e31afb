"""What the mock refuses and bounds (issue 53): numbers JSON and WireMock do not have (NaN, Infinity), delays beyond
an hour, distributions whose samples would overflow; and at request time nothing may leak the in-flight count."""
from __future__ import annotations

import json
import math
import random
from types import SimpleNamespace

import pytest

from mock_service import config, stub_files
from mock_service.app import App
from mock_service.latency import Behaviour, Distribution

HOUR_MS = 3_600_000     # latency.MAX_DELAY_MS, as the README documents it


def write_stub(folder, response: dict | str, name: str = "bad.json"):
    """mappings/<name> with one stub for /x; a str response is pasted as written (NaN and Infinity stay literal)."""
    (folder / "mappings").mkdir(parents=True, exist_ok=True)
    text = response if isinstance(response, str) else json.dumps(response)
    (folder / "mappings" / name).write_text('{"request": {"url": "/x"}, "response": ' + text + "}")
    return folder


def refusal(folder) -> str:
    with pytest.raises(stub_files.StubError) as refused:
        stub_files.load(folder)
    return str(refused.value)


# --- refused when the stubs load, naming the file, the stub and the field ------------------------------------

def test_a_file_nested_beyond_pythons_stack_is_refused_not_a_traceback(tmp_path):
    (tmp_path / "mappings").mkdir()
    (tmp_path / "mappings" / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    assert refusal(tmp_path) == "mappings/deep.json: nested too deeply to be a stub (JSON of thousands of levels)"


def test_a_lognormal_sigma_that_overflows_is_refused(tmp_path):
    """The issue's stub: exp(N(ln 10, 800²)) overflows a float for a fifth of the draws; WireMock's own answer
    would be a delay of Long.MAX_VALUE ms. Half the delays would be above the hour: refused, sigma named."""
    said = refusal(write_stub(tmp_path, {"delayDistribution": {"type": "lognormal", "median": 10, "sigma": 800}}))
    assert said.startswith("mappings/bad.json: response.delayDistribution.sigma: 800 puts 49."), said
    assert f"above {HOUR_MS} ms" in said and "maxValue" in said


@pytest.mark.parametrize(("response", "field", "literal"), [
    ('{"fixedDelayMilliseconds": Infinity}', "response.fixedDelayMilliseconds", "Infinity"),
    ('{"fixedDelayMilliseconds": NaN}', "response.fixedDelayMilliseconds", "NaN"),
    ('{"fixedDelayMilliseconds": 1e400}', "response.fixedDelayMilliseconds", "Infinity"),
    ('{"delayDistribution": {"type": "lognormal", "median": NaN, "sigma": 0.1}}',
     "response.delayDistribution.median", "NaN"),
    ('{"delayDistribution": {"type": "lognormal", "median": 80, "sigma": Infinity}}',
     "response.delayDistribution.sigma", "Infinity"),
    ('{"delayDistribution": {"type": "lognormal", "median": 80, "sigma": 0.1, "maxValue": Infinity}}',
     "response.delayDistribution.maxValue", "Infinity"),
    ('{"delayDistribution": {"type": "uniform", "lower": -Infinity, "upper": 5}}',
     "response.delayDistribution.lower", "-Infinity"),
    ('{"delayDistribution": {"type": "fixed", "milliseconds": Infinity}}',
     "response.delayDistribution.milliseconds", "Infinity"),
    ('{"jsonBody": {"items": [{"price": 1}, {"price": NaN}]}}', "response.jsonBody.items[1].price", "NaN"),
    ('{"headers": {"X-Rate": Infinity}}', "response.headers.X-Rate", "Infinity"),
])
def test_a_number_that_is_not_finite_is_refused_wherever_it_is(tmp_path, response, field, literal):
    said = refusal(write_stub(tmp_path, response))
    assert said.startswith(f"mappings/bad.json: {field}: {literal} is not a finite number"), said


def test_the_stub_of_a_file_of_several_is_named(tmp_path):
    (tmp_path / "mappings").mkdir()
    (tmp_path / "mappings" / "many.json").write_text(
        '{"mappings": [{"request": {"url": "/a"}, "response": {"fixedDelayMilliseconds": 5}},'
        ' {"request": {"url": "/b"}, "response": {"fixedDelayMilliseconds": Infinity}}]}')
    assert refusal(tmp_path).startswith("mappings/many.json#1: response.fixedDelayMilliseconds: Infinity is not")


@pytest.mark.parametrize(("response", "field", "got"), [
    ({"fixedDelayMilliseconds": HOUR_MS + 1}, "response.fixedDelayMilliseconds", str(HOUR_MS + 1)),
    ({"fixedDelayMilliseconds": 10 ** 400}, "response.fixedDelayMilliseconds", "1000"),  # beyond any float
    ({"fixedDelayMilliseconds": -1}, "response.fixedDelayMilliseconds", "-1"),
    ({"delayDistribution": {"type": "uniform", "lower": 0, "upper": 1e9}}, "response.delayDistribution.upper",
     "1000000000.0"),
    ({"delayDistribution": {"type": "fixed", "milliseconds": 4e6}}, "response.delayDistribution.milliseconds",
     "4000000.0"),
    ({"delayDistribution": {"type": "lognormal", "median": 5e6, "sigma": 0.1}}, "response.delayDistribution.median",
     "5000000.0"),
    ({"delayDistribution": {"type": "lognormal", "median": 80, "sigma": 0.1, "maxValue": 1e7}},
     "response.delayDistribution.maxValue", "10000000.0"),
    ({"delayDistribution": {"type": "lognormal", "median": 80, "sigma": 10 ** 400}},
     "response.delayDistribution.sigma", "1000"),
])
def test_a_delay_beyond_the_hour_or_below_zero_is_refused(tmp_path, response, field, got):
    said = refusal(write_stub(tmp_path, response))
    assert said.startswith(f"mappings/bad.json: {field}: must be a "), said
    assert f", got {got}" in said


def test_a_refused_stub_starts_nothing(tmp_path):
    """The stubs load whole or not at all, before the mock listens (there is no reload and no admin API)."""
    write_stub(tmp_path, {"status": 200}, name="a-good.json")
    write_stub(tmp_path, '{"fixedDelayMilliseconds": Infinity}')
    settings = config.parse(["--stubs", str(tmp_path), "--builtin", "off"], environ={})
    with pytest.raises(stub_files.StubError, match="mappings/bad.json: response.fixedDelayMilliseconds"):
        App(settings, "asyncio")


def test_a_wide_lognormal_capped_by_max_value_is_served_within_it(tmp_path):
    """WireMock's capped lognormal: a wide sigma is a spike at maxValue, not an overflow."""
    stub = stub_files.load(write_stub(tmp_path, {"delayDistribution": {
        "type": "lognormal", "median": 10, "sigma": 800, "maxValue": 2000}})).stubs[0]
    b = Behaviour(SimpleNamespace(seed=7, endpoint_latency=(), latency=config.parse_distribution("fixed:0"),
                                  latency_cap=30000.0, slow_probability=0.0, slow_delay=0.0, error_rate=0.0))
    delays = [b.stub_delay_s(stub) for _ in range(2000)]
    assert max(delays) == 2.0 and min(delays) >= 0


# --- the same bounds on the command line ---------------------------------------------------------------------

@pytest.mark.parametrize(("argv", "said"), [
    (["--latency", "lognormal:10,800"], "--latency: 'lognormal:10,800': 49."),
    (["--latency", "pareto:10,0.1"], "--latency: 'pareto:10,0.1': 27.8% of its samples would be above"),
    (["--latency", f"fixed:{HOUR_MS + 1}"], f"{HOUR_MS} ms (1 h) is the longest delay"),
    (["--latency", "uniform:0,4000000"], f"{HOUR_MS} ms (1 h) is the longest delay"),
    (["--endpoint-latency", "orders=lognormal:5000000,0.1"], "--endpoint-latency: 'lognormal:5000000,0.1': "),
])
def test_a_latency_beyond_the_hour_is_refused_on_the_command_line(argv, said):
    with pytest.raises(config.ConfigError) as refused:
        config.parse(argv, environ={})
    assert said in str(refused.value), str(refused.value)


def test_a_heavy_tail_under_the_cap_stays_allowed():
    """README: a pareto with ALPHA <= 1 is meant to be cut by --latency-cap; pareto:10,0.3 puts 2 % above the hour."""
    assert str(config.parse(["--latency", "pareto:10,0.3"], environ={}).latency) == "pareto:10,0.3"


# --- at request time ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("dist", [Distribution("lognormal", (10.0, 800.0)), Distribution("pareto", (10.0, 0.001)),
                                  Distribution("lognormal", (1e-300, 1e300)), Distribution("pareto", (1e-320, 0.01))])
def test_a_sample_never_overflows_and_stays_within_the_hour(dist):
    """Distributions the parsers refuse, sampled anyway: random's lognormvariate and paretovariate raise
    OverflowError on these; the mock's sampler bounds them in log space."""
    rng = random.Random(3)
    samples = [dist.sample_ms(rng) for _ in range(5000)]
    assert all(math.isfinite(s) and 0 <= s <= HOUR_MS for s in samples)
    assert max(samples) == HOUR_MS


@pytest.mark.parametrize("dist", [Distribution("lognormal", (10.0, 0.5)), Distribution("pareto", (5.0, 2.0)),
                                  Distribution("pareto", (10.0, 0.3))])
def test_the_bounded_sampler_draws_what_random_draws(dist):
    """The same seed gives the same delays as before the bound: below the hour, the very numbers of random's own."""
    ours, theirs = random.Random(5), random.Random(5)
    draw = theirs.lognormvariate if dist.kind == "lognormal" else theirs.paretovariate
    for _ in range(2000):
        if dist.kind == "lognormal":
            expected = draw(math.log(dist.params[0]), dist.params[1])
        else:
            expected = dist.params[0] * draw(dist.params[1])
        assert dist.sample_ms(ours) == min(expected, HOUR_MS)


def test_an_error_before_the_answer_is_a_500_and_leaves_the_in_flight_count(tmp_path, start_server, monkeypatch):
    """Whatever raises between counting a request in flight and handing its answer to the timer: a 500 at once,
    the count back down (with --max-concurrent 1 a leaked count would refuse every later request with 503)."""
    write_stub(tmp_path, {"status": 200, "body": "stubbed"}, name="ok.json")
    server = start_server("--stubs", str(tmp_path), "--max-concurrent", "1", "--customers", "5")

    def broken(*args):
        raise OverflowError("math range error")
    monkeypatch.setattr(Behaviour, "stub_delay_s", broken)
    monkeypatch.setattr(Behaviour, "delay_s", broken)
    assert server.get("/x").status == 500
    assert server.get("/customers/1").status == 500
    assert server.metrics()["mock_http_requests_in_flight"] == 0
    monkeypatch.undo()
    assert server.get("/x").body == b"stubbed"
    assert server.get("/customers/1").status == 200
