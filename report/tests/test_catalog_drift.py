"""Nothing in report/ copies the knob catalog: the report reads knob values from the machine and the run's
snapshot of ansible/knobs.yml (report/read/knobs.py), so a default written down here can only drift. Two checks,
against the catalog read as YAML (never through the lab package):

(a) code: no module of report/ (its tests aside: they build knobs.json on purpose) holds a dict literal keyed by
    a catalog knob with a literal value, nor a `.get("<knob>", <literal>)` or `<get("<knob>")> or <literal>`;
(b) text: in report/README.md and in every docstring, comment and string of report/, a number stated as a knob's
    default ("`knob` N", "knob (N)", "(default N)", "(unset: N)", "N s by default", "N s when unset",
    "defaults to N", "N s (the default)", "`knob`, N ms)") must be the catalog's default (for a null default: the
    catalog's `unset` words, when they are a number).
"""
from __future__ import annotations

import ast
import io
import re
import tokenize
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from report.tests.catalog import knobs

REPORT = Path(__file__).resolve().parent.parent
README = REPORT / "README.md"
HERE = Path(__file__).resolve()

NUMBER = r"(-?\d[\d,]*(?:\.\d+)?)"
UNIT = r"(?:\s*(?:ms|s|seconds?|min|%|MiB|MB|KiB|kB|GB|threads|workers|connections|entries|requests|req/s))?"
WINDOW = 120        # characters after a knob's name (or before it) in which a default statement counts
AFTER = [           # matched at the start of the text after the knob's name (its closing backtick dropped)
    re.compile(rf"\s+{NUMBER}(?![\w.-])(?!\s*[-–…])"),                                     # `knob` 10
    # knob (200), (default 5), (unset: 150)
    re.compile(rf"\s*\(\s*(?:(?:default|unset)s?\s*:?\s*|defaults? to\s+)?{NUMBER}(?![\w.])"),
    re.compile(rf",\s*{NUMBER}{UNIT}\s*[);]"),                                               # `knob`, 20 ms)
]
ANYWHERE_AFTER = [  # searched in the rest of the clause after the knob's name
    # defaults to 5, (default 5), default: 5; not "default 20.6 ms/s": the default machine's
    re.compile(rf"(?:\(default\s*:?\s*|\bdefaults?\s+(?:to|is|of)\s+|\bdefault\s*[:=]\s*){NUMBER}(?![\w.])"),
    re.compile(rf"(?<![\w.]){NUMBER}{UNIT}\s*(?:by default|when unset|\(the default\)|is the default|\(default\))"),
]
BEFORE = re.compile(rf"(?<![\w.]){NUMBER}{UNIT},?\s*(?:by default|is the default|default)\s*[(,:]?\s*`?$")
CLAUSE_END = re.compile(r"\.\s|;|\|| — |\n\s*\n")


@dataclass(frozen=True)
class Statement:
    where: str      # file:line
    knob: str
    stated: float
    text: str


def catalog() -> dict[str, dict[str, Any]]:
    return knobs()


def expected(entry: dict[str, Any]) -> float | None:
    """The number a statement of the knob's default may state: the default, or for a null default the catalog's
    `unset` words when they are a number; None when the catalog gives no number (any stated number is drift)."""
    default = entry.get("default")
    if isinstance(default, int | float) and not isinstance(default, bool):
        return float(default)
    unset = str(entry.get("unset") or "").strip()
    if default is None and re.fullmatch(r"-?\d+(?:\.\d+)?", unset):
        return float(unset)
    return None


def _knob_names(names: list[str]) -> re.Pattern[str]:
    return re.compile(r"(?<![\w.$-])`?(" + "|".join(sorted(map(re.escape, names), key=len, reverse=True)) + r")\b`?")


