"""The report's layers import one way (report/README.md, Layout): commands → render → explain → history → stats →
read, with report/__init__.py (MACHINES), report/fmt.py and report/output.py under all of them; no import cycle among
its modules (inside a layer too). The line cap is lab/tests/test_layout.py's, for lab/ and report/ alike."""
from __future__ import annotations

import ast
from pathlib import Path

REPORT = Path(__file__).resolve().parent.parent
ORDER = ["read", "stats", "history", "explain", "render", "commands"]     # each may import those before it
FLOOR = ("report", "report.errors", "report.fmt", "report.output")      # under every layer: they import none


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


def imported(path: Path, typing_too: bool = True) -> list[str]:
    """The report modules and names a file imports; typing_too=False leaves out those under `if TYPE_CHECKING:`
    (read by type checkers only, never at run time: no cycle)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    if not typing_too:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
                node.body = []
    names = []
    for node in ast.walk(tree):
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


def graph() -> dict[str, set[str]]:
    """module → the report modules it imports (a `from report.x import name` counts as report.x, or as
    report.x.name where that is a module)."""
    known = modules()
    return {name: {n for n in imported(path, typing_too=False) if n in known and n != name}
            for name, path in known.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """A cycle of imports as [a, b, …, a], or None (depth-first, colouring the modules as they are left)."""
    done, path = set(), []

    def visit(node: str) -> list[str] | None:
        if node in path:
            return path[path.index(node):] + [node]
        if node in done:
            return None
        path.append(node)
        for nxt in sorted(edges.get(node, ())):
            found = visit(nxt)
            if found:
                return found
        path.pop()
        done.add(node)
        return None

    return next((c for c in map(visit, sorted(edges)) if c), None)


def test_no_import_cycle_among_report_modules():
    cycle = find_cycle(graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle)


def test_the_cycle_finder_finds_one_inside_a_layer():
    assert find_cycle({"report.stats.a": {"report.stats.b"}, "report.stats.b": {"report.stats.a"}}) == [
        "report.stats.a", "report.stats.b", "report.stats.a"]
    assert find_cycle({"report.stats.a": {"report.read.b"}}) is None
