"""The JVM's CPU per successful request as a paired verdict figure (issue 55: on a host whose load generator paces
both twins, a configuration's cost shows in CPU, not in requests served): PCP's samples spread over 1 s windows, the
block bootstrap's interval over blocks at least one sampling interval long, gates, series."""
import math

import numpy as np
import pytest

from report.history import gates
from report.read.pcp import Metrics
from report.stats.combine import combine
from report.stats.uncertainty import NO_CPU, analyse
from report.stats.windows import attach_cpu, by_successes, paired_windows

from .synthetic import as_trial, jvm_cpu, paired_samples

JAVA = "1234 /usr/bin/java -jar app.jar"
T0 = 1_795_000_000.0


def _metrics(times, utime, stime=None, instance=JAVA):
    """hotproc's JVM CPU as pmrep exports it: each value the mean rate (ms per s) since the sample before."""
    by = {}
    for metric, values in (("hotproc.psinfo.utime", utime), ("hotproc.psinfo.stime", stime)):
        values = np.zeros(len(times)) if values is None else np.asarray(values, dtype=float)
        by[metric] = (np.asarray(times, dtype=float), np.full(len(times), instance, dtype=object), values)
    by["hotproc.psinfo.rss"] = (np.asarray(times, dtype=float), np.full(len(times), instance, dtype=object),
                                np.full(len(times), 1000.0))
    return Metrics(by)


def test_the_jvms_cpu_is_spread_evenly_over_each_sampling_interval_and_missing_where_pcp_did_not_record():
    from report.stats.figures import jvm_cpu_windows
    times = T0 + np.arange(0, 41, 10.0)                      # a sample every 10 s, from T0 to T0 + 40
    metrics = _metrics(times, [0, 100, 300, 300, 500], stime=[0, 50, 50, 50, 50])
    cpu = jvm_cpu_windows(metrics, T0 + 5, 40)            # windows T0+5 … T0+45: the last 5 past the last sample
    assert cpu[:5] == pytest.approx([150.0] * 5)            # 150 ms per s from T0 to T0 + 10
    assert cpu[5:15] == pytest.approx([350.0] * 10)
    assert cpu[25:35] == pytest.approx([550.0] * 10)
    assert np.isnan(cpu[35:]).all()                          # after PCP's last sample: unknown, not 0
    assert np.nansum(cpu) == pytest.approx(150 * 5 + 350 * 20 + 550 * 10)
    # a gap in the samples is not averaged over
    gapped = jvm_cpu_windows(_metrics(T0 + np.array([0, 10, 40, 50, 60, 70.0]), [0, 100, 300, 500, 500, 500]),
                             T0, 70)
    assert np.isnan(gapped[10:40]).all() and gapped[:10] == pytest.approx([100.0] * 10)
    # no JVM among the processes, or PCP's samples over less than half the windows: none at all
    assert jvm_cpu_windows(_metrics(times, [0] * 5, instance="88 /usr/sbin/apache2"), T0, 40) is None
    assert jvm_cpu_windows(metrics, T0 + 30, 40) is None


def _run(seed, cpu_factor=1.0, seconds=240, effect=1.0):
    sides = paired_samples(seed, seconds=seconds, effect=effect)
    paired = paired_windows(sides, T0, T0 + seconds - 1)
    attach_cpu(paired, jvm_cpu(seed, sides, seconds, t0=T0, cpu_factor=cpu_factor), 30)
    return paired


def test_a_configuration_that_costs_half_again_as_much_cpu_per_request_is_shown_with_an_interval_that_holds_it():
    """Tuned serves as many requests (TPS 1.0) at 1.5× the CPU each: TPS cannot tell them apart, the CPU figure does;
    its blocks hold at least one of PCP's 30 s samples."""
    analysis = analyse(_run(7, cpu_factor=1.5), resamples=400)
    cpu = analysis.effects["cpu"]
    assert cpu.kind == "ratio" and cpu.has_interval and cpu.detectable
    assert cpu.low <= 1.5 <= cpu.high and cpu.low > 1.25
    assert cpu.tuned / cpu.default == pytest.approx(cpu.estimate)
    assert analysis.block("cpu") >= 30 and analysis.df("cpu") == analysis.paired.n // analysis.block("cpu") - 1
    assert not math.isnan(cpu.tuned_low) and cpu.tuned_low < cpu.tuned < cpu.tuned_high
    assert not analysis.effects["tps"].detectable


