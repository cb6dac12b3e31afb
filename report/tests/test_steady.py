"""The steady-state rule (report/stats/steady.py) on synthetic JTLs: flat, warming up then flat, still climbing,
stopped."""
import math

import numpy as np
import pytest

from report.read.jtl import read_jtl
from report.stats.figures import Window
from report.stats.machine import Machine
from report.stats.steady import find_steady
from report.stats.stopped import find_stop

from .jtlgen import write_jtl


def machine_from(tmp_path, plan, per_second=5):
    samples = read_jtl(write_jtl(tmp_path / "m.jtl", plan, per_second=per_second))
    m = Machine("tuned", samples=samples, window=Window(t0=samples.start[0], warmup_s=30, end=samples.start[-1]))
    m.stop = find_stop(samples)
    return m


def ramp(seconds, start_share, end_share, step=10):
    """Success share rising linearly from start_share to end_share over the seconds, in 10 s pieces."""
    pieces = []
    for k in range(0, seconds, step):
        share = start_share + (end_share - start_share) * k / max(1, seconds - step)
        pieces.append((k, k + step, share))
    return pieces


def test_a_flat_run_is_steady_from_the_start(tmp_path):
    steady = find_steady(machine_from(tmp_path, [(0, 300, "ok")]))
    assert steady.settled and steady.start_s == 0 and abs(steady.drift) < 0.01


def test_a_warm_up_then_flat_settles_after_the_warm_up(tmp_path):
    # successes climb from 20 % to 100 % over 120 s, then stay
    plan = ramp(120, 0.2, 1.0) + [(120, 420, "ok")]
    steady = find_steady(machine_from(tmp_path, plan))
    assert steady.settled and 60 <= steady.start_s <= 130, steady


def test_a_run_still_climbing_never_settles_and_says_by_how_much(tmp_path):
    steady = find_steady(machine_from(tmp_path, ramp(300, 0.3, 1.0)))
    assert not steady.settled and not steady.why
    assert steady.drift > 0.5          # well over +50 % across the measured window


def test_a_machine_that_stopped_is_not_judged(tmp_path):
    steady = find_steady(machine_from(tmp_path, [(0, 100, "ok"), (100, 200, "timeout")]))
    assert not steady.settled and steady.why == "it stopped answering"


@pytest.mark.parametrize("seconds", [30, 50])
def test_too_short_a_run_is_not_judged(tmp_path, seconds):
    assert "shorter" in find_steady(machine_from(tmp_path, [(0, seconds, "ok")])).why


def test_warmup_auto_starts_the_figures_where_both_settled(tmp_path):
    from .conftest import run_report
    folder = tmp_path / "run"
    for name in ("default", "tuned"):
        (folder / name).mkdir(parents=True)
        write_jtl(folder / name / "jmeter.jtl", ramp(120, 0.2, 1.0) + [(120, 420, "ok")])
    done = run_report(folder, "--warmup", "auto")
    assert done.returncode == 0, done.stderr
    summary = (folder / "summary.md").read_text()
    assert "--warmup auto: where the later machine's throughput settled" in summary
    assert "Figures exclude the first 30 s" not in summary
    bad = run_report(folder, "--warmup", "soon")
    assert bad.returncode == 2 and "seconds (≥ 0) or auto" in bad.stderr


def with_jit(machine, compiling_until_s, cpus=1.0, every_s=20.0):
    """PCP's record of the JIT (rate-converted: ms of compiling per s, each over the interval before it)."""
    from report.read.pcp import Metrics
    from report.stats.steady import JIT_METRIC
    times = machine.t0 + np.arange(0.0, machine.samples.start[-1] - machine.t0 + every_s, every_s)
    rate = np.where(times - machine.t0 <= compiling_until_s, cpus * 1000.0, 0.0)
    rate[0] = 0.0
    machine.metrics = Metrics({JIT_METRIC: (times, np.array(["c2"] * len(times), dtype=object), rate)})
    return machine


def test_a_flat_throughput_settles_only_where_the_jit_went_quiet(tmp_path):
    machine = machine_from(tmp_path, [(0, 600, "ok")])
    assert find_steady(machine).start_s == 0
    steady = find_steady(with_jit(machine, 200))
    # a CPU compiling until +200 s of 600: from +180 s the rest holds 20 s of it in 420 s, within QUIET_CPU (0.05)
    assert steady.settled and steady.start_s == steady.quiet_s == 180, steady


def test_a_jit_compiling_to_the_end_leaves_no_steady_state_and_says_why(tmp_path):
    from report.render.steady import steady_lines
    steady = find_steady(with_jit(machine_from(tmp_path, [(0, 600, "ok")]), 600, cpus=0.3))
    assert not steady.settled and steady.compiling and math.isnan(steady.quiet_s)
    m = machine_from(tmp_path, [(0, 600, "ok")])
    m.steady = steady
    assert "never settled: its throughput did, but its JIT went quiet at no point" in steady_lines({"tuned": m})[0]


def test_a_load_ended_once_settled_is_measured_from_its_steady_state(tmp_path):
    """--until-settled waited for the steady state: the run's own report measures it, and says why."""
    import json

    from .conftest import run_report
    folder = tmp_path / "run"
    for name in ("default", "tuned"):
        (folder / name).mkdir(parents=True)
        write_jtl(folder / name / "jmeter.jtl", ramp(120, 0.2, 1.0) + [(120, 420, "ok")])
    (folder / "run.json").write_text(json.dumps({"run_id": "r", "status": "complete", "load": {
        "warmup_s": 30, "until_settled_s": 120, "settled": {"at_s": {"default": 120, "tuned": 120}}}}))
    done = run_report(folder)
    assert done.returncode == 0, done.stderr
    summary = (folder / "summary.md").read_text()
    assert "--until-settled ended the load: where the later machine's throughput settled" in summary
    assert "Figures exclude the first 30 s" not in summary


def test_a_run_without_jmeters_dashboards_says_why_on_its_page():
    from types import SimpleNamespace

    from report.render.html import render_html
    chart = [(SimpleNamespace(key="tps", title="TPS", about="a"), b"png")]
    page = render_html("r", "# r", chart, {}, no_dashboards="not made (a tune's search run)")
    assert "JMeter's own dashboards: not made (a tune&#x27;s search run)" in page
    assert "JMeter's own dashboards" not in render_html("r", "# r", chart, {})