def statements(text: str, names: list[str], where: str = "", first_line: int = 1) -> list[Statement]:
    """Every number the text states as a catalog knob's default, with the knob it is about."""
    found = []
    pattern = _knob_names(names)
    hits = list(pattern.finditer(text))
    for k, hit in enumerate(hits):
        end = hits[k + 1].start() if k + 1 < len(hits) else len(text)
        after = text[hit.end():min(end, hit.end() + WINDOW)]
        clause = after[:m.start()] if (m := CLAUSE_END.search(after)) else after
        begin = hits[k - 1].end() if k else 0
        before = text[max(begin, hit.start() - WINDOW):hit.start()]
        ends = list(CLAUSE_END.finditer(before))
        before = before[ends[-1].end():] if ends else before
        numbers = [m.group(1) for p in AFTER if (m := p.match(after))]
        numbers += [m.group(1) for p in ANYWHERE_AFTER for m in p.finditer(clause)]
        numbers += [m.group(1) for m in BEFORE.finditer(before)]
        line = first_line + text.count("\n", 0, hit.start())
        for number in dict.fromkeys(numbers):
            found.append(Statement(f"{where}:{line}", hit.group(1), float(number.replace(",", "")),
                                   text[hit.start():hit.end() + 40].replace("\n", " ")))
    return found


def drifted(found: list[Statement], cat: dict[str, dict[str, Any]]) -> list[str]:
    return [f"{s.where}: {s.knob} stated as {s.stated:g} ({s.text!r}), the catalog says "
            f"{cat[s.knob].get('default')!r}" + (f" (unset: {cat[s.knob]['unset']!r})" if cat[s.knob].get("unset")
                                                 else "")
            for s in found if expected(cat[s.knob]) != s.stated]


def python_texts(path: Path) -> list[tuple[int, str]]:
    """(line, text) of every docstring, string and comment of a Python file (runs of comment lines joined)."""
    source = path.read_text(encoding="utf-8")
    texts = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            texts.append((node.lineno, node.value))
    comment_line, comment = 0, []
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            if comment and token.start[0] != comment_line + len(comment):
                texts.append((comment_line, " ".join(comment)))
                comment = []
            comment_line = comment_line if comment else token.start[0]
            comment.append(token.string.lstrip("#").strip())
    if comment:
        texts.append((comment_line, " ".join(comment)))
    return texts


def text_drift(paths: list[Path], cat: dict[str, dict[str, Any]]) -> tuple[list[Statement], list[str]]:
    names = list(cat)
    found: list[Statement] = []
    for path in paths:
        if path.suffix == ".py":
            for line, text in python_texts(path):
                found += statements(text, names, str(path), line)
        else:
            found += statements(path.read_text(encoding="utf-8"), names, str(path))
    return found, drifted(found, cat)


def _literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is not None
    if isinstance(node, ast.UnaryOp) and isinstance(node.operand, ast.Constant):
        return True
    return isinstance(node, ast.List | ast.Tuple | ast.Set) and all(map(_literal, node.elts))


def _knob_key(node: ast.AST | None, names: set[str]) -> str | None:
    return node.value if isinstance(node, ast.Constant) and node.value in names else None


def hand_copies(source: str, names: set[str], where: str = "") -> list[str]:
    """Knob defaults written in code: {"knob": 150}, dict(knob=150), .get("knob", 150), get("knob") or 150."""
    out = []
    for node in ast.walk(ast.parse(source)):
        pairs: list[tuple[str | None, ast.AST]] = []
        if isinstance(node, ast.Dict):
            pairs = [(_knob_key(k, names), v) for k, v in zip(node.keys, node.values, strict=True)]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict":
            pairs = [(kw.arg if kw.arg in names else None, kw.value) for kw in node.keywords]
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" \
                and len(node.args) == 2:
            pairs = [(_knob_key(node.args[0], names), node.args[1])]
        elif isinstance(node, ast.BoolOp) and isinstance(node.op, ast.Or) and len(node.values) == 2 \
                and isinstance(node.values[0], ast.Call) and node.values[0].args:
            pairs = [(_knob_key(node.values[0].args[0], names), node.values[1])]
        out += [f"{where}:{node.lineno}: {knob} = {ast.unparse(value)}" for knob, value in pairs
                if knob is not None and _literal(value)]
    return out


