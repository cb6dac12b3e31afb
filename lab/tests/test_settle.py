"""--until-settled (lab/experiment/load/settle.py): the hold ends once both machines settled by the report's own rule
with the steady window asked for, judged on the JTLs as JMeter writes them; refused where it cannot mean anything."""
from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from lab.experiment import core_swap, load, options
from lab.experiment.load import settle
from lab.experiment.load.jtl import JTL_COLUMNS, JtlTail
from report.read.jtl import read_jtl
from report.stats.steady import find_steady

T0_MS = 1_796_000_000_000


def write_jtl(path: Path, rate_of, seconds: int, append: bool = False) -> None:
    """One JTL row per request: rate_of(second) successful requests started in each second from T0."""
    path.parent.mkdir(parents=True, exist_ok=True)
    begin = 0
    if append:
        begin = int(path.read_text().strip().splitlines()[-1].split(",")[0]) // 1000 - T0_MS // 1000 + 1
    with open(path, "a" if append else "w") as f:
        if not append:
            f.write(",".join(JTL_COLUMNS) + "\n")
        for second in range(begin, begin + seconds):
            n = rate_of(second)
            for i in range(n):
                f.write(f"{T0_MS + second * 1000 + i * 1000 // max(n, 1)},5,GET /x,200,OK,t 1-1,text,true,,10,10,"
                        "1,1,http://127.0.0.1/x,5,0,1\n")


def warming(second: int) -> int:
    """A JVM still compiling for its first 120 s: 5 → 20 req/s, then flat."""
    return 20 if second >= 120 else 5 + second * 15 // 120


def test_the_load_ends_once_both_machines_settled_for_the_window(tmp_path):
    jtls = {"default": tmp_path / "default.jtl", "tuned": tmp_path / "tuned.jtl"}
    write_jtl(jtls["default"], warming, 150)
    write_jtl(jtls["tuned"], lambda s: 20, 150)
    tails = {m: JtlTail(p, keep_starts=True) for m, p in jtls.items()}
    assert settle.settled(tails, 120) is None, "default is still warming up: the hold goes on"
    write_jtl(jtls["default"], warming, 330, append=True)
    write_jtl(jtls["tuned"], lambda s: 20, 330, append=True)
    done = settle.settled(tails, 120)
    assert done is not None and min(done.steady_s.values()) >= 120
    assert done.at_s["tuned"] == 0 and 60 <= done.at_s["default"] <= 130, done
    assert "both machines settled (default at" in done.said()
    for machine, path in jtls.items():     # the report judges the run it leaves where the load saw it settle
        samples = read_jtl(path)
        report = find_steady(SimpleNamespace(samples=samples, stop=None, t0=samples.start[0], window=None))
        assert report.settled and report.start_s == done.at_s[machine], machine


def test_a_machine_that_never_settles_runs_to_the_cap(tmp_path):
    jtls = {"default": tmp_path / "default.jtl", "tuned": tmp_path / "tuned.jtl"}
    write_jtl(jtls["default"], lambda s: 2 + s // 10, 600)      # rising throughout
    write_jtl(jtls["tuned"], lambda s: 20, 600)
    assert settle.settled({m: JtlTail(p, keep_starts=True) for m, p in jtls.items()}, 60) is None


@pytest.mark.parametrize(("window", "profile", "said"), [
    (30, load.Profile(duration_s=600), "at least 60 s"),
    (600, load.Profile(duration_s=600), "shorter than the hold (600 s)"),
    (120, load.Profile(model="open", duration_s=600), "the open model's throughput is its arrival schedule's"),
])
def test_a_window_it_cannot_keep_is_refused_naming_why(window, profile, said):
    with pytest.raises(ValueError, match=said.replace("(", r"\(").replace(")", r"\)")):
        options.checked(profile=profile, until_settled_s=window)


def test_the_cores_stay_fixed_when_the_windows_end_is_not_known():
    got = core_swap.plan("swap", {"default": "0", "tuned": "1"}, load.Profile(duration_s=600), 30, 120)
    assert got["mode"] == "fixed" and got["why"].startswith("--until-settled")


def test_the_rule_is_the_reports():
    """One rule, defined once: a flat run settles at its first bin, a run rising throughout never does."""
    from report.stats.steady import settled_bin
    assert settled_bin(np.full(30, 20.0)) == 0 and settled_bin(np.arange(1.0, 31.0)) is None


def compiling_until(seconds: float, cpus: float = 1.0, every_s: float = 10.0, end_s: float = 330.0):
    """A JIT read every every_s from T0: compiling at `cpus` until `seconds`, then quiet (epoch s, compiling s)."""
    times = np.arange(0.0, end_s + every_s, every_s)
    return list(T0_MS / 1000 + times), list(np.minimum(times, seconds) * cpus)


def test_a_flat_throughput_is_not_settled_while_its_jit_compiles(tmp_path):
    """The petclinic default: flat TPS from the start, its C2 at a CPU for 200 s (20261202T022034Z-s74-…)."""
    jtls = {"default": tmp_path / "default.jtl", "tuned": tmp_path / "tuned.jtl"}
    for path in jtls.values():
        write_jtl(path, lambda s: 20, 300)
    tails = {m: JtlTail(p, keep_starts=True) for m, p in jtls.items()}
    jit = {"default": compiling_until(200, end_s=300), "tuned": compiling_until(0, end_s=300)}
    assert settle.settled(tails, 120, {}) is not None, "by its throughput alone it had settled"
    assert settle.settled(tails, 120, jit) is None, "only 100 s since the JIT went quiet: the hold goes on"
    for path in jtls.values():
        write_jtl(path, lambda s: 20, 30, append=True)
    done = settle.settled(tails, 120, {"default": compiling_until(200), "tuned": compiling_until(0)})
    assert done is not None and done.at_s == {"default": 200.0, "tuned": 0.0}, done
    assert done.quiet_s == {"default": 200.0, "tuned": 0.0} and "its JIT quiet from 200 s" in done.said()
    assert settle.settled(tails, 120, {"tuned": compiling_until(0)}).quiet_s["default"] is None, \
        "a JIT not read: judged by its throughput alone, and said"
    # the report, given the same JIT as PCP logs it (a rate per sampling interval), starts the steady state there
    from report.read.pcp import Metrics
    from report.stats.steady import JIT_METRIC
    times, compiled = compiling_until(200)
    rate_ms = np.concatenate([[0.0], np.diff(compiled) / np.diff(times) * 1000])
    samples = read_jtl(jtls["default"])
    metrics = Metrics({JIT_METRIC: (np.asarray(times), np.array(["c2"] * len(times), dtype=object), rate_ms)})
    report = find_steady(SimpleNamespace(samples=samples, stop=None, t0=samples.start[0], window=None, metrics=metrics))
    assert report.settled and report.start_s == 200.0 == report.quiet_s, report


def test_a_jit_that_never_goes_quiet_never_settles(tmp_path):
    jtls = {"default": tmp_path / "default.jtl", "tuned": tmp_path / "tuned.jtl"}
    for path in jtls.values():
        write_jtl(path, lambda s: 20, 600)
    tails = {m: JtlTail(p, keep_starts=True) for m, p in jtls.items()}
    jit = {"default": compiling_until(600, cpus=0.2, end_s=600), "tuned": compiling_until(0, end_s=600)}
    assert settle.settled(tails, 60, jit) is None
