"""summary.md, as the lab prints part of it: its first table (the verdict figures)."""
from __future__ import annotations

FILE = "summary.md"


def results_table(markdown: str) -> str:
    """The summary's first table (the verdict figures), for the terminal; '' when it has none."""
    lines = markdown.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        return ""
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")), len(lines))
    return "\n".join(lines[start:end])
