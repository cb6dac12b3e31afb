"""The stopped-answering rule on synthetic JTLs (report/stats/stopped.py, README 'Stopped answering')."""
import pytest

from report.read.jtl import read_jtl
from report.stats.stopped import find_stop

from .jtlgen import T0_MS, write_jtl

T0 = T0_MS / 1000


def stop_of(tmp_path, plan, **kw):
    return find_stop(read_jtl(write_jtl(tmp_path / "run.jtl", plan, **kw)))


def test_a_machine_that_answers_throughout_has_no_stop(tmp_path):
    assert stop_of(tmp_path, [(0, 200, "ok")]) is None


def test_stop_midway_is_the_end_of_the_last_successful_response(tmp_path):
    stop = stop_of(tmp_path, [(0, 100, "ok"), (100, 200, "timeout")])
    # last success: second 99, 5th sample (ts +800 ms), 20 ms long
    assert stop.at == pytest.approx(T0 + 99.8 + 0.020, abs=1e-3)
    assert stop.attempts == 500 and stop.successes == 0 and stop.ever_answered
    assert stop.errors.most_common(1)[0] == ("java.net.SocketTimeoutException: Read timed out", 500)


def test_stop_inside_a_bucket_still_gives_the_exact_time(tmp_path):
    stop = stop_of(tmp_path, [(0, 104, "ok"), (104, 200, "timeout")])
    assert stop.at == pytest.approx(T0 + 103.8 + 0.020, abs=1e-3)
    assert stop.silent_from == pytest.approx(T0 + 110, abs=1e-3)  # bucket 100-110 still had successes


def test_silence_shorter_than_30_s_at_the_end_is_not_a_stop(tmp_path):
    # 20 s of timeouts (+5 s of the last timeout) < 30 s
    assert stop_of(tmp_path, [(0, 180, "ok"), (180, 200, "timeout")]) is None


def test_too_few_attempts_are_not_a_stop(tmp_path):
    # one request per second for 15 s: the stretch lasts ~20 s with the timeouts, and < 20 attempts
    assert stop_of(tmp_path, [(0, 100, "ok"), (100, 115, "timeout")], per_second=1) is None


def test_sporadic_successes_under_5_percent_still_count_as_stopped(tmp_path):
    stop = stop_of(tmp_path, [(0, 100, "ok"), (100, 200, 0.03)])
    assert stop is not None
    assert 0 < stop.successes < 0.05 * stop.attempts


def test_successes_over_5_percent_are_not_a_stop(tmp_path):
    assert stop_of(tmp_path, [(0, 100, "ok"), (100, 200, 0.10)]) is None


def test_a_machine_that_recovers_before_the_end_has_no_stop(tmp_path):
    assert stop_of(tmp_path, [(0, 60, "ok"), (60, 150, "timeout"), (150, 200, "ok")]) is None


def test_a_machine_that_never_answered_stopped_at_its_first_sample(tmp_path):
    stop = stop_of(tmp_path, [(0, 100, "timeout")])
    assert stop.at == pytest.approx(T0, abs=1e-3)
    assert stop.successes == 0 and not stop.ever_answered


def test_empty_buckets_after_the_stop_count_as_silent(tmp_path):
    # requests stop being sent at all (e.g. all threads stuck) after a few timeouts
    stop = stop_of(tmp_path, [(0, 100, "ok"), (100, 106, "timeout"), (140, 141, "timeout")])
    assert stop is not None and stop.at == pytest.approx(T0 + 99.8 + 0.020, abs=1e-3)
