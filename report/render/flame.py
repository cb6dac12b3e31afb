"""Flame graphs of the JVMs' profiles (<machine>/profile/<event>.collapsed, async-profiler's samples of the
measured window): one per machine and event, and a differential one (tuned against default), each an inline
SVG (no script, no network: a frame's tooltip is its <title>); and the summary's "Profiles" section (what was
recorded, the hottest methods of each machine side by side)."""
from __future__ import annotations

import html
import json
import re
import zlib
from dataclasses import dataclass, field

from . import MACHINES

WIDTH = 1200                # px of the whole profile
ROW = 16                    # px per frame
FONT_PX = 11
CHAR_PX = 6.4               # a character's width at FONT_PX, to cut a label to its frame
MIN_SHARE = 0.001           # frames under 0.1 % of the samples are left out: too thin to read, most of the SVG's size
TOP_METHODS = 10            # the summary's hottest methods per machine
EVENTS = {                  # event → (what a sample is, title)
    "cpu": ("CPU samples (on-CPU stacks)", "CPU"),
    "alloc": ("allocation samples (where the code allocates)", "allocations"),
    "lock": ("contended-lock samples (where threads waited for a monitor)", "lock contention"),
}
# package/Class.method (hidden and lambda classes included); not "I2C/C2I adapters" or /usr/lib/…/libc.so.6
JAVA_FRAME = re.compile(r"[\w$+\-]+(?:/[\w$+\-]+)+\.[\w$<>+\-]+")
FRAME_TYPE = ("_[j]", "_[i]", "_[k]", "_[0]", "_[1]")   # async-profiler's optional frame type suffixes


@dataclass
class Frame:
    name: str
    total: int = 0                                  # samples whose stack passes through this frame
    own: int = 0                                    # samples where it is the leaf (self)
    children: dict = field(default_factory=dict)    # name → Frame

    def child(self, name):
        node = self.children.get(name)
        if node is None:
            node = self.children[name] = Frame(name)
        return node

    def find(self, path):
        node = self
        for name in path:
            node = node.children.get(name)
            if node is None:
                return None
        return node


def read_collapsed(path):
    """A collapsed profile ("frame;frame;… count" per line) → its root Frame ("all"), or None when the file
    is missing or holds no sample. Lines that are not a stack and a count are skipped."""
    root = Frame("all")
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                stack, _, count = line.rstrip("\n").rpartition(" ")
                if not stack or not count.isdigit():
                    continue
                n = int(count)
                node = root
                node.total += n
                for name in stack.split(";"):
                    node = node.child(name)
                    node.total += n
                node.own += n
    except OSError:
        return None
    return root if root.total else None


