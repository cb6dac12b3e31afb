"""The capacity search (load model `steps`): per machine, each stage's offered rate against what was served, its
errors and p99, and the highest stage sustained.

A stage is judged on the samples that started in it, after its first SETTLE_S seconds (JMeter catches up the
arrivals it owes at a change of rate, and queues adjust). It is sustained when errors ≤ MAX_ERROR_PCT, p99 (all
samples, failures included: a timeout is latency too) ≤ the run's p99 target, and the successful rate ≥ MIN_SERVED
of the offered one. A machine's capacity is the highest stage of the unbroken run of sustained stages from the
first: a stage that passes after one that failed is a machine recovering, not capacity. The summary's section and
the chart: report/render/capacity.py.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from report.read.jtl import Samples

SETTLE_S = 10.0
MAX_ERROR_PCT = 0.1
MIN_SERVED = 0.9


@dataclass
class Stage:
    rate: float
    start: float        # epoch seconds, judged from start + SETTLE_S
    end: float
    samples: int = 0
    ok_per_s: float = float("nan")
    error_pct: float = float("nan")
    p99_ms: float = float("nan")
    sustained: bool = False
    why: str = ""


class HasLoad(Protocol):
    @property
    def load(self) -> dict[str, Any]: ...


StagePlan = tuple[float, float, float]
"""(offered rate, start epoch, end epoch)"""


def plan(run: HasLoad) -> list[StagePlan]:
    """[(rate, start epoch, end epoch)] of a steps run, or [] (another model, or JMeter never started)."""
    load = run.load or {}
    if load.get("model") != "steps" or not load.get("test_start_ms") or not load.get("step_rates"):
        return []
    # the stages start after the warm-up at the first rate (ramp_up_s; 0 in runs made before it existed)
    t0 = load["test_start_ms"] / 1000.0 + float(load.get("ramp_up_s") or 0)
    step = float(load.get("step_s", 0))
    return [(float(r), t0 + k * step, t0 + (k + 1) * step) for k, r in enumerate(load["step_rates"])]


def judge(samples: Samples | None, stages: list[StagePlan], target_ms: float) -> list[Stage]:
    """Each stage's figures and whether it was sustained."""
    out = []
    for rate, start, end in stages:
        st = Stage(rate, start, end)
        if samples is not None and len(samples):
            inside = (samples.start >= start + SETTLE_S) & (samples.start < end)
            n = int(inside.sum())
            st.samples = n
            if n:
                ok = samples.ok[inside]
                st.ok_per_s = float(ok.sum()) / max(end - start - SETTLE_S, 1e-9)
                st.error_pct = 100.0 * float((~ok).sum()) / n
                st.p99_ms = float(np.percentile(samples.elapsed_ms[inside], 99))
        reasons = []
        if st.samples == 0:
            reasons.append("no samples")
        else:
            if st.error_pct > MAX_ERROR_PCT:
                reasons.append(f"errors {st.error_pct:.2f} %")
            if st.p99_ms > target_ms:
                reasons.append(f"p99 {st.p99_ms:,.0f} ms")
            if st.ok_per_s < MIN_SERVED * rate:
                reasons.append(f"served {st.ok_per_s:.1f} of {rate:g} req/s")
        st.sustained, st.why = not reasons, ", ".join(reasons)
        out.append(st)
    return out


def capacity(stages: list[Stage]) -> float | None:
    """The highest rate of the unbroken run of sustained stages from the first, or None."""
    best = None
    for st in stages:
        if not st.sustained:
            break
        best = st.rate
    return best
