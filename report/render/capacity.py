"""The capacity search's section of the summary (the stages judged: report/stats/capacity.py): per machine, each
stage's served rate, errors and p99 against its rule, the capacity each sustained; and one latency-vs-throughput
chart of both machines."""
from __future__ import annotations

import io
import math
from typing import Any

from report.read.runinfo import RunInfo
from report.render.html import Figure
from report.stats.capacity import MAX_ERROR_PCT, MIN_SERVED, SETTLE_S, capacity, judge, plan


def lines(run: RunInfo, machines: dict[str, Any]) -> list[str]:
    """Markdown: '## Capacity', or nothing for a run of another load model."""
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
               f"first {SETTLE_S:.0f} s; capacity is the highest of the unbroken run of sustained stages from the "
               "first.")
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


def chart(run: RunInfo, machines: dict[str, Any]) -> tuple[Figure, bytes] | None:
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
