"""Draws the charts of report.html: one PNG per chart (report/render/panels.py), default and tuned side by side on
the same y scale, x in seconds since each machine's first sample, warm-up shaded, where it settled and where it
stopped marked."""
from __future__ import annotations

import io

import matplotlib

matplotlib.use("Agg")  # no display: files only
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from PIL import Image  # noqa: E402  (comes with matplotlib)

from report.render.panels import MAX_POINTS, Chart, Panel, bin_width, samples_span  # noqa: E402
from report.stats.machine import Machine  # noqa: E402

DPI = 96
FIGSIZE = (13.5, 2.9)  # 1296 × 278 px: the page's width, no upscaling


def _thinned(x: np.ndarray, y: np.ndarray, span: float) -> tuple[np.ndarray, np.ndarray]:
    """At most ~2 × MAX_POINTS points: a 20 min run's 1 s PCP samples become the mean of each time bin
    (readable lines, small PNGs). Shorter series are returned as they are."""
    if len(x) <= 2 * MAX_POINTS:
        return x, y
    width = bin_width(span)
    idx = ((x - x.min()) // width).astype(int)
    valid = ~np.isnan(y)
    sums = np.bincount(idx[valid], weights=y[valid], minlength=idx.max() + 1)
    counts = np.bincount(idx[valid], minlength=idx.max() + 1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
    return x.min() + (np.arange(len(means)) + 0.5) * width, means


def _y_top(panels: list[Panel]) -> float:
    tops = []
    for p in panels:
        if p.stacked and p.series:
            tops.append(_stack_max(p.series))
        else:
            tops += [float(np.nanmax(y)) for _, _, y in p.series if len(y) and not np.all(np.isnan(y))]
        tops += [y for _, y in p.hlines]
    top = max(tops) if tops else 1.0
    return top * 1.08 if top > 0 else 1.0


def _stack_max(series: list[tuple[str, np.ndarray, np.ndarray]]) -> float:
    xs = np.unique(np.concatenate([x for _, x, _ in series]))
    total = sum(np.interp(xs, x, np.nan_to_num(y), left=0, right=0) for _, x, y in series)
    return float(total.max()) if len(total) else 0.0


def render(chart: Chart, machines: list[Machine], warmup_s: float) -> bytes:
    """PNG bytes of one chart with a panel per machine."""
    spans = [samples_span(m) for m in machines]
    span = max(spans) if max(spans) > 0 else 60.0
    panels = [chart.build(m, span) if m.window is not None else Panel(note="no data (no time reference)")
              for m in machines]
    for panel in panels:
        panel.series = [(label, *_thinned(x, y, span)) for label, x, y in panel.series]
    top = _y_top(panels)
    fig, axes = plt.subplots(1, len(machines), figsize=FIGSIZE, dpi=DPI, sharey=True)
    for ax, machine, panel in zip(np.atleast_1d(axes), machines, panels, strict=True):
        _draw(ax, machine, panel, warmup_s, span, top)
        ax.set_title(machine.name, fontsize=10, loc="left")
        ax.set_xlabel("s since first sample", fontsize=8)
    np.atleast_1d(axes)[0].set_ylabel(chart.ylabel, fontsize=8)
    # fixed margins (not tight_layout): every chart's panels line up under each other
    fig.subplots_adjust(left=0.05, right=0.995, bottom=0.17, top=0.88, wspace=0.04)
    return small_png(fig)


def small_png(fig) -> bytes:
    """The figure (closed here) as a palette PNG (≤64 colours, octree: keeps rare colours such as the red stop
    mark): about a third of the size of matplotlib's RGBA, same look for line charts. Taken from the canvas's
    pixels, not from savefig's PNG read back (the same pixels, 14 encodes and decodes fewer a report)."""
    fig.canvas.draw()
    pixels = Image.frombuffer("RGBA", fig.canvas.get_width_height(), fig.canvas.buffer_rgba(), "raw", "RGBA", 0, 1)
    plt.close(fig)
    image = pixels.convert("RGB").quantize(colors=64, method=Image.Quantize.FASTOCTREE)
    palette = image.getpalette()
    # the octree averages white with near-white: make the background white again
    image.putpalette([255 if min(palette[i - i % 3:i - i % 3 + 3]) >= 245 else v for i, v in enumerate(palette)])
    out = io.BytesIO()
    image.save(out, format="PNG", optimize=True)
    return out.getvalue()


def _draw(ax: Axes, machine: Machine, panel: Panel, warmup_s: float, span: float, top: float) -> None:
    ax.set_xlim(min(0.0, *[float(x.min()) for _, x, _ in panel.series if len(x)]) if panel.series else 0.0, span)
    ax.set_ylim(0, top)
    ax.tick_params(labelsize=8)
    ax.grid(alpha=0.3, linewidth=0.5)
    if warmup_s > 0:
        ax.axvspan(0, warmup_s, color="0.85", zorder=0)
        ax.text(warmup_s / 2, top * 0.97, "warm-up", ha="center", va="top", fontsize=7, color="0.4")
    steady = getattr(machine, "steady", None)
    if steady is not None and steady.settled:
        ax.axvline(steady.start_s, color="tab:green", linestyle=":", linewidth=1.2)
        ax.text(steady.start_s, top * 0.97, " steady ", color="tab:green", fontsize=7, va="top",
                ha="right" if steady.start_s > 0.75 * span else "left")
    if machine.stop is not None:
        at = machine.stop.at - machine.t0
        ax.axvline(at, color="red", linestyle="--", linewidth=1)
        right_half = at > 0.75 * span  # keep the label inside the panel
        ax.text(at, top * 0.5, f" stopped +{at:.0f} s ", color="red", fontsize=8, va="center",
                ha="right" if right_half else "left",
                bbox={"facecolor": "white", "alpha": 0.8, "edgecolor": "none", "pad": 1})
    if panel.note and not panel.series:
        ax.text(0.5, 0.5, panel.note, transform=ax.transAxes, ha="center", va="center", fontsize=9, color="0.35")
        return
    if panel.stacked:
        xs = np.unique(np.concatenate([x for _, x, _ in panel.series]))
        ys = [np.interp(xs, x, np.nan_to_num(y), left=0, right=0) for _, x, y in panel.series]
        ax.stackplot(xs, ys, labels=[label for label, _, _ in panel.series], alpha=0.85, linewidth=0)
    else:
        for i, (label, x, y) in enumerate(panel.series):
            ax.plot(x, y, label=label, linewidth=1.1, color=panel.colors[i] if panel.colors else None)
    for label, y in panel.hlines:
        ax.axhline(y, color="0.3", linestyle=":", linewidth=1, label=label)
    ax.legend(fontsize=7, loc="upper right", framealpha=0.7)
