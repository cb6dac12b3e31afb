"""The package's layout: no import cycle among lab's modules (lazy imports inside functions count too), and
only `python -m lab` (lab/__main__.py) reaches the command line; everything else is called by it."""
import ast
from pathlib import Path

from lab import paths

LAB = paths.ROOT / "lab"


def _module_name(path: Path) -> str:
    parts = path.relative_to(paths.ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str) -> bool:
    where = paths.ROOT.joinpath(*name.split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def _imports(path: Path, name: str) -> set[str]:
    """The lab modules a module imports, anywhere in it. `from lab import x` is lab.x when x is a module.
    The parent packages Python initialises on the way are no edges: a package's __init__ that re-exports
    its submodules' names is no cycle."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if _is_module(f"{base}.{alias.name}") else base)
    return {m for m in found if m == "lab" or m.startswith("lab.")}


def import_graph() -> dict[str, set[str]]:
    """Each module of lab/ (its tests left out) → the lab modules it imports."""
    files = [f for f in LAB.rglob("*.py") if "tests" not in f.relative_to(LAB).parts]
    return {_module_name(f): _imports(f, _module_name(f)) for f in files}


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as [a, b, …, a], or None."""
    state: dict[str, str] = {}          # "open" while on the current path, "done" once fully explored
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = "open"
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return path[path.index(nxt):] + [nxt]
            if nxt not in state:
                cycle = visit(nxt)
                if cycle:
                    return cycle
        path.pop()
        state[node] = "done"
        return None

    for start in sorted(graph):
        if start not in state:
            cycle = visit(start)
            if cycle:
                return cycle
    return None


def test_the_cycle_finder_finds_a_lazy_import_back():
    assert find_cycle({"lab.cli": {"lab.run"}, "lab.run": {"lab.cli"}}) == ["lab.cli", "lab.run", "lab.cli"]
    assert find_cycle({"lab.cli": {"lab.run", "lab.paths"}, "lab.run": {"lab.paths"}, "lab.paths": set()}) is None


def test_the_graph_sees_the_lab_modules():
    graph = import_graph()
    assert {"lab.cli", "lab.run", "lab.lifecycle", "lab.load", "lab.load.runner"} <= set(graph)
    assert "lab.lifecycle" in graph["lab.run"] and "lab.load.jmeter" in graph["lab.load.runner"]


def test_no_import_cycle_among_lab_modules():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle)


def test_only_main_imports_the_command_line():
    importers = sorted(name for name, imported in import_graph().items() if "lab.cli" in imported)
    assert importers == ["lab.__main__"], f"lab.cli parses and dispatches; these call back into it: {importers}"
