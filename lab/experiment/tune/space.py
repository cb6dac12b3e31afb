"""The knob space a tune searches: for each knob a range, {low, high[, log: true][, step: N]} for a number or a list
of values (choices, true/false, null for the knob's "unset"), declared beside the knob in the catalog
(ansible/knobs.yml `tune:`, one place as every knob) or in a space file (YAML: knob: range), which may only narrow
what the knob takes. `parse()` refuses, naming the knob, a range the knob cannot take.

Define-by-run (issue 54): the rules between knobs shape what is proposed instead of refusing it afterwards. A
number's range may be bounded by knobs proposed before it, `at_most`/`at_least`: a knob or a product of knobs
("httpd_server_limit * httpd_threads_per_child": HTTPD's MaxRequestWorkers ≤ ServerLimit × ThreadsPerChild), and a
knob may be searched only `when` earlier knobs have given values ({values: [nio, apr], when: {httpd_proxy_protocol:
ajp}}: the AJP connector means nothing over HTTP); elsewhere it is left out and the base set's value stays. The
knobs are proposed in an order where every bound and condition is known first; `parse()` refuses a bound that names
a knob outside the space, a cycle, or a bound that could leave a range empty."""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from dataclasses import dataclass
from graphlib import CycleError, TopologicalSorter
from pathlib import Path

import yaml

from lab.errors import BadInput
from lab.experiment.tune import model


class SpaceError(BadInput):
    """A space the lab cannot search; the message names the knob and why."""


@dataclass(frozen=True)
class Param:
    knob: str
    kind: str                            # int, float or choice
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: float | None = None
    choices: tuple = ()
    at_most: tuple[str, ...] = ()        # a product of knobs proposed before it that bounds it (define-by-run)
    at_least: tuple[str, ...] = ()
    when: tuple[tuple[str, tuple], ...] = ()     # (knob, its values): searched only where each earlier knob has one
    unset: float | None = None           # what a set that leaves the knob unset is searched as (its range says)

    @property
    def needs(self) -> set[str]:
        """The knobs this one's range or condition reads."""
        return {*self.at_most, *self.at_least, *(k for k, _ in self.when)}

    def searched(self, values: dict) -> bool:
        """Whether the knob is searched beside these earlier values (its `when`)."""
        return all(k in values and values[k] in allowed for k, allowed in self.when)

    def bounds(self, values: dict) -> tuple[float, float]:
        """Its range beside the earlier values: the static one, narrowed by at_most/at_least where they are known
        (on a step's grid from low)."""
        low, high = self.low, self.high
        if self.at_most and all(k in values for k in self.at_most):
            high = min(high, math.prod(values[k] for k in self.at_most))
        if self.at_least and all(k in values for k in self.at_least):
            low = max(low, math.prod(values[k] for k in self.at_least))
        if self.step and (low, high) != (self.low, self.high):
            low = self.low + math.ceil((low - self.low) / self.step) * self.step
            high = self.low + math.floor((high - self.low) / self.step) * self.step
        return low, high

    @property
    def bounded(self) -> bool:
        """Its range depends on knobs proposed before it (at_most/at_least)."""
        return bool(self.at_most or self.at_least)

    def contains(self, value, values: dict | None = None) -> bool:
        if self.kind == "choice":
            return value in self.choices
        low, high = self.bounds(values or {})
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not low <= value <= high:
            return False
        return self.kind == "float" or (value - self.low) % (self.step or 1) == 0

    def describe(self) -> str:
        if self.kind == "choice":
            said = " | ".join("null" if c is None else str(c).lower() if isinstance(c, bool) else str(c)
                              for c in self.choices)
        else:
            said = f"{self.low:g}–{self.high:g}" + (" (log)" if self.log else "") + (f" step {self.step:g}"
                                                                                     if self.step else "")
            said += "".join(f", {word} {' × '.join(knobs)}" for word, knobs in
                            (("≤", self.at_most), ("≥", self.at_least)) if knobs)
        return said + "".join(f", when {k} is {' or '.join(map(str, allowed))}" for k, allowed in self.when)


