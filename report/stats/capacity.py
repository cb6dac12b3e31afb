"""The capacity search (load model `steps`): per machine, each stage's offered rate against what was served, its
errors and p99, and the highest stage sustained; one latency-vs-throughput chart of both machines.

A stage is judged on the samples that started in it, after its first SETTLE_S seconds (JMeter catches up the
arrivals it owes at a change of rate, and queues adjust). It is sustained when errors ≤ MAX_ERROR_PCT, p99 (all
samples, failures included: a timeout is latency too) ≤ the run's p99 target, and the successful rate ≥ MIN_SERVED
of the offered one. A machine's capacity is the highest stage of the unbroken run of sustained stages from the
first: a stage that passes after one that failed is a machine recovering, not capacity.
"""
import io
import math
from dataclasses import dataclass

import numpy as np

from .html import Figure

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


def plan(run):
    """[(rate, start epoch, end epoch)] of a steps run, or [] (another model, or JMeter never started)."""
    load = run.load or {}
    if load.get("model") != "steps" or not load.get("test_start_ms") or not load.get("step_rates"):
        return []
    # the stages start after the warm-up at the first rate (ramp_up_s; 0 in runs made before it existed)
    t0 = load["test_start_ms"] / 1000.0 + float(load.get("ramp_up_s") or 0)
    step = float(load.get("step_s", 0))
    return [(float(r), t0 + k * step, t0 + (k + 1) * step) for k, r in enumerate(load["step_rates"])]


def judge(samples, stages, target_ms):
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


def capacity(stages):
    """The highest rate of the unbroken run of sustained stages from the first, or None."""
    best = None
    for st in stages:
        if not st.sustained:
            break
        best = st.rate
    return best


def lines(run, machines):
    stages = plan(run)
    if not stages:
        return []
    target = int((run.load or {}).get("p99_target_ms", 2000))
    judged = {m.name: judge(m.samples, stages, target) for m in machines.values()}
    caps = {name: capacity(st) for name, st in judged.items()}
    out = ["## Capacity", ""]
    words = [f"{name} sustains {cap:g} req/s" if cap is not None else f"{name} sustains none of the stages"
             for name, cap in caps.items()]
    ratio = ""
    if all(caps.values()) and caps.get("default"):
        ratio = f" — tuned sustains {caps['tuned'] / caps['default']:.2f}× the rate of default"
    top = stages[-1][0]
    ceiling = [name for name, st in judged.items() if st and st[-1].sustained]
    out.append(f"**{'; '.join(words)}**{ratio}. Rule: a stage is sustained with errors ≤ {MAX_ERROR_PCT} %, p99 ≤ "
               f"{target:,} ms and at least {MIN_SERVED:.0%} of the offered rate served, judged after each stage's "
               f"first {SETTLE_S:.0f} s; capacity is the highest of the unbroken run of sustained stages from the first.")
    if ceiling:
        out.append(f"{' and '.join(ceiling)} sustained the last stage ({top:g} req/s): its capacity is at least "
                   "that; add higher stages to find it.")
    out += ["", "| stage (req/s offered) | " + " | ".join(f"{n}: served, errors, p99" for n in judged) + " |",
            "| ---: | " + " | ".join("---" for _ in judged) + " |"]
    for k, (rate, _, _) in enumerate(stages):
        cells = []
        for st in (judged[n][k] for n in judged):
            if st.samples == 0:
                cells.append("no samples")
                continue
            mark = "✓" if st.sustained else f"✗ ({st.why})"
            cells.append(f"{st.ok_per_s:.1f} req/s, {st.error_pct:.2f} %, {st.p99_ms:,.0f} ms {mark}")
        out.append(f"| {rate:g} | " + " | ".join(cells) + " |")
    return out + [""]


def chart(run, machines):
    """(Chart, png) of p99 against the served rate, one line per machine, each point a stage; None otherwise."""
    stages = plan(run)
    if not stages:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    target = int((run.load or {}).get("p99_target_ms", 2000))
    fig, ax = plt.subplots(figsize=(9, 4.5))
    for m in machines.values():
        judged = judge(m.samples, stages, target)
        xs = [st.ok_per_s for st in judged if st.samples]
        ys = [st.p99_ms for st in judged if st.samples]
        if not xs:
            continue
        ax.plot(xs, ys, "o-", label=m.name)
        for st in judged:
            if st.samples and not math.isnan(st.p99_ms):
                ax.annotate(f"{st.rate:g}", (st.ok_per_s, st.p99_ms), textcoords="offset points", xytext=(4, 4),
                            fontsize=8)
    ax.axhline(target, color="grey", ls="--", lw=0.8)
    ax.set_xlabel("successful req/s served (stage, after its first seconds)")
    ax.set_ylabel("p99 latency (ms)")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90)
    plt.close(fig)
    return (Figure("capacity", "Latency against throughput (capacity search)",
                  "Each point a stage, labelled with its offered rate (req/s). Dashed: the p99 target."),
            buf.getvalue())
