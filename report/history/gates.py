"""Gates for a pipeline: `tps>=+10%`, `errors<=0.1%`, `p99<=2s`, … judged on a run's (or a series') verdict; a
failed gate makes the command exit 3, and a JUnit XML file says the same to a CI system.

What a gate reads:
- a relative figure (`tps>=+10%`, `p99<=+5%`): the tuned-vs-default effect, judged on its 95 % interval's bound —
  the lower bound for `>=`, the upper for `<=` — so a pass is what the data show, not what the estimate hopes: a
  run too noisy to tell fails, and says "not shown" (the estimate alone would pass a noisy run half the time);
- an error difference (`errors<=+0.5pt`): the same, on the difference's interval;
- a level (`errors<=0.1%`, `p99<=2s`, `tps>=30/s`, `cpu<=2ms`: the JVM's CPU per successful request): the tuned
  configuration's own figure over the measured window, judged on its own 95 % interval's bound in the same way
  (verdict.json `tuned_ci`: the block bootstrap of that machine's windows, so an error burst widens it): a 0.2 %
  error rate measured on a short run does not pass `errors<=0.1%` by luck; a verdict without that interval (an
  older folder, too few windows) shows nothing.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from xml.sax.saxutils import escape, quoteattr

from report.fmt import UNITS
from report.history.index import as_change

FIGURES = {"tps": "tps", "p99": "p99", "p95": "p95", "p50": "p50", "errors": "error_pct", "cpu": "cpu"}
LEVEL_UNITS = {**{f: f" {u}" for f, u in UNITS.items()}, "tps": "/s"}    # a level's unit, as a gate reads it
GATE = re.compile(r"^\s*(?P<figure>[a-z0-9]+)\s*(?P<op><=|>=)\s*(?P<value>[+-]?\d+(?:\.\d+)?)\s*"
                  r"(?P<unit>%|pt|ms|s|/s)?\s*$")
FAILED_EXIT = 3


class GateError(ValueError):
    """A gate that cannot be read, with why."""


@dataclass(frozen=True)
class Gate:
    text: str
    figure: str             # the verdict's name: tps, p99, error_pct, …
    op: str                 # <= or >=
    value: float
    reads: str              # effect or level


@dataclass(frozen=True)
class Outcome:
    gate: Gate
    passed: bool
    judged: float | None    # the figure the gate compared (the bound, or the level)
    detail: str


def parse(text: str) -> Gate:
    m = GATE.match(text)
    if not m:
        raise GateError(f"gate {text!r}: expected FIGURE<=VALUE or FIGURE>=VALUE with a unit, e.g. 'tps>=+10%', "
                        "'errors<=0.1%', 'errors<=+0.5pt', 'p99<=2s'")
    name, op, raw, unit = m["figure"], m["op"], m["value"], m["unit"] or ""
    if name not in FIGURES:
        raise GateError(f"gate {text!r}: unknown figure {name!r} (one of {', '.join(FIGURES)})")
    value, signed = float(raw), raw[0] in "+-"
    if name == "errors":
        if unit == "pt":
            return Gate(text, "error_pct", op, value, "effect")
        if unit == "%" and not signed:
            return Gate(text, "error_pct", op, value, "level")
        raise GateError(f"gate {text!r}: errors take a level in % (errors<=0.1%) or a difference in points "
                        "(errors<=+0.5pt)")
    if unit == "%" and signed:
        return Gate(text, FIGURES[name], op, value, "effect")
    if name == "tps" and unit == "/s" and not signed:
        return Gate(text, "tps", op, value, "level")
    if name != "tps" and unit in ("ms", "s") and not signed:
        return Gate(text, FIGURES[name], op, value * (1000 if unit == "s" else 1), "level")
    raise GateError(f"gate {text!r}: a relative change needs a sign and % (e.g. {name}>=+10%); a level needs "
                    + ("/s (tps>=30/s)" if name == "tps" else "ms or s (p99<=2s)") + ", without a sign")


def judge(gate: Gate, effects: dict) -> Outcome:
    """One gate on a verdict's effects (verdict.json "effects")."""
    f = effects.get(gate.figure) or {}
    if gate.reads == "level":
        return _judge_level(gate, f)
    if any(f.get(k) is None for k in ("estimate", "low", "high")):
        return Outcome(gate, False, None, f"no interval of {gate.figure} in this verdict: nothing shown")
    est, low, high, unit = as_change(f)
    return _on_bound(gate, est, low, high, f"{_signed(est)} {unit} (95 % CI {_signed(low)} … {_signed(high)} {unit})",
                     "estimate")


def _judge_level(gate: Gate, f: dict) -> Outcome:
    level, ci = f.get("tuned"), f.get("tuned_ci") or {}
    if level is None:
        return Outcome(gate, False, None, f"no level of {gate.figure} for the tuned configuration in this verdict")
    unit = LEVEL_UNITS.get(gate.figure, "")
    reading = f"tuned's {gate.figure} {_level(level)}{unit}"
    if ci.get("low") is None or ci.get("high") is None:
        return Outcome(gate, False, None, f"{reading} without an interval in this verdict: nothing shown")
    return _on_bound(gate, level, ci["low"], ci["high"],
                     f"{reading} (95 % CI {_level(ci['low'])} … {_level(ci['high'])}{unit})", "level")


def _level(x: float) -> str:
    """A level as read at a glance: three significant figures, whole from 100 on (457, not 457.113; 0.25)."""
    return f"{x:,.0f}" if abs(x) >= 100 else f"{x:.3g}"


def _on_bound(gate: Gate, point: float, low: float, high: float, reading: str, what: str) -> Outcome:
    """A gate judged on the bound of the interval a claim must clear: the lower one for >=, the upper for <=."""
    bound = low if gate.op == ">=" else high
    detail = f"{reading}: judged on the {'lower' if gate.op == '>=' else 'upper'} bound"
    if not _meets(gate, bound) and _meets(gate, point):
        detail += f"; the {what} passes but the interval does not: not shown"
    return Outcome(gate, _meets(gate, bound), bound, detail)


def _meets(gate: Gate, x: float) -> bool:
    return x >= gate.value if gate.op == ">=" else x <= gate.value


def _signed(x: float) -> str:
    return f"{'+' if x >= 0 else '−'}{abs(x):.1f}"


def judge_all(gates: list[Gate], effects: dict) -> list[Outcome]:
    return [judge(g, effects) for g in gates]


def markdown(outcomes: list[Outcome]) -> str:
    rows = "\n".join(f"| `{o.gate.text}` | {'pass' if o.passed else '**FAIL**'} | {o.detail} |" for o in outcomes)
    failed = sum(not o.passed for o in outcomes)
    verdict = f"{failed} of {len(outcomes)} failed" if failed else f"all {len(outcomes)} passed"
    return f"## Gates: {verdict}\n\n| gate | outcome | on |\n| --- | --- | --- |\n{rows}\n"


def junit(outcomes: list[Outcome], suite: str) -> str:
    """JUnit XML (one testsuite, a testcase per gate) as CI systems read it."""
    failed = sum(not o.passed for o in outcomes)
    cases = []
    for o in outcomes:
        body = "" if o.passed else f"<failure message={quoteattr(o.detail)}>{escape(o.detail)}</failure>"
        cases.append(f'  <testcase classname={quoteattr("lab.gates." + suite)} name={quoteattr(o.gate.text)}>'
                     f"{body}</testcase>")
    return (f'<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name={quoteattr("lab gates: " + suite)} '
            f'tests="{len(outcomes)}" failures="{failed}" errors="0">\n' + "\n".join(cases) + "\n</testsuite>\n")