@dataclass(frozen=True)
class Space:
    params: tuple[Param, ...]

    @property
    def knobs(self) -> list[str]:
        return [p.knob for p in self.params]

    def suggest(self, trial) -> dict:
        """A candidate, define-by-run: every knob proposed by the sampler in every trial on a scale of its own
        (model.py: one joint model of all the knobs), each decoded within what the knobs before it leave it (parse()
        put the params in that order); a knob whose `when` does not hold is left out (the base set's value stays)."""
        values: dict = {}
        for p in self.params:
            x = model.proposed(trial, p)
            if p.searched(values):
                values[p.knob] = model.decode(p, x, values)
        return values

    def encode(self, values: dict) -> dict:
        """A candidate as the sampler's parameters (a run the study did not propose: a known set, a past run)."""
        return {p.knob: model.encode(p, values[p.knob], values) if p.knob in values else model.idle(p)
                for p in self.params}

    def decode(self, params: dict) -> dict:
        """The candidate the sampler's parameters stand for."""
        values: dict = {}
        for p in self.params:
            if p.searched(values) and p.knob in params:
                values[p.knob] = model.decode(p, params[p.knob], values)
        return values

    def fitted(self, refuses: Callable[[str, object], str | None]) -> tuple[Space, dict[str, str]]:
        """The space a service can take: each value `refuses` (knob, value → why not, None) leaves out dropped from a
        list, a knob with fewer than two values left (or whose range's ends are refused) dropped, and so is a knob
        whose bound or condition reads a dropped one; (the space, {knob: why it was left out})."""
        kept, left = [], {}
        for p in self.params:               # in order: what a knob reads comes before it
            gone = sorted(k for k in p.needs if k in left)
            kept_choices = {q.knob: q.choices for q in kept if q.kind == "choice"}
            never = [k for k, allowed in p.when if k in kept_choices and not set(allowed) & set(kept_choices[k])]
            if gone or never:
                left[p.knob] = (f"its bound or condition reads {', '.join(gone)}, left out" if gone else
                                f"searched only when {never[0]} is {' or '.join(map(str, dict(p.when)[never[0]]))}, "
                                "a value left out")
                continue
            if p.kind == "choice":
                why = {c: refuses(p.knob, c) for c in p.choices}
                takes = tuple(c for c in p.choices if why[c] is None)
                if len(takes) >= 2:
                    kept.append(dataclasses.replace(p, choices=takes))
                    left |= {f"{p.knob}={c}": w for c, w in why.items() if w}
                    continue
                left[p.knob] = next(w for w in why.values() if w)
                continue
            why = refuses(p.knob, p.low) or refuses(p.knob, p.high)
            if why:
                left[p.knob] = why
            else:
                kept.append(p)
        return Space(tuple(kept)), left

    def distributions(self) -> dict:
        """Each knob's distribution as the sampler models it (model.py)."""
        return {p.knob: model.of(p) for p in self.params}

    def contains(self, values: dict) -> bool:
        """Whether the space could have proposed these values: each searched knob within its range beside the
        others, and no knob whose `when` does not hold."""
        wanted = [p for p in self.params if p.searched(values)]
        return (set(values) == {p.knob for p in wanted}
                and all(p.contains(values[p.knob], values) for p in wanted))


def _takes(knob: str, spec: dict, value) -> bool:
    """Whether the knob itself takes the value (its type, range, choices, also, unset)."""
    if value is None:
        return "unset" in spec
    if isinstance(value, (list, dict)):         # a space chooses among single values (a list is unhashable)
        return False
    if value in (spec.get("also") or {}):
        return True
    kind = spec["type"]
    if kind == "bool":
        return isinstance(value, bool)
    if kind in ("int", "num"):
        if (isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value)
                or (kind == "int" and value != int(value))):
            return False
        low, high = spec.get("range", (float("-inf"), float("inf")))
        return low <= value <= high
    choices = spec.get("choices")
    return kind == "str" and isinstance(value, str) and (not choices or value in choices)


def param(knob: str, raw, spec: dict | None) -> Param:
    """One knob's range, checked against what the knob takes (its bounds and condition: parse())."""
    if spec is None:
        raise SpaceError(f"{knob}: not a knob of ansible/knobs.yml")
    when: tuple = ()
    if isinstance(raw, dict) and "values" in raw:         # a list of values with a condition
        if set(raw) - {"values", "when"}:
            raise SpaceError(f"{knob}: a list with a condition is {{values: [...], when: {{knob: value}}}}, "
                             f"got {raw!r}")
        raw, when = raw["values"], _when(knob, raw.get("when"))
    elif isinstance(raw, dict) and "when" in raw:
        raw, when = {k: v for k, v in raw.items() if k != "when"}, _when(knob, raw["when"])
    if isinstance(raw, list):
        if len(raw) < 2 or len(set(map(repr, raw))) != len(raw):
            raise SpaceError(f"{knob}: a list of at least two different values, got {raw!r}")
        bad = [v for v in raw if not _takes(knob, spec, v)]
        if bad:
            raise SpaceError(f"{knob}: {bad[0]!r} is not a value the knob takes")
        return Param(knob, "choice", choices=tuple(raw), when=when)
    if (not isinstance(raw, dict) or not {"low", "high"} <= set(raw)
            or set(raw) - {"low", "high", "log", "step", "at_most", "at_least", "unset"}):
        raise SpaceError(f"{knob}: a range is {{low, high[, log: true][, step: N][, at_most: K][, at_least: K]"
                         f"[, when: {{knob: value}}][, unset: N]}} or a list of values, got {raw!r}")
    if spec["type"] not in ("int", "num"):
        raise SpaceError(f"{knob}: a {spec['type']} knob takes a list of values, not a range")
    low, high, log, step = raw["low"], raw["high"], raw.get("log", False), raw.get("step")
    if not (_takes(knob, spec, low) and _takes(knob, spec, high)) or low >= high:
        raise SpaceError(f"{knob}: {low}–{high} is not a range of the knob's values ({spec.get('range')})")
    if log and (low <= 0 or step not in (None, 1)):
        raise SpaceError(f"{knob}: a log range needs low > 0 and no step")
    if step is not None and (not isinstance(step, (int, float)) or step <= 0 or (high - low) % step):
        raise SpaceError(f"{knob}: step {step!r} must divide {high} − {low}")
    unset = raw.get("unset")
    if unset is not None and ("unset" not in spec or not _takes(knob, spec, unset) or not low <= unset <= high
                              or (step and (unset - low) % step)):
        raise SpaceError(f"{knob}: unset {unset!r} is not a value of the range {low}–{high}"
                         + (f" step {step}" if step else "") + " for a knob that may be unset")
    return Param(knob, "int" if spec["type"] == "int" else "float", low, high, bool(log), step,
                 at_most=_product(knob, raw.get("at_most")), at_least=_product(knob, raw.get("at_least")), when=when,
                 unset=unset)