def test_without_the_jvms_cpu_on_both_machines_there_is_no_cpu_figure_and_the_rest_stands():
    paired = _run(8, cpu_factor=1.5)
    paired.sides["default"].cpu_ms = None
    analysis = analyse(paired, resamples=200)
    cpu = analysis.effects["cpu"]
    assert not cpu.has_interval and cpu.why_not == NO_CPU and "cpu" not in analysis.replicates["tuned"]
    assert analysis.effects["tps"].has_interval


def test_a_crossover_series_combines_the_cpu_figure_as_every_other():
    """Two trials, one per orientation (a run folder's sides are configurations, whichever machine ran them): the
    combined CPU ratio holds the configuration's 1.3."""
    trials = []
    for k in range(2):
        a = analyse(_run(20 + k, cpu_factor=1.3), resamples=300)
        trials.append(as_trial(f"t{k}", k == 1, a))
    cpu = combine(trials)["cpu"].effect
    assert cpu.has_interval and cpu.low <= 1.3 <= cpu.high and cpu.low > 1.1


def test_gates_read_the_cpu_per_request_as_a_change_or_a_level():
    assert gates.parse("cpu<=+5%") == gates.Gate("cpu<=+5%", "cpu", "<=", 5.0, "effect")
    assert gates.parse("cpu<=2ms") == gates.Gate("cpu<=2ms", "cpu", "<=", 2.0, "level")
    effects = {"cpu": {"kind": "ratio", "estimate": 1.02, "low": 0.97, "high": 1.08, "tuned": 1.8,
                       "tuned_ci": {"low": 1.7, "high": 2.1}}}
    assert not gates.judge(gates.parse("cpu<=+5%"), effects).passed      # +8 % not excluded
    assert gates.judge(gates.parse("cpu<=+10%"), effects).passed
    assert not gates.judge(gates.parse("cpu<=2ms"), effects).passed       # the level's upper bound 2.1 ms
    assert "tuned's cpu 1.8 ms (95 % CI 1.7 … 2.1 ms)" in gates.judge(gates.parse("cpu<=2ms"), effects).detail


def test_an_intervals_cpu_is_spread_over_its_windows_by_what_they_served():
    """Equal windows (one sampling interval) share their CPU by successes; an unrecorded window stays unknown."""
    cpu = np.array([10.0, 10.0, 10.0, 4.0, 7.0, 7.0, np.nan, np.nan])
    successes = np.array([1.0, 2.0, 3.0, 2.0, 0.0, 0.0, 5.0, 5.0])
    spread = by_successes(cpu, successes)
    assert spread[:3] == pytest.approx([5.0, 10.0, 15.0])          # 30 ms over 6 successes
    assert spread[3] == 4.0 and spread[4:6] == pytest.approx([7.0, 7.0])     # served none: by time
    assert np.isnan(spread[6:]).all()


def test_the_cpus_interval_takes_back_what_the_blocks_bartlett_weights_miss_of_a_sampling_interval():
    """Blocks of b windows see 1 − L/(3b) of the variance of a figure spread over sampling intervals of L windows."""
    from report.stats.blocks import sampling_inflation
    paired = _run(9)
    assert sampling_inflation(paired, 30) == pytest.approx(1 / math.sqrt(1 - 1 / 3))
    assert sampling_inflation(paired, 90) == pytest.approx(1 / math.sqrt(1 - 1 / 9))
    paired.cpu_step_s = 1.0                     # PCP sampled every window: nothing shared, nothing to take back
    assert sampling_inflation(paired, 30) == 1.0


def test_a_window_shorter_than_three_of_pcps_samples_gives_the_cpus_figure_without_an_interval():
    analysis = analyse(_run(10, cpu_factor=1.5, seconds=80), resamples=200)
    cpu = analysis.effects["cpu"]
    assert cpu.estimate > 1.2 and not cpu.has_interval
    assert cpu.why_not == "the paired window holds fewer than 3 of PCP's 30 s samples of the JVM's CPU"
