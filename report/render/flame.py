"""Flame graphs of the JVMs' profiles (report/read/profiles.py): one per machine and event, and a differential one
(tuned against default), each an inline SVG (no script, no network: a frame's tooltip is its <title>); and the
summary's "Profiles" section (what was recorded, the hottest methods of each machine side by side)."""
from __future__ import annotations

import html
import re
import zlib
from collections.abc import Callable
from typing import Any

from report import MACHINES
from report.explain.flame import frame_kind, frame_label, hottest
from report.read.profiles import EVENTS, Frame, Profiles

WIDTH = 1200                # px of the whole profile
ROW = 16                    # px per frame
FONT_PX = 11
CHAR_PX = 6.4               # a character's width at FONT_PX, to cut a label to its frame
MIN_SHARE = 0.001           # frames under 0.1 % of the samples are left out: too thin to read, most of the SVG's size


def _warm(name: str) -> str:
    """A frame's colour in a machine's flame graph: green for Java, yellow-orange for native code, red for the
    kernel; the shade from the name, so that a frame has the same colour in every graph."""
    h = zlib.crc32(name.encode("utf-8", "replace")) % 1000 / 1000.0
    kind = frame_kind(name)
    if kind == "java":
        return f"rgb({int(50 + 80 * h)},{int(170 + 50 * h)},{int(50 + 40 * h)})"
    if kind == "kernel":
        return f"rgb({int(200 + 50 * h)},{int(70 + 50 * h)},{int(50 + 30 * h)})"
    return f"rgb({int(220 + 30 * h)},{int(160 + 60 * h)},{int(40 + 40 * h)})"


def _diff_colour(delta: float, scale: float) -> str:
    """Red where a frame's share grew from default to tuned, blue where it shrank, white where equal."""
    if scale <= 0:
        return "rgb(235,235,235)"
    x = min(1.0, abs(delta) / scale)
    fade = int(235 - 175 * x)
    return f"rgb(235,{fade},{fade})" if delta > 0 else f"rgb({fade},{fade},235)"


def _layout(root: Frame) -> tuple[list[tuple[Frame, int, int]], int]:
    """[(frame, depth, x0 in samples)] of every frame wide enough to draw, root first; and the deepest depth."""
    placed: list[tuple[Frame, int, int]] = []
    deepest = 0
    stack = [(root, 0, 0)]
    floor = root.total * MIN_SHARE
    while stack:
        node, depth, x0 = stack.pop()
        placed.append((node, depth, x0))
        deepest = max(deepest, depth)
        x = x0
        for name in sorted(node.children):      # alphabetical, as flame graphs are: the same order in both
            child = node.children[name]
            if child.total >= floor:
                stack.append((child, depth + 1, x))
            x += child.total
    return placed, deepest


def _svg(root: Frame, title: str, fill: Callable[[Frame, tuple[str, ...]], str],
         tooltip: Callable[[Frame, tuple[str, ...]], str]) -> str:
    """The flame graph as SVG text: the root at the bottom, each frame as wide as its samples."""
    placed, deepest = _layout(root)
    height = (deepest + 1) * ROW + 4
    scale = WIDTH / root.total
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' class='flame' width='{WIDTH}' height='{height}' "
           f"viewBox='0 0 {WIDTH} {height}' role='img' aria-label='{html.escape(title, quote=True)}' "
           f"font-family='monospace' font-size='{FONT_PX}'>"]
    path_of: dict[int, tuple[str, ...]] = {id(root): ()}
    for node, depth, x0 in placed:
        path = path_of[id(node)]
        for name, child in node.children.items():
            path_of[id(child)] = path + (name,)
        x, w, y = x0 * scale, node.total * scale, height - (depth + 1) * ROW
        text = frame_label(node.name)
        out.append(f"<g><title>{html.escape(tooltip(node, path))}</title>"
                   f"<rect x='{x:.1f}' y='{y}' width='{max(w - 0.5, 0.3):.1f}' height='{ROW - 1}' "
                   f"fill='{fill(node, path)}'/>")
        fits = int((w - 4) / CHAR_PX)
        if fits >= 3:
            shown = text if len(text) <= fits else text[:fits - 2] + ".."
            out.append(f"<text x='{x + 2:.1f}' y='{y + ROW - 4}'>{html.escape(shown)}</text>")
        out.append("</g>")
    out.append("</svg>")
    return "".join(out)


def flame_svg(root: Frame, title: str, unit: str = "samples") -> str:
    """One machine's flame graph."""
    def tooltip(node: Frame, path: tuple[str, ...]) -> str:
        return f"{frame_label(node.name)} — {node.total} {unit} ({100.0 * node.total / root.total:.2f} %)"
    return _svg(root, title, lambda node, path: "rgb(200,200,200)" if node is root else _warm(node.name), tooltip)