def _product(knob: str, raw) -> tuple[str, ...]:
    """A bound's knobs: one knob's name, or their product written "a * b"."""
    if raw is None:
        return ()
    names = tuple(part.strip() for part in str(raw).replace("×", "*").split("*"))
    if not isinstance(raw, str) or not all(names):
        raise SpaceError(f"{knob}: a bound is a knob or a product of knobs (\"a * b\"), got {raw!r}")
    return names


def _when(knob: str, raw) -> tuple[tuple[str, tuple], ...]:
    if not isinstance(raw, dict) or not raw:
        raise SpaceError(f"{knob}: when is a mapping of knob: value (or a list of values), got {raw!r}")
    return tuple((k, tuple(v) if isinstance(v, list) else (v,)) for k, v in raw.items())


def _ordered(params: list[Param]) -> tuple[Param, ...]:
    """The params in an order where each knob's bounds and condition are proposed before it (the space's own order
    where it may), after checking that they name numeric knobs of the space and cannot leave a range empty."""
    by_knob = {p.knob: p for p in params}
    for p in params:
        for k in sorted(p.needs):
            if k not in by_knob:
                raise SpaceError(f"{p.knob}: its bound or condition names {k}, which the space does not search")
        for k in (*p.at_most, *p.at_least):
            if by_knob[k].kind == "choice" or by_knob[k].low <= 0:
                raise SpaceError(f"{p.knob}: a bound's knob {k} must be searched as a positive range")
        if p.at_most and math.prod(by_knob[k].low for k in p.at_most) < p.low:
            raise SpaceError(f"{p.knob}: at_most {' × '.join(p.at_most)} can be "
                             f"{math.prod(by_knob[k].low for k in p.at_most):g}, under its low {p.low:g}")
        if p.at_least and math.prod(by_knob[k].high for k in p.at_least) > p.high:
            raise SpaceError(f"{p.knob}: at_least {' × '.join(p.at_least)} can be "
                             f"{math.prod(by_knob[k].high for k in p.at_least):g}, over its high {p.high:g}")
        if p.at_most and p.at_least:            # the narrowest the two can leave must still hold a value
            most = math.prod(by_knob[k].low for k in p.at_most)
            least = math.prod(by_knob[k].high for k in p.at_least)
            low, high = p.bounds({**{k: by_knob[k].low for k in p.at_most},
                                  **{k: by_knob[k].high for k in p.at_least}})
            if low > high:
                raise SpaceError(f"{p.knob}: at_least {' × '.join(p.at_least)} (up to {least:g}) and at_most "
                                 f"{' × '.join(p.at_most)} (down to {most:g}) can leave no value")
    order = TopologicalSorter({p.knob: sorted(p.needs) for p in params})
    try:
        order.prepare()
    except CycleError as e:
        raise SpaceError(f"bounds or conditions in a circle: {' → '.join(e.args[1])}") from None
    out, position = [], {p.knob: i for i, p in enumerate(params)}
    while order.is_active():
        ready = sorted(order.get_ready(), key=position.get)
        out += ready
        order.done(*ready)
    return tuple(by_knob[k] for k in out)


def parse(raw: dict, specs: dict[str, dict]) -> Space:
    if not isinstance(raw, dict) or not raw:
        raise SpaceError("a space is a mapping of knob: range, with at least one knob")
    return Space(_ordered([param(knob, value, specs.get(knob)) for knob, value in raw.items()]))


def from_catalog(specs: dict[str, dict]) -> Space:
    """The catalog's tuning-relevant knobs: those with a `tune:` range, in the catalog's order."""
    return parse({k: s["tune"] for k, s in specs.items() if "tune" in s}, specs)


def from_file(path: Path, specs: dict[str, dict]) -> Space:
    try:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as e:
        raise SpaceError(f"{path}: cannot be read as YAML ({e})") from None
    try:
        return parse(raw, specs)
    except SpaceError as e:
        raise SpaceError(f"{path}: {e}") from None
