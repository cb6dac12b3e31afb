"""Which variable names an Ansible role reads and which it defines itself, read from its files as text:
the names inside Jinja ({{ }}, {% %}) and in the raw expressions of when/that/loop/... keys; its defaults
and vars keys, set_fact keys, registers, task vars, loop variables, included vars, {% set %} names.
Only names of the lab's shape count (a tier or lab prefix): item, inventory_hostname, ... are Ansible's.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml

TIERED = re.compile(r"^(app|camel|tomcat|jvm|logback|httpd|mock|profiler|pcp|base|knobs|lab)_[a-z0-9_]+$")
EXPRESSION_KEYS = ("when", "that", "loop", "until", "changed_when", "failed_when", "with_items")
_JINJA = re.compile(r"\{\{(.*?)\}\}|\{%-?(.*?)-?%\}", re.S)
_QUOTED = re.compile(r"'[^']*'|\"[^\"]*\"")
_NAME = re.compile(r"(?<![\w.])([a-z][a-z0-9_]*)(?![\w(])")


def _names_in_expression(expr: str) -> set[str]:
    """Variable-like names of a Jinja expression, outside string literals and not attributes."""
    return {n for n in _NAME.findall(_QUOTED.sub(" ", expr)) if TIERED.match(n)}


def names_in_text(text: str) -> set[str]:
    """Variable-like names the Jinja expressions of a template text read."""
    found = set()
    for a, b in _JINJA.findall(text):
        found |= _names_in_expression(a or b)
    return found


def _walk(node, key=None):
    """(key, string) of every string in a YAML document, with the mapping key it sits under."""
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _walk(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v, key)
    elif isinstance(node, str):
        yield key, node


def names_in(node) -> set[str]:
    """The tiered names one parsed YAML value reads (its Jinja, and its bare expressions under when/that/...)."""
    found = set()
    for key, value in _walk(node):
        found |= names_in_text(value)
        if key in EXPRESSION_KEYS and "{{" not in value:
            found |= _names_in_expression(value)
    return found


def _names_in_yaml(text: str) -> set[str]:
    return set().union(*(names_in(doc) for doc in yaml.safe_load_all(text)))


def role_files(role: Path):
    """The files whose text a role reads names in (not files/, which it copies, nor its argument specs)."""
    for path in sorted(role.rglob("*")):
        if path.is_file() and path.name != "argument_specs.yml" and "files" not in path.relative_to(role).parts:
            yield path


def references(role: Path) -> set[str]:
    """The tiered names a role's tasks, templates, handlers, defaults and vars read."""
    found = set()
    for path in role_files(role):
        text = path.read_text()
        found |= _names_in_yaml(text) if path.suffix in (".yml", ".yaml") else names_in_text(text)
    return found


def role_definitions(role: Path) -> set[str]:
    """What a role defines itself: defaults and vars keys, set_fact keys, registers, {% set %} names."""
    found = set()
    for folder in ("defaults", "vars"):
        for path in (role / folder).glob("*.yml"):
            found |= set(yaml.safe_load(path.read_text()) or {})
    for path in (role / "tasks").glob("*.yml"):
        for task in _tasks(yaml.safe_load(path.read_text()) or []):
            found |= set(task.get("ansible.builtin.set_fact") or task.get("set_fact") or {})
            found |= {task["register"]} if "register" in task else set()
            found |= set(task.get("vars") or {})
            found |= {(task.get("loop_control") or {}).get(key) for key in ("loop_var", "index_var")}
            found |= _included(role, task.get("ansible.builtin.include_vars") or task.get("include_vars"))
    for path in (role / "templates").glob("*"):
        found |= set(re.findall(r"\{%-?\s*set\s+([a-z][a-z0-9_]*)", path.read_text()))
    return {n for n in found if isinstance(n, str)}


def from_outside(role: Path) -> set[str]:
    """The tiered names a role reads but does not define: its inputs (knobs, lab variables), or a typo."""
    return references(role) - role_definitions(role)


def _included(role: Path, spec) -> set[str]:
    """What an include_vars task defines: its `name`, or the keys of the file (another role's vars: a
    dependency stated in the task, e.g. roles/knobs reading roles/httpd/vars/main.yml)."""
    if not isinstance(spec, dict):
        return set()
    if "name" in spec:
        return {spec["name"]}
    target = Path(str(spec.get("file", "")).replace("{{ role_path }}", str(role))).resolve()
    return set(yaml.safe_load(target.read_text()) or {}) if target.is_file() else set()


def _tasks(items):
    for task in items:
        if isinstance(task, dict):
            yield task
            for key in ("block", "rescue", "always"):
                yield from _tasks(task.get(key) or [])
