"""The house's layout, as rules a change cannot break unseen:

- lab/ is in wings whose imports point one way: the command line (lab.cli, lab.__main__) → lab.experiment →
  lab.provision → lab.machines → the floor (lab.paths, shell, steps, procs, maven, lock); lazy imports inside
  functions count too, and no module imports a wing above its own;
- no import cycle among lab's modules;
- inside lab.experiment, floors: sweep and tune → run → trial → options; a module imports only floors below its
  own, and a module on no floor (collect, design, record, …) only options among them;
- only `python -m lab` (lab/__main__.py) reaches the command line;
- report/ reads run folders only: it never imports lab/ (nor the hand-run benchmarks in bench/), and lab/
  never imports bench/;
- no module of lab/ or report/ over MAX_LINES lines (a longer one has two jobs: split it);
- every import of lab names what exists (a lazy import left behind by a move fails only when its function runs).
"""
import ast
import importlib
from pathlib import Path

import pytest

from lab import paths

LAB = paths.ROOT / "lab"
REPORT = paths.ROOT / "report"
MAX_LINES = 350
# The wings from the top down: a module may import its own wing and those below it, never one above.
WINGS = ("lab.cli", "lab.experiment", "lab.provision", "lab.machines", "floor")
FLOOR = {"lab", "lab.paths", "lab.shell", "lab.steps", "lab.procs", "lab.maven", "lab.lock", "lab.errors",
         "lab.redact", "lab.unprivileged", "lab.confine"}
# lab.experiment's floors from the top down; its other modules stand below trial, beside options' own imports
EXPERIMENT_FLOORS = (("lab.experiment.sweep", "lab.experiment.tune"), ("lab.experiment.run",),
                     ("lab.experiment.trial",), ("lab.experiment.options",))


def _module_name(path: Path, root: Path = paths.ROOT) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(name: str, root: Path = paths.ROOT) -> bool:
    where = root.joinpath(*name.split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def imports_of(source: str, name: str, is_package: bool = False, root: Path = paths.ROOT) -> set[str]:
    """Every module a module's source imports, anywhere in it (lazy imports too). `from lab import x` is lab.x
    when x is a module. The parent packages Python initialises on the way are no edges: a package's __init__
    that re-exports its submodules' names is no cycle."""
    package = name if is_package else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if _is_module(f"{base}.{alias.name}", root) else base)
    return found


def _ours(modules: set[str], top: str) -> set[str]:
    return {m for m in modules if m == top or m.startswith(top + ".")}


def _sources(folder: Path) -> list[Path]:
    return [f for f in folder.rglob("*.py") if "tests" not in f.relative_to(folder).parts]


def import_graph(folder: Path = LAB, top: str = "lab") -> dict[str, set[str]]:
    """Each module of a package (its tests left out) → the modules of the same package it imports."""
    return {_module_name(f): _ours(imports_of(f.read_text(), _module_name(f), f.name == "__init__.py"), top)
            for f in _sources(folder)}


def wing(module: str) -> str:
    """The wing a lab module stands in: lab.cli, lab.experiment, lab.provision, lab.machines or the floor."""
    if module == "lab.__main__":
        return "lab.cli"
    for name in WINGS[:-1]:
        if module == name or module.startswith(name + "."):
            return name
    if module in FLOOR:
        return "floor"
    raise AssertionError(f"{module} stands in no wing: put it in one of {', '.join(WINGS[:-1])} or the floor "
                         f"({', '.join(sorted(FLOOR - {'lab'}))})")


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """Every import from a lower wing into a higher one, as 'a (wing) → b (wing)'."""
    rank = {name: i for i, name in enumerate(WINGS)}
    return sorted(f"{a} ({wing(a)}) → {b} ({wing(b)})" for a, imported in graph.items() for b in imported
                  if rank[wing(b)] < rank[wing(a)])


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


