"""What the lab hands Ansible from its users (knob values, a knob set's, a service descriptor's) as data, never as
code: Ansible renders a string of its extra vars as a template when a task reads it, on the controller, as root, so a
value `{{ lookup('pipe', …) }}` would run a command there. Every string is handed over marked unsafe
(`{"__ansible_unsafe": text}` in JSON, which ansible-core 2.19 reads as a string it never renders); roles read the
text as typed. Keys are left as they are: Ansible does not render a mapping's keys."""
from __future__ import annotations

import json

UNSAFE = "__ansible_unsafe"


def marked(value):
    """value with every string in it, at any depth, marked unsafe; numbers, booleans and null as they are."""
    if isinstance(value, str):
        return {UNSAFE: value}
    if isinstance(value, dict):
        return {key: marked(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [marked(item) for item in value]
    return value


def extra_vars(values: dict) -> str:
    """values as one JSON text for `-e` (or an `@file`), every string of theirs marked unsafe."""
    return json.dumps(marked(values))
