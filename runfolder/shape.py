"""The shape a JSON file of a run folder must have where it is read (run.json, verdict.json, sweep.json, tune.json):
each field's type, checked before any of it is used, so a field of another type is named (file, field) instead of
failing somewhere deep in a reader. Fields not in a shape are not checked (no reader relies on them). The shapes
themselves: runfolder/schema.py."""
from __future__ import annotations

from typing import Any

# a shape: a type or a tuple of types; a dict {field: shape} (an object whose named fields have those shapes);
# ListOf(shape) (a list of such items); MapOf(shape) (an object whose every value has that shape)
Shape = Any
NUMBER = (int, float)       # bool is an int in Python: refused apart (see _fits)


class ListOf:
    def __init__(self, item: Shape) -> None:
        self.item = item


class MapOf:
    def __init__(self, value: Shape) -> None:
        self.value = value


_NAMES = {dict: "an object", list: "a list", str: "a string", int: "a number", float: "a number", bool: "true or false",
          type(None): "null"}


def _what(value: Any) -> str:
    return "true or false" if isinstance(value, bool) else _NAMES.get(type(value), type(value).__name__)


def _expected(shape: Shape) -> str:
    if isinstance(shape, dict | MapOf):
        return "an object"
    if isinstance(shape, ListOf):
        return "a list"
    kinds = shape if isinstance(shape, tuple) else (shape,)
    return " or ".join(dict.fromkeys(_NAMES[k] for k in kinds))


def _fits(value: Any, shape: Shape) -> bool:
    if isinstance(shape, dict | MapOf):
        return isinstance(value, dict)
    if isinstance(shape, ListOf):
        return isinstance(value, list)
    kinds = shape if isinstance(shape, tuple) else (shape,)
    if isinstance(value, bool):
        return bool in kinds
    return isinstance(value, kinds)


def check(value: Any, shape: Shape, where: str = "") -> tuple[Any, list[str]]:
    """(value without what does not fit, [problem]): a field that does not fit its shape is dropped (as if it
    were absent, which every reader handles) and named: "`design.configurations` is a list, not an object".
    null fits everywhere: it means "not said", as an absent field does."""
    if value is None:
        return None, []
    if not _fits(value, shape):
        return None, [f"`{where or '(the whole file)'}` is {_what(value)}, not {_expected(shape)}"]
    problems: list[str] = []
    if isinstance(shape, dict):
        out = dict(value)
        for key, sub in shape.items():
            if key in out:
                out[key], found = check(out[key], sub, f"{where}.{key}" if where else key)
                problems += found
                if found and out[key] is None:
                    del out[key]
        return out, problems
    if isinstance(shape, MapOf):
        out = {}
        for key, item in value.items():
            out[key], found = check(item, shape.value, f"{where}.{key}" if where else key)
            problems += found
            if found and out[key] is None:
                del out[key]
        return out, problems
    if isinstance(shape, ListOf):
        items = []
        for i, item in enumerate(value):
            kept, found = check(item, shape.item, f"{where}[{i}]")
            problems += found
            if not found:
                items.append(kept)
        return items, problems
    return value, problems


def read_checked(path, shape: Shape, required: tuple[str, ...], bad: type[Exception]) -> tuple[Any, list[str]]:
    """A JSON file read whole (sweep.json, tune.json): (its value without what does not fit, [problem]),
    a required field missing named too; `bad` raised, naming the file, when it cannot be read at all."""
    import json
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise bad(f"{path}: cannot be read ({e})") from e
    data, problems = check(raw, shape) if isinstance(raw, dict) else (None, ["`(the whole file)` is not an object"])
    if data is not None:
        problems += [f"`{k}` is missing" for k in required if data.get(k) is None]
    return data, problems