def forbidden_imports(folder: Path, top: str, banned: tuple[str, ...]) -> list[str]:
    """'module → banned module' for every import of a banned package in a package's modules (tests too)."""
    out = []
    for f in folder.rglob("*.py"):
        name = _module_name(f)
        for imported in imports_of(f.read_text(), name, f.name == "__init__.py"):
            if any(imported == b or imported.startswith(b + ".") for b in banned):
                out.append(f"{name} → {imported}")
    return sorted(out)


def unresolved_imports(folders: tuple[Path, ...] = (LAB, paths.ROOT / "bench")) -> list[str]:
    """'file:line: from X import y' for every import of lab that names neither a module nor a name X defines,
    tests and lazy imports inside functions included."""
    out = []
    for f in (f for folder in folders for f in folder.rglob("*.py")):
        for node in ast.walk(ast.parse(f.read_text())):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "lab":
                try:
                    target = importlib.import_module(node.module)
                except ImportError:
                    out.append(f"{f.relative_to(paths.ROOT)}:{node.lineno}: no module {node.module}")
                    continue
                out += [f"{f.relative_to(paths.ROOT)}:{node.lineno}: from {node.module} import {a.name}"
                        for a in node.names
                        if not _is_module(f"{node.module}.{a.name}") and not hasattr(target, a.name)]
            elif isinstance(node, ast.Import):
                out += [f"{f.relative_to(paths.ROOT)}:{node.lineno}: import {a.name}" for a in node.names
                        if a.name.split(".")[0] == "lab" and not _is_module(a.name)]
    return sorted(out)


def too_long(folders: tuple[Path, ...] = (LAB, REPORT), limit: int = MAX_LINES) -> list[str]:
    return sorted(f"{f.relative_to(paths.ROOT)}: {n} lines" for folder in folders for f in _sources(folder)
                  if (n := len(f.read_text().splitlines())) > limit)


# --- the checkers catch what they are for ---------------------------------------------------------------------

def test_the_cycle_finder_finds_a_lazy_import_back():
    assert find_cycle({"lab.cli": {"lab.experiment.run"}, "lab.experiment.run": {"lab.cli"}}) == [
        "lab.cli", "lab.experiment.run", "lab.cli"]
    assert find_cycle({"lab.cli": {"lab.experiment.run", "lab.paths"}, "lab.experiment.run": {"lab.paths"},
                       "lab.paths": set()}) is None


def test_a_planted_circle_is_found_in_the_real_graph():
    graph = import_graph()
    graph["lab.machines.netns"] = graph["lab.machines.netns"] | {"lab.machines.vagrant"}   # vagrant → netns already
    cycle = find_cycle(graph)
    assert cycle is not None and "lab.machines.netns" in cycle and "lab.machines.vagrant" in cycle


def test_a_planted_upward_import_is_named():
    graph = import_graph()
    graph["lab.machines.box"] = graph["lab.machines.box"] | {"lab.provision.knobs"}
    assert "lab.machines.box (lab.machines) → lab.provision.knobs (lab.provision)" in upward_imports(graph)


def test_a_planted_report_to_lab_import_is_named(tmp_path):
    planted = tmp_path / "report"
    (planted / "read").mkdir(parents=True)
    (planted / "__init__.py").write_text("")
    (planted / "read" / "__init__.py").write_text("")
    (planted / "read" / "jtl.py").write_text("def f():\n    from lab.experiment import load  # lazy, still counted\n")
    found = []
    for f in planted.rglob("*.py"):
        for imported in imports_of(f.read_text(), _module_name(f, tmp_path), f.name == "__init__.py", tmp_path):
            if imported.startswith("lab"):
                found.append(f"{_module_name(f, tmp_path)} → {imported}")
    assert found == ["report.read.jtl → lab.experiment"]


def test_a_module_in_no_wing_is_named():
    with pytest.raises(AssertionError, match="lab.helpers stands in no wing"):
        wing("lab.helpers")


# --- the house as it is -------------------------------------------------------------------------------------

def test_the_graph_sees_the_wings():
    graph = import_graph()
    assert {"lab.cli", "lab.experiment.run", "lab.machines.lifecycle", "lab.experiment.load",
            "lab.experiment.load.runner", "lab.provision.playbook"} <= set(graph)
    assert "lab.machines.lifecycle" in graph["lab.experiment.trial"]
    assert "lab.experiment.load.jmeter" in graph["lab.experiment.load.runner"]