def report_modules() -> list[Path]:
    return sorted(p for p in REPORT.rglob("*.py") if "tests" not in p.relative_to(REPORT).parts)


# --- the checks ---

def test_no_module_holds_a_copy_of_knob_defaults():
    names = set(catalog())
    copies = [c for p in report_modules() for c in hand_copies(p.read_text(encoding="utf-8"), names, str(p))]
    assert not copies, "knob defaults written in code (read them with report/read/knobs.py instead): " + \
        "; ".join(copies)


def test_every_default_the_readme_and_the_code_state_is_the_catalogs():
    texts = [README] + report_modules() + sorted(p for p in (REPORT / "tests").rglob("*.py") if p != HERE)
    _, drift = text_drift(texts, catalog())
    assert not drift, "defaults that differ from ansible/knobs.yml:\n" + "\n".join(drift)


def test_the_text_check_reads_the_readmes_statements():
    """Guards the check above: it finds the defaults the README does state (a check that finds none passes
    anything)."""
    found, _ = text_drift([README], catalog())
    stated = {(s.knob, s.stated) for s in found}
    assert {("tomcat_threads_max", 200), ("tomcat_max_connections", 8192), ("tomcat_accept_count", 100),
            ("httpd_max_request_workers", 150), ("pcp_interval_s", 5), ("pcp_openmetrics_interval_s", 20),
            ("profiler_interval_ms", 20)} <= stated, stated


# --- the checks can fail ---

@pytest.mark.parametrize("right, wrong", [
    ("(every `pcp_interval_s`, 5 s by default)", "(every `pcp_interval_s`, 1 s by default)"),
    ("knob `tomcat_threads_max` (200)", "knob `tomcat_threads_max` (250)"),
    ("knob `httpd_max_request_workers` (unset: 150)", "knob `httpd_max_request_workers` (unset: 256)"),
    ("(`pcp_openmetrics_interval_s`, 20 s by default:", "(`pcp_openmetrics_interval_s`, 10 s when unset:"),
    ("`profiler_interval_ms`, 20 ms)", "`profiler_interval_ms`, 10 ms)"),
])
def test_a_drifted_default_planted_in_the_readme_is_reported(tmp_path, right, wrong):
    text = README.read_text(encoding="utf-8")
    assert right in text
    planted = tmp_path / "README.md"
    planted.write_text(text.replace(right, wrong, 1), encoding="utf-8")
    _, drift = text_drift([planted], catalog())
    assert len(drift) == 1 and drift[0].split(": ", 2)[1].startswith(wrong.split("`")[1]), drift


@pytest.mark.parametrize("planted", [
    '"""pcp_interval_s as the machine had it: its manifest, then its knobs.json, else 1 s (the default)."""\n',
    "# pcp_openmetrics_interval_s defaults to 10\nX = 1\n",
    '"""The accept queue (`tomcat_accept_count` 50) and `pcp_interval_s` 2."""\n',
])
def test_a_drifted_default_planted_in_a_docstring_or_comment_is_reported(tmp_path, planted):
    module = tmp_path / "module.py"
    module.write_text(planted, encoding="utf-8")
    _, drift = text_drift([module], catalog())
    assert drift, planted


def test_a_hand_copied_default_planted_in_code_is_reported(tmp_path):
    names = set(catalog())
    copies = hand_copies('KNOB_DEFAULTS = {"httpd_max_request_workers": 150, "pcp_openmetrics_interval_s": 10}\n'
                         'x = knobs.get("pcp_interval_s", 1)\n'
                         'y = dict(tomcat_threads_max=200)\n'
                         'z = knobs.get("httpd_proxy_protocol") or "http"\n', names, "planted.py")
    assert [c.split(": ", 1)[1] for c in copies] == [
        "httpd_max_request_workers = 150", "pcp_openmetrics_interval_s = 10", "pcp_interval_s = 1",
        "tomcat_threads_max = 200", "httpd_proxy_protocol = 'http'"], copies
    assert hand_copies('knobs = {"tomcat_threads_max": value, "jvm_gc": None}\n', names) == []