def diff_svg(base: Frame, new: Frame, title: str) -> str:
    """The differential flame graph: `new`'s shape (tuned), each frame coloured by how its share of the samples
    changed from `base` (default): red grew, blue shrank. Frames only `base` had do not appear."""
    def delta(node: Frame, path: tuple[str, ...]) -> float:
        old = base.find(path)
        return node.total / new.total - (old.total / base.total if old else 0.0)
    scale = 0.0
    stack: list[tuple[Frame, tuple[str, ...]]] = [(new, ())]
    while stack:                                  # the largest change among the drawn frames sets full colour
        node, path = stack.pop()
        if path:
            scale = max(scale, abs(delta(node, path)))
        stack.extend((c, path + (n,)) for n, c in node.children.items() if c.total >= new.total * MIN_SHARE)

    def tooltip(node: Frame, path: tuple[str, ...]) -> str:
        old = base.find(path)
        was = 100.0 * old.total / base.total if old else 0.0
        now = 100.0 * node.total / new.total
        return f"{frame_label(node.name)} — tuned {now:.2f} %, default {was:.2f} % ({now - was:+.2f} points)"
    return _svg(new, title, lambda node, path: _diff_colour(delta(node, path) if path else 0.0, scale), tooltip)


def flame_sections(profiles: Profiles) -> list[tuple[str, str, str, str]]:
    """[(key, title, about, svg)] for report.html: per event, each machine's flame graph, then the differential
    one when both machines have the event."""
    sections = []
    for event in profiles.events():
        what, title = EVENTS[event]
        machines = profiles.roots[event]
        for name in MACHINES:
            if name in machines:
                root = machines[name]
                sections.append((f"flame-{event}-{name}", f"{name}: {title}",
                                 f"{root.total} {what}. Each box a frame, as wide as the samples in it and what it "
                                 "called; the caller below. Hover for the figures.",
                                 flame_svg(root, f"{name} {title} flame graph")))
        if all(n in machines for n in MACHINES):
            base, new = machines["default"], machines["tuned"]
            sections.append((f"flame-{event}-diff", f"tuned vs default: {title}",
                             f"tuned's {title} profile ({new.total} samples; default {base.total}), each frame red "
                             "where its share of the samples grew from default to tuned, blue where it shrank "
                             "(full colour: the largest change). Frames only default had are not shown.",
                             diff_svg(base, new, f"differential {title} flame graph, tuned vs default")))
    return sections


def _recorded(info: dict[str, Any] | None, sampled: bool) -> str:
    if not info:
        return "profile.json missing" if sampled else "not profiled (off by default: ./start.sh --profile)"
    bits = [f"events {', '.join(info.get('events') or []) or 'none'}"]
    if info.get("engine"):
        bits.append(f"CPU engine {info['engine']}")
    if info.get("interval_ms"):
        bits.append(f"interval {info['interval_ms']} ms")
    if info.get("window"):
        bits.append("window " + " → ".join(str(w) for w in info["window"]))
    by_reason: dict[str, list[str]] = {}
    for event, why in (info.get("converted") or {}).items():
        if why:
            thrown = re.search(r"[\w.$]*(?:Exception|Error): (.+)", why)   # the message, not the stack trace
            by_reason.setdefault((thrown.group(1) if thrown else why.strip().splitlines()[0])[:120], []).append(event)
    for why, events in by_reason.items():
        bits.append(f"not converted ({', '.join(events)}): {why}")
    if info.get("error"):
        bits.append(f"error: {info['error']}")
        if "not found" in info["error"] and by_reason:
            # the agent lives in the JVM: a JVM gone before the stop never finished its recording
            bits.append("the JVM was gone before the recording's end (killed?): only its finished chunks convert")
    return "; ".join(bits)


def profile_lines(profiles: Profiles) -> list[str]:
    """Markdown: '## Profiles': what each machine recorded, and its hottest methods by CPU side by side."""
    lines = ["## Profiles", ""]
    for name in MACHINES:
        counts = ", ".join(f"{e} {profiles.roots[e][name].total} samples" for e in profiles.events()
                           if name in profiles.roots[e])
        lines.append(f"- {name}: {_recorded(profiles.info.get(name), bool(counts))}"
                     + (f" — {counts}" if counts else ""))
    cpu = profiles.roots.get("cpu", {})
    if cpu:
        tops = {name: hottest(cpu[name]) if name in cpu else [] for name in MACHINES}
        lines += ["", "Hottest methods: each JVM's CPU samples by the Java method nearest the top of the stack (the "
                  "one running, or calling the native code that was; a stack without Java code by its top frame):", "",
                  "| # | " + " | ".join(MACHINES) + " |", "| ---: | " + " | ".join("---" for _ in MACHINES) + " |"]
        for i in range(max(len(t) for t in tops.values())):
            cells = []
            for name in MACHINES:
                if i < len(tops[name]):
                    frame, share = tops[name][i]
                    cells.append(f"`{frame_label(frame).replace('|', '/')}` {100 * share:.1f} %")
                else:
                    cells.append("")
            lines.append(f"| {i + 1} | " + " | ".join(cells) + " |")
    for event, what in (("lock", "Most contended locks (share of the lock samples)"),
                        ("alloc", "Most allocated types (share of the allocation samples)")):
        machines = profiles.roots.get(event, {})
        if machines:
            lines += ["", f"{what}:"] + [
                f"- {name}: " + ", ".join(f"`{frame_label(frame)}` {100 * share:.0f} %" for frame, share in
                                          hottest(machines[name], 4)) for name in MACHINES if name in machines]
    if profiles.events():
        lines += ["", "Flame graphs of each machine and the differential one (tuned vs default) are in report.html."]
    lines.append("")
    return lines
