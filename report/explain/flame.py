"""What a profile says: the hottest methods of a JVM (each sample counted for the Java method nearest its leaf),
and where each frame runs (Java, native code, the kernel) by its name. The profiles: report/read/profiles.py."""
from __future__ import annotations

import re

from report.read.profiles import Frame

TOP_METHODS = 10            # the summary's hottest methods per machine
# package/Class.method (hidden and lambda classes included); not "I2C/C2I adapters" or /usr/lib/…/libc.so.6
JAVA_FRAME = re.compile(r"[\w$+\-]+(?:/[\w$+\-]+)+\.[\w$<>+\-]+")
FRAME_TYPE = ("_[j]", "_[i]", "_[k]", "_[0]", "_[1]")   # async-profiler's optional frame type suffixes


def hottest(root: Frame, n: int = TOP_METHODS) -> list[tuple[str, float]]:
    """[(Java method, share of the samples)]: each sample counted for the Java method nearest its leaf (the one
    running, or calling the native code or kernel that was), highest first; samples with no Java frame (GC,
    the compiler, other JVM threads) under the name of their leaf."""
    own: dict[str, int] = {}
    stack: list[tuple[Frame, str | None]] = [(root, None)]
    while stack:
        node, java = stack.pop()
        if node is not root:
            java = node.name if frame_kind(node.name) == "java" else java
            if node.own:
                name = frame_label(java or node.name)      # a method interpreted and compiled counts once
                own[name] = own.get(name, 0) + node.own
        stack.extend((child, java) for child in node.children.values())
    return [(name, count / root.total) for name, count in sorted(own.items(), key=lambda kv: (-kv[1], kv[0]))[:n]]


def frame_kind(name: str) -> str:
    """Where a frame runs: java, native (C/C++ in the JVM or a library) or kernel, by its name."""
    for suffix, kind in (("_[k]", "kernel"), ("_[j]", "java"), ("_[i]", "java"), ("_[0]", "java"), ("_[1]", "java")):
        if name.endswith(suffix):
            return kind
    return "java" if JAVA_FRAME.fullmatch(name) else "native"


def frame_label(name: str) -> str:
    for suffix in FRAME_TYPE:
        if name.endswith(suffix):
            return name[:-len(suffix)]
    return name
