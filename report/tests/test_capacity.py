"""The capacity search's rule on synthetic stages: a machine that keeps up to 30 req/s and then falls behind,
one that holds every stage, and one whose p99 breaks the target first."""
import json

import numpy as np

from report.read.jtl import Samples
from report.read.runinfo import RunInfo
from report.render import capacity as capacity_doc
from report.stats import capacity

T0 = 1_800_000_000.0
STEP = 60


def stage_samples(per_stage, seed=1):
    """per_stage: [(rate served, error fraction, latency ms)] → Samples over consecutive STEP-second stages."""
    rng = np.random.default_rng(seed)
    start, elapsed, ok = [], [], []
    for k, (rate, errors, latency) in enumerate(per_stage):
        n = int(rate * STEP)
        t = np.sort(rng.uniform(T0 + k * STEP, T0 + (k + 1) * STEP, n))
        start += list(t)
        elapsed += list(rng.normal(latency, latency * 0.05, n).clip(1))
        ok += list(rng.uniform(size=n) >= errors)
    n = len(start)
    return Samples(start=np.asarray(start), elapsed_ms=np.asarray(elapsed), ok=np.asarray(ok, dtype=bool),
                   label=np.asarray(["get"] * n, dtype=object), error=np.asarray([""] * n, dtype=object), bad_rows=0)


def stages(rates=(10, 20, 30, 40)):
    return [(float(r), T0 + k * STEP, T0 + (k + 1) * STEP) for k, r in enumerate(rates)]


def test_the_capacity_is_the_last_stage_of_the_unbroken_run():
    falls = stage_samples([(10, 0, 200), (20, 0, 300), (30, 0.0005, 600), (26, 0.05, 9000)])
    judged = capacity.judge(falls, stages(), target_ms=2000)
    assert [s.sustained for s in judged] == [True, True, True, False]
    assert "errors" in judged[3].why and "p99" in judged[3].why and "served" in judged[3].why
    assert capacity.capacity(judged) == 30


def test_p99_over_the_target_ends_the_run_even_if_a_later_stage_passes():
    slow = stage_samples([(10, 0, 200), (20, 0, 2600), (30, 0, 300), (40, 0, 300)])
    judged = capacity.judge(slow, stages(), target_ms=2000)
    assert [s.sustained for s in judged] == [True, False, True, True]
    assert capacity.capacity(judged) == 10          # the later pass is a recovery, not capacity


def test_the_section_names_both_capacities_and_their_ratio(tmp_path):
    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "run.json").write_text(json.dumps({"run_id": "run", "status": "complete", "load": {
        "model": "steps", "step_rates": [10, 20, 30, 40], "step_s": STEP, "p99_target_ms": 2000,
        "test_start_ms": int(T0 * 1000)}}))
    run = RunInfo(folder)

    class M:
        def __init__(self, name, samples):
            self.name, self.samples = name, samples
    machines = {"default": M("default", stage_samples([(10, 0, 200), (20, 0, 300), (12, 0.2, 9000), (8, 0.5, 9000)])),
                "tuned": M("tuned", stage_samples([(10, 0, 200), (20, 0, 250), (30, 0, 300), (40, 0, 400)], seed=2))}
    text = "\n".join(capacity_doc.lines(run, machines))
    assert "default sustains 20 req/s; tuned sustains 40 req/s** — tuned sustains 2.00× the rate of default" in text
    assert "tuned sustained the last stage (40 req/s): its capacity is at least that" in text
    assert text.count("\n| ") == 6          # header, separator, four stages
    figure, png = capacity_doc.chart(run, machines)
    assert figure.key == "capacity" and png[:4] == b"\x89PNG"


def test_the_stages_start_after_the_warm_up():
    """A run with a warm-up at the first rate (load.ramp_up_s): the judged stages begin after it; a run from
    before the warm-up existed (no ramp_up_s) keeps its stages from the test's start."""
    class Run:
        def __init__(self, load):
            self.load = load
    base = {"model": "steps", "step_rates": [10, 20], "step_s": 60, "test_start_ms": 1_000_000}
    assert capacity.plan(Run({**base, "ramp_up_s": 120})) == [(10.0, 1120.0, 1180.0), (20.0, 1180.0, 1240.0)]
    assert capacity.plan(Run(base)) == [(10.0, 1000.0, 1060.0), (20.0, 1060.0, 1120.0)]
