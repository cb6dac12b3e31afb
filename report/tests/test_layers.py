"""The report's layers import one way (report/README.md, Layout): commands → render → explain → history → stats →
read, with report/__init__.py (MACHINES), report/fmt.py and report/output.py under all of them; no module grows past
~350 lines."""
from __future__ import annotations

import ast
from pathlib import Path

REPORT = Path(__file__).resolve().parent.parent
ORDER = ["read", "stats", "history", "explain", "render", "commands"]     # each may import those before it
MAX_LINES = 350
FLOOR = ("report", "report.fmt", "report.output")      # under every layer: they import none


def layer(module: str) -> str | None:
    """'render' for report.render.summary; None for report itself, report.fmt and report.tests."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "report" and parts[1] in ORDER else None


def modules() -> dict[str, Path]:
    out = {}
    for path in REPORT.rglob("*.py"):
        rel = path.relative_to(REPORT.parent).with_suffix("")
        if "tests" not in rel.parts:
            out[".".join(rel.parts).removesuffix(".__init__")] = path
    return out


def imported(path: Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names.append(node.module)
            names += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names]
    return [n for n in names if n == "report" or n.startswith("report.")]


def test_no_layer_imports_a_layer_above_it():
    upward = []
    for name, path in modules().items():
        own = layer(name)
        for target in imported(path):
            other = layer(target)
            if name in FLOOR and other is not None:
                upward.append(f"{name} imports {target}: it sits under every layer")
            elif own is not None and other is not None and ORDER.index(other) > ORDER.index(own):
                upward.append(f"{name} ({own}) imports {target} ({other})")
    assert not upward, "\n".join(upward)


def test_the_layers_are_there():
    found = {layer(name) for name in modules()}
    assert set(ORDER) <= found


def test_no_module_is_a_hall():
    long = {name: n for name, path in modules().items() if (n := len(path.read_text().splitlines())) > MAX_LINES}
    assert not long, long
