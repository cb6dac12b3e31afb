"""Whether two run folders say the same things but for their figures: summary.md, verdict.json and run.json (or
the sweep's sweep.md and sweep.json) compared with every number, time stamp and folder name blanked. What a change
that must not change behaviour is checked with (issue 51: before and after the core's reshaping).

    .venv/bin/python -m bench.same_shape RESULTS/<before> RESULTS/<after>

Prints, per file, the lines or JSON paths that differ (as unified diff lines for text, `path: before → after` for
JSON), and "same shape" where nothing does; exit 1 when anything differs."""
from __future__ import annotations

import difflib
import json
import re
import sys
from pathlib import Path

NUMBER = re.compile(r"[-+−]?\d[\d,.]*(?:e[-+]?\d+)?")
FILES = ("summary.md", "verdict.json", "run.json", "sweep.md", "sweep.json")


def blank(text: str) -> str:
    """Every number (and so every time stamp and run id) as #."""
    return NUMBER.sub("#", text)


def flat(value, path: str = "") -> dict[str, str]:
    """path → the blanked leaf value (lists indexed), for a readable difference of two JSON documents."""
    if isinstance(value, dict):
        return {k: v for key, item in value.items() for k, v in flat(item, f"{path}.{key}" if path else key).items()}
    if isinstance(value, list):
        return {k: v for i, item in enumerate(value) for k, v in flat(item, f"{path}[#]").items()} or {path: "[]"}
    return {path: blank(json.dumps(value, ensure_ascii=False))}


def differences(a: Path, b: Path, name: str) -> list[str]:
    left, right = a / name, b / name
    if not left.exists() and not right.exists():
        return []
    if left.exists() != right.exists():
        return [f"only in {'before' if left.exists() else 'after'}"]
    if name.endswith(".json"):
        one, two = flat(json.loads(left.read_text())), flat(json.loads(right.read_text()))
        return [f"{k}: {one.get(k, '(absent)')} → {two.get(k, '(absent)')}" for k in sorted(set(one) | set(two))
                if one.get(k) != two.get(k)]
    return [line for line in difflib.unified_diff(blank(left.read_text()).splitlines(),
                                                  blank(right.read_text()).splitlines(), lineterm="", n=0)
            if line[:1] in "+-" and not line.startswith(("+++", "---"))]


def main(argv: list[str]) -> int:
    a, b = Path(argv[0]), Path(argv[1])
    differ = False
    for name in FILES:
        found = differences(a, b, name)
        if found:
            differ = True
            print(f"== {name}: {len(found)} difference(s)")
            print("\n".join(f"  {line}" for line in found))
        elif (a / name).exists():
            print(f"== {name}: same shape")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
