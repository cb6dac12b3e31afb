"""The steady-state rule (report/stats/steady.py) on synthetic JTLs: flat, warming up then flat, still climbing,
stopped."""
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
