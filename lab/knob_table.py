"""The README's knob table, generated from the catalog (ansible/group_vars/all.yml: one line and one
comment per knob) and the tuned machine's changes (ansible/host_vars/tuned.yml).

  python -m lab.knob_table            print the table
  python -m lab.knob_table --write    put it in README.md between the knobs markers
"""
from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

import yaml

from lab import paths

CATALOG = paths.ROOT / "ansible" / "group_vars" / "all.yml"
TUNED = paths.ROOT / "ansible" / "host_vars" / "tuned.yml"
README = paths.ROOT / "README.md"
BEGIN, END = "<!-- knobs:begin -->", "<!-- knobs:end -->"

SECTION = re.compile(r"^# --- (?P<title>[^-].*?) -+$")
KNOB = re.compile(r"^(?P<name>[a-z][a-z0-9_]*):\s*(?P<value>.*?)\s+# (?P<comment>.*)$")


def _cell(text: str) -> str:
    return text.replace("|", "\\|").strip()


def _show(value) -> str:
    return "`" + (yaml.safe_dump(value, default_flow_style=True).strip().removesuffix("\n...")
                  if not isinstance(value, str) else value) + "`"


def table(catalog: str, tuned: dict) -> str:
    """Markdown: a heading per catalog section, a row per knob: knob, default, tuned (where it differs), what."""
    values = yaml.safe_load(catalog)
    sections: list[tuple[str, list[str]]] = []
    for line in catalog.splitlines():
        section, knob = SECTION.match(line), KNOB.match(line)
        if section:
            sections.append((section.group("title"), []))
        elif knob and knob.group("name") in values and sections:
            name = knob.group("name")
            differs = name in tuned and tuned[name] != values[name]
            sections[-1][1].append(f"| `{name}` | {_cell(_show(values[name]))} | "
                                   f"{_cell(_show(tuned[name])) if differs else ''} | {_cell(knob.group('comment'))} |")
    out = []
    for title, rows in sections:
        if rows:        # a section of comments only (the inventory's variables, the secrets) is no table
            out += ["", f"**{_cell(title)}**", "", "| knob | default | tuned | what; values; where it lands |",
                    "| --- | --- | --- | --- |", *rows]
    unknown = set(tuned) - set(values)
    if unknown:
        raise ValueError(f"host_vars/tuned.yml sets knobs the catalog does not have: {', '.join(sorted(unknown))}")
    return "\n".join(out).strip() + "\n"


def current_table() -> str:
    return table(CATALOG.read_text(), yaml.safe_load(TUNED.read_text()) or {})


def readme_with(readme: str, generated: str) -> str:
    if readme.count(BEGIN) != 1 or readme.count(END) != 1:
        raise ValueError(f"README.md must hold {BEGIN} and {END} once each")
    head, rest = readme.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{generated}{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lab.knob_table", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="update README.md in place")
    args = parser.parse_args(argv)
    try:
        generated = current_table()
        if args.write:
            README.write_text(readme_with(README.read_text(), generated))
        else:
            sys.stdout.write(generated)
    except ValueError as bad:
        print(f"knob_table: {bad}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