def test_every_lab_module_stands_in_a_wing():
    for module in import_graph():
        wing(module)


def test_no_wing_imports_one_above_it():
    upward = upward_imports(import_graph())
    assert not upward, "imports against the wing order (" + " → ".join(WINGS) + "):\n" + "\n".join(upward)


def test_no_import_cycle_among_lab_modules():
    cycle = find_cycle(import_graph())
    assert cycle is None, "import cycle: " + " → ".join(cycle)


def experiment_floor(module: str) -> int:
    """The floor of a lab.experiment module: 0 the top (sweep, tune), len(EXPERIMENT_FLOORS) a module on none."""
    for level, names in enumerate(EXPERIMENT_FLOORS):
        if any(module == n or module.startswith(n + ".") for n in names):
            return level
    return len(EXPERIMENT_FLOORS)


def experiment_floor_breaches(graph: dict[str, set[str]]) -> list[str]:
    """Imports inside lab.experiment that reach a floor not below the importer's (options: any module may)."""
    options = len(EXPERIMENT_FLOORS) - 1
    found = []
    for a, imported in graph.items():
        if not a.startswith("lab.experiment."):
            continue
        for b in imported:
            if not b.startswith("lab.experiment.") or experiment_floor(b) == len(EXPERIMENT_FLOORS):
                continue
            same_package = experiment_floor(a) == experiment_floor(b) and a.split(".")[2] == b.split(".")[2]
            if not same_package and experiment_floor(b) <= experiment_floor(a) and experiment_floor(b) != options:
                found.append(f"{a} → {b}")
    return sorted(found)


def test_the_experiment_wing_keeps_its_floors():
    breaches = experiment_floor_breaches(import_graph())
    assert not breaches, "imports against lab.experiment's floors (sweep, tune → run → trial → options):\n" + \
        "\n".join(breaches)


def test_a_planted_import_of_run_from_trial_is_named():
    assert experiment_floor_breaches({"lab.experiment.trial": {"lab.experiment.run"},
                                      "lab.experiment.collect": {"lab.experiment.trial", "lab.experiment.options"},
                                      "lab.experiment.sweep": {"lab.experiment.run"}}) == \
        ["lab.experiment.collect → lab.experiment.trial", "lab.experiment.trial → lab.experiment.run"]


def test_only_main_imports_the_command_line():
    importers = sorted(name for name, imported in import_graph().items() if "lab.cli" in imported)
    assert importers == ["lab.__main__"], f"lab.cli parses and dispatches; these call back into it: {importers}"


def test_report_never_imports_lab_or_the_benchmarks():
    found = forbidden_imports(REPORT, "report", ("lab", "bench"))
    assert not found, "report/ reads run folders only:\n" + "\n".join(found)


def test_lab_never_imports_the_benchmarks():
    found = forbidden_imports(LAB, "lab", ("bench",))
    assert not found, "bench/ is run by hand, not part of the lab:\n" + "\n".join(found)


def test_no_module_is_longer_than_one_job():
    long = too_long()
    assert not long, f"over {MAX_LINES} lines (split by job):\n" + "\n".join(long)


README_MAX_LINES = 200      # issue 51: a front page read at a glance; figures live in docs/


def test_the_readme_stays_a_front_page():
    lines = len((paths.ROOT / "README.md").read_text().splitlines())
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move detail and figures into docs/"


def test_a_planted_import_of_a_moved_module_is_named(tmp_path, monkeypatch):
    planted = tmp_path / "bench"
    planted.mkdir()
    (planted / "stale.py").write_text("def go():\n    from lab import run  # moved to lab.experiment.run\n")
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    assert unresolved_imports((planted,)) == ["bench/stale.py:2: from lab import run"]


def test_every_import_of_lab_names_what_exists():
    stale = unresolved_imports()
    assert not stale, "imports of what does not exist (moved or renamed):\n" + "\n".join(stale)

