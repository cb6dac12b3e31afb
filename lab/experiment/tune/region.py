"""A trust region (`./start.sh tune --around SET`, issue 54 item 1): the space narrowed around a knob set's values, so
that a handful of runs searches where an expert would look first instead of the whole catalog's ranges (the tune of
20261201T001345Z spent four of TPE's five random starts on fewer HTTPD workers than users, −14 … −79 %).

Each numeric range keeps SHARE of its span each way of the set's value (of its log span for a log range), on its
step's grid, the value itself inside; an unset knob is taken as the tuner searches it (trials.as_searched: the
range's `unset:`, or the catalog's numeric meaning of unset, the backend pool's 200); a list of values, and a knob
unset with no number to stand for it, stay as they are. A range bounded by other knobs (at_most/at_least) is
widened again where the bounding knobs' narrowed ranges could leave it empty, so the define-by-run rules hold as
they did.
"""
from __future__ import annotations

import dataclasses
import math

from lab.experiment.tune import trials
from lab.experiment.tune.space import Param, Space, SpaceError, _ordered
from lab.provision import catalog

SHARE = 0.25                # of a range's span, each way of the set's value


def _narrowed(p: Param, value, share: float) -> Param:
    """One range around a value as the tuner searches it (unchanged for a list, or a value the range cannot hold)."""
    if p.kind == "choice":
        return p
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not p.low <= value <= p.high:
        return p
    if p.log:
        reach = share * math.log(p.high / p.low)
        low, high = value * math.exp(-reach), value * math.exp(reach)
    else:
        reach = share * (p.high - p.low)
        low, high = value - reach, value + reach
    return _within(p, low, high)


def _within(p: Param, low: float, high: float) -> Param:
    """p with the range low … high, widened onto its grid (its step's from its low; an int's whole numbers) and
    clipped to its own range; p itself where that leaves no span."""
    grid = p.step or (1 if p.kind == "int" else None)
    if grid:
        low = p.low + math.floor((low - p.low) / grid) * grid
        high = p.low + math.ceil((high - p.low) / grid) * grid
    low, high = max(p.low, low), min(p.high, high)
    if not low < high:
        return p
    return dataclasses.replace(p, low=low, high=high,
                               unset=p.unset if p.unset is not None and low <= p.unset <= high else None)


def around(space: Space, values: dict, name: str, share: float = SHARE) -> Space:
    """The space narrowed around `values` (a knob set's, named `name` in a refusal); SpaceError where the narrowed
    bounds could leave a range without a value."""
    specs = catalog.specs()
    narrowed = {p.knob: _narrowed(p, trials.as_searched(p, values.get(p.knob), specs.get(p.knob) or {}), share)
                for p in space.params}
    for p in space.params:          # a bounded range never narrower than what its bounds can leave it
        q = narrowed[p.knob]
        low = min(q.low, math.prod(narrowed[k].low for k in p.at_most)) if p.at_most else q.low
        high = max(q.high, math.prod(narrowed[k].high for k in p.at_least)) if p.at_least else q.high
        if (low, high) != (q.low, q.high):
            narrowed[p.knob] = _within(p, low, high)
    try:
        return Space(_ordered([narrowed[p.knob] for p in space.params]))
    except SpaceError as e:
        raise SpaceError(f"--around {name}: {e}") from None