def hottest(root, n=TOP_METHODS):
    """[(Java method, share of the samples)]: each sample counted for the Java method nearest its leaf (the one
    running, or calling the native code or kernel that was), highest first; samples with no Java frame (GC,
    the compiler, other JVM threads) under the name of their leaf."""
    own = {}
    stack = [(root, None)]
    while stack:
        node, java = stack.pop()
        if node is not root:
            java = node.name if _kind(node.name) == "java" else java
            if node.own:
                name = _label(java or node.name)      # a method interpreted and compiled counts once
                own[name] = own.get(name, 0) + node.own
        stack.extend((child, java) for child in node.children.values())
    return [(name, count / root.total) for name, count in sorted(own.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def _kind(name):
    """Where a frame runs: java, native (C/C++ in the JVM or a library) or kernel, by its name."""
    for suffix, kind in (("_[k]", "kernel"), ("_[j]", "java"), ("_[i]", "java"), ("_[0]", "java"), ("_[1]", "java")):
        if name.endswith(suffix):
            return kind
    return "java" if JAVA_FRAME.fullmatch(name) else "native"


def _label(name):
    for suffix in FRAME_TYPE:
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name


def _warm(name):
    """A frame's colour in a machine's flame graph: green for Java, yellow-orange for native code, red for the
    kernel; the shade from the name, so that a frame has the same colour in every graph."""
    h = zlib.crc32(name.encode("utf-8", "replace")) % 1000 / 1000.0
    kind = _kind(name)
    if kind == "java":
        return f"rgb({int(50 + 80 * h)},{int(170 + 50 * h)},{int(50 + 40 * h)})"
    if kind == "kernel":
        return f"rgb({int(200 + 50 * h)},{int(70 + 50 * h)},{int(50 + 30 * h)})"
    return f"rgb({int(220 + 30 * h)},{int(160 + 60 * h)},{int(40 + 40 * h)})"


def _diff_colour(delta, scale):
    """Red where a frame's share grew from default to tuned, blue where it shrank, white where equal."""
    if scale <= 0:
        return "rgb(235,235,235)"
    x = min(1.0, abs(delta) / scale)
    fade = int(235 - 175 * x)
    return f"rgb(235,{fade},{fade})" if delta > 0 else f"rgb({fade},{fade},235)"


def _layout(root):
    """[(frame, depth, x0 in samples)] of every frame wide enough to draw, root first; and the deepest depth."""
    placed, deepest = [], 0
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


def _svg(root, title, fill, tooltip):
    """The flame graph as SVG text: the root at the bottom, each frame as wide as its samples."""
    placed, deepest = _layout(root)
    height = (deepest + 1) * ROW + 4
    scale = WIDTH / root.total
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' class='flame' width='{WIDTH}' height='{height}' "
           f"viewBox='0 0 {WIDTH} {height}' role='img' aria-label='{html.escape(title, quote=True)}' "
           f"font-family='monospace' font-size='{FONT_PX}'>"]
    path_of = {id(root): ()}
    for node, depth, x0 in placed:
        path = path_of[id(node)]
        for name, child in node.children.items():
            path_of[id(child)] = path + (name,)
        x, w, y = x0 * scale, node.total * scale, height - (depth + 1) * ROW
        text = _label(node.name)
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


def flame_svg(root, title, unit="samples"):
    """One machine's flame graph."""
    def tooltip(node, path):
        return f"{_label(node.name)} — {node.total} {unit} ({100.0 * node.total / root.total:.2f} %)"
    return _svg(root, title, lambda node, path: "rgb(200,200,200)" if node is root else _warm(node.name), tooltip)


def diff_svg(base, new, title):
    """The differential flame graph: `new`'s shape (tuned), each frame coloured by how its share of the samples
    changed from `base` (default): red grew, blue shrank. Frames only `base` had do not appear."""
    def delta(node, path):
        old = base.find(path)
        return node.total / new.total - (old.total / base.total if old else 0.0)
    scale = 0.0
    stack = [(new, ())]
    while stack:                                  # the largest change among the drawn frames sets full colour
        node, path = stack.pop()
        if path:
            scale = max(scale, abs(delta(node, path)))
        stack.extend((c, path + (n,)) for n, c in node.children.items() if c.total >= new.total * MIN_SHARE)

    def tooltip(node, path):
        old = base.find(path)
        was = 100.0 * old.total / base.total if old else 0.0
        now = 100.0 * node.total / new.total
        return f"{_label(node.name)} — tuned {now:.2f} %, default {was:.2f} % ({now - was:+.2f} points)"
    return _svg(new, title, lambda node, path: _diff_colour(delta(node, path) if path else 0.0, scale), tooltip)


def read_profile_info(machine_dir):
    """profile/profile.json (what was asked, the engine, the window, what converted), {} when absent."""
    try:
        return json.loads((machine_dir / "profile" / "profile.json").read_text())
    except (OSError, ValueError, TypeError):
        return {}


@dataclass
class Profiles:
    """What the run's profiles hold: {event: {machine: root Frame}} and {machine: profile.json}."""
    roots: dict
    info: dict

    def events(self):
        return [e for e in EVENTS if self.roots.get(e)]


def load_profiles(run):
    roots, info = {}, {}
    for name in MACHINES:
        folder = run.machine_dir(name)
        info[name] = read_profile_info(folder)
        for event in EVENTS:
            root = read_collapsed(folder / "profile" / f"{event}.collapsed")
            if root is not None:
                roots.setdefault(event, {})[name] = root
    return Profiles(roots, info)


def flame_sections(profiles):
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


def _recorded(info, sampled):
    if not info:
        return "profile.json missing" if sampled else "not profiled (off by default: ./start.sh --profile)"
    bits = [f"events {', '.join(info.get('events') or []) or 'none'}"]
    if info.get("engine"):
        bits.append(f"CPU engine {info['engine']}")
    if info.get("interval_ms"):
        bits.append(f"interval {info['interval_ms']} ms")
    if info.get("window"):
        bits.append("window " + " → ".join(str(w) for w in info["window"]))
    by_reason = {}
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


def profile_lines(profiles):
    """Markdown: '## Profiles': what each machine recorded, and its hottest methods by CPU side by side."""
    lines = ["## Profiles", ""]
    for name in MACHINES:
        counts = ", ".join(f"{e} {profiles.roots[e][name].total} samples" for e in profiles.events()
                           if name in profiles.roots[e])
        lines.append(f"- {name}: {_recorded(profiles.info.get(name), bool(counts))}" + (f" — {counts}" if counts else ""))
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
                    cells.append(f"`{_label(frame).replace('|', '/')}` {100 * share:.1f} %")
                else:
                    cells.append("")
            lines.append(f"| {i + 1} | " + " | ".join(cells) + " |")
    for event, what in (("lock", "Most contended locks (share of the lock samples)"),
                        ("alloc", "Most allocated types (share of the allocation samples)")):
        machines = profiles.roots.get(event, {})
        if machines:
            lines += ["", f"{what}:"] + [
                f"- {name}: " + ", ".join(f"`{_label(frame)}` {100 * share:.0f} %" for frame, share in
                                          hottest(machines[name], 4)) for name in MACHINES if name in machines]
    if profiles.events():
        lines += ["", "Flame graphs of each machine and the differential one (tuned vs default) are in report.html."]
    lines.append("")
    return lines
