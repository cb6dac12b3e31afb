"""The zoo's table (bench/zoo.py measures, this writes what it measured): a row per member and set, each verdict
figure with its 95 % interval, and a line per set saying where it holds, where it loses and where it gains."""
from __future__ import annotations

FIGURES = (("tps", "successful TPS"), ("error_pct", "errors"), ("p99", "p99"), ("cpu", "JVM CPU per request"))
HOLDS = 0.95                   # a set that loses nowhere: its lower bound against default at least this on every member
GAINS = 1.05                   # and it earns its name where its lower bound is at least this


def _fmt_effect(name: str, e: dict | None) -> str:
    if not e or e.get("estimate") is None:
        return "–"
    if name == "error_pct":
        low, high = e.get("low"), e.get("high")
        text = f"{e['estimate']:+.2f} pt" + (f" ({low:+.2f} … {high:+.2f})" if low is not None else "")
    else:
        pct = lambda r: f"{(r - 1) * 100:+.1f} %"          # noqa: E731
        text = pct(e["estimate"]) + (f" ({pct(e['low'])} … {pct(e['high'])})" if e.get("low") is not None else "")
    return text.replace("-", "−")          # the report's minus


def _bound(row: dict, figure: str, bound: str) -> float | None:
    return ((row.get("effects") or {}).get(figure) or {}).get(bound)


def summary(knob_set: str, rows: list[dict]) -> str:
    """Whether the set loses nowhere (its TPS lower bound ≥ HOLDS, its errors not clearly more) and where it gains."""
    lows = {r["member"]: low for r in rows if (low := _bound(r, "tps", "low")) is not None}
    highs = {r["member"]: _bound(r, "tps", "high") for r in rows if r["member"] in lows}
    missing = sorted({r["member"] for r in rows} - set(lows))
    holds = sorted(m for m, low in lows.items() if low >= HOLDS)
    under = sorted(m for m, high in highs.items() if high is not None and high < HOLDS)
    unshown = sorted(set(lows) - set(holds) - set(under))
    less = sorted(m for m, high in highs.items() if high is not None and high < 1)
    gaining = sorted(m for m, low in lows.items() if low >= GAINS)
    erring = sorted(r["member"] for r in rows if (_bound(r, "error_pct", "low") or 0) > 0)
    return (f"**{knob_set}** against default on {len(lows)} members"
            + (f" ({', '.join(missing)}: no verdict)" if missing else "")
            + f": lower bound of successful TPS ≥ {HOLDS:g} on " + ("every one" if len(holds) == len(lows) else
                                                                    f"{len(holds)} of {len(lows)}")
            + (f"; clearly under {HOLDS:g} on {', '.join(under)}" if under else "")
            + (f"; not shown either way on {', '.join(unshown)} (the interval spans {HOLDS:g})" if unshown else "")
            + (f"; clearly less than default on {', '.join(less)}" if less else "")
            + f"; ≥ {GAINS:g} on {len(gaining)} of {len(lows)}" + (f" ({', '.join(gaining)})" if gaining else "")
            + "; errors " + (f"clearly more on {', '.join(erring)}" if erring else "clearly more nowhere") + ".")


def table(rows: list[dict], skipped: dict[str, str] | None = None) -> str:
    """zoo.md: a row per member and set, then per set whether it holds everywhere and where it gains."""
    head = ["member", "stands for", "load", "set", *(label for _, label in FIGURES), "interval", "series"]
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    for r in rows:
        effects = r.get("effects")
        cells = ([_fmt_effect(n, (effects or {}).get(n)) for n, _ in FIGURES] if effects is not None
                 else [f"no verdict (start.sh exit {r['exit']})"] + ["–"] * (len(FIGURES) - 1))
        lines.append("| " + " | ".join([r["member"], r["stands_for"], r["load"], r["set"], *cells,
                                        r.get("intervals") or "–", r.get("series") or "–"]) + " |")
    for knob_set in dict.fromkeys(r["set"] for r in rows):
        lines += ["", summary(knob_set, [r for r in rows if r["set"] == knob_set])]
    for name, why in (skipped or {}).items():
        lines.append(f"\nNot run: **{name}**: {why}")
    return "\n".join(lines) + "\n"
