"""The stand-in's true function (standin.py), and its honest draw (issue 86, item 3: the stand-in flattered the tuner).

Shape: a knob's place is its position in its range (0…1; log scale for a log range, the choice's index for choices),
and a candidate's distance to the optimum is over the relevant knobs, with an interaction between the first two (as
HTTPD's and the JVM's tiers interact). The bump is flat within RADIUS of the optimum (its top) and halves about WIDTH
further out. A cliff on one relevant capacity (threads, workers, connections, pools): below its threshold the
throughput collapses (too few for the users), and just above it (ERROR_BAND) it holds while requests time out (errors
over the 0.1 % constraint). Memory: an explicit heap with many Tomcat threads does not start.

The honest draw (honest()): the relevant knobs drawn; the optimum anywhere in the space but at least KNOWN_DISTANCE
from the control's and every known set's values (none is near it: enqueuing them first finds nothing by construction);
the cliff below the optimum, the control and the known sets (the hand-made sets run); the ratio against the control's
own throughput (the control as a candidate measures 1), the optimum's 1 + gain exactly.
"""
from __future__ import annotations

import math
import random
from dataclasses import dataclass

from lab.experiment.tune.space import Param, Space

KNOWN_DISTANCE = 0.5        # the optimum's least distance from each known set (range positions, relevant knobs)
RADIUS = 0.08               # the flat top: within it a candidate is as good as the optimum
WIDTH = 0.25                # beyond the flat top, the gain halves about this much further (range positions)
ERROR_BAND = 0.06           # above the cliff, this much of the knob's range errs (> 0.1 %) while its throughput holds
COLLAPSED = 0.25            # the throughput's share far below the cliff
STEEPNESS = 0.03            # the collapse's scale below the cliff (range positions): e^−1 of the drop within it
CLIFF_ROOM = 0.12           # a knob can carry the cliff where the optimum, the control and the known sets sit this
                            # far above the band's top (the hand-made sets run on the lab)
CLIFF_BELOW = 0.35          # the cliff's threshold at most this far up its range: too few, not a few less
# capacities: too few of them for the users and requests queue, then time out (spare threads are not one)
CAPACITIES = ("tomcat_threads_max", "tomcat_max_connections", "httpd_server_limit", "httpd_threads_per_child",
              "httpd_max_request_workers", "app_backend_max_connections", "app_compose_pool_size",
              "app_compose_max_pool_size")
MEMORY_MB = 300             # an explicit heap plus STACK_MB a Tomcat thread over this: the JVM does not start
STACK_MB = 0.5              # (heap 192 MB: more than 216 threads; 160: 280; 128: 344; the JVM's own default heap fits)
ERRORS_MAX = 0.1            # the tune's default constraint, errors<=0.1% (trials.CONSTRAINTS)


def position(p: Param, value) -> float:
    """Where a value sits in its range, 0…1."""
    if p.kind == "choice":
        return p.choices.index(value) / max(1, len(p.choices) - 1)
    if p.log:
        return (math.log(value) - math.log(p.low)) / (math.log(p.high) - math.log(p.low))
    return (value - p.low) / (p.high - p.low)


def at(p: Param, values: dict) -> float:
    """A knob's position in values; a knob left out (its `when` did not hold) at its range's start, the base's
    stand-in."""
    return position(p, values[p.knob]) if p.knob in values else 0.0


def offsets(params: list[Param], values: dict, optimum: dict) -> list[float]:
    return [at(p, values) - at(p, optimum) for p in params]


def bump(params: list[Param], values: dict, optimum: dict, width: float, radius: float = 0.0) -> float:
    """1 at the optimum (and within radius of it), falling off as a Gaussian of the distance beyond."""
    d = offsets(params, values, optimum)
    distance = sum(x * x for x in d)
    if len(d) >= 2:                  # the first two knobs interact: the best of one moves with the other
        distance += d[0] * d[1]
    beyond = max(0.0, math.sqrt(max(distance, 0.0)) - radius)
    return math.exp(-beyond * beyond / (2 * width ** 2))


def distance(params: list[Param], a: dict, b: dict) -> float:
    """Euclidean, in range positions, over params."""
    return math.sqrt(sum(x * x for x in offsets(params, a, b)))


@dataclass(frozen=True)
class Cliff:
    """Below `threshold` (a position in knob's range) the throughput collapses; up to `band` above it, requests err."""
    knob: str
    threshold: float
    band: float = ERROR_BAND

    def factor(self, p: Param, values: dict) -> float:
        """The throughput's share left at values (1 above the cliff)."""
        if self.knob not in values:
            return 1.0
        below = self.threshold - position(p, values[self.knob])
        return 1.0 if below <= 0 else COLLAPSED + (1 - COLLAPSED) * math.exp(-below / STEEPNESS)

    def errors_pct(self, p: Param, values: dict) -> float:
        """The candidate's failed requests, %: over the constraint within the band, more the further below it."""
        if self.knob not in values:
            return 0.0
        under = self.threshold + self.band - position(p, values[self.knob])
        return 0.0 if under <= 0 else ERRORS_MAX * (1.5 + 40 * under)


def memory(values: dict) -> str | None:
    """Why the candidate's JVM does not start (an explicit heap and Tomcat's thread stacks over MEMORY_MB), None
    where it does."""
    heap = values.get("jvm_heap_max_mb")
    threads = values.get("tomcat_threads_max")
    if heap is None or threads is None or heap + STACK_MB * threads <= MEMORY_MB:
        return None
    return (f"does not start: memory (heap {heap} MB and {threads} threads' stacks, {heap + STACK_MB * threads:.0f} "
            f"MB, over the {MEMORY_MB} MB the JVM has)")


def draw_point(space: Space, rng: random.Random) -> dict:
    """Values drawn uniformly over the space (its log scale for a log range), in its order: each within the bounds
    the knobs before it leave; a knob whose `when` does not hold left out, as Space.suggest leaves it."""
    out = {}
    for p in space.params:
        if not p.searched(out):
            continue
        if p.kind == "choice":
            out[p.knob] = rng.choice(p.choices)
            continue
        low, high = p.bounds(out)
        x = math.exp(rng.uniform(math.log(low), math.log(high))) if p.log else rng.uniform(low, high)
        out[p.knob] = int(low + math.floor((x - low) / (p.step or 1)) * (p.step or 1)) if p.kind == "int" else x
    return out


def place_cliff(params: list[Param], sets: list[dict], rng: random.Random) -> Cliff | None:
    """A cliff on a relevant capacity (CAPACITIES) where every one of sets (the optimum, the control, the known sets)
    sits CLIFF_ROOM above its band's top; its threshold drawn between 0.05 and that (CLIFF_BELOW at most); None where
    no relevant capacity has the room."""
    room = {p.knob: min(at(p, v) for v in sets) - ERROR_BAND - CLIFF_ROOM for p in params if p.knob in CAPACITIES}
    fits = sorted(k for k, r in room.items() if r >= 0.05)
    if not fits:
        return None
    knob = rng.choice(fits)
    return Cliff(knob, rng.uniform(0.05, min(room[knob], CLIFF_BELOW)))


def honest(space: Space, seed: int, relevant_k: int, known: dict[str, dict], control: dict) -> dict:
    """StandIn's shape for a seed: {relevant, optimum, cliff, radius, width}: relevant_k knobs drawn, the optimum drawn
    over the space until it starts, is KNOWN_DISTANCE from the control and every known set over them, and a cliff
    fits below it, the control and the known sets (the knobs drawn again where 500 optima did not)."""
    rng = random.Random(f"honest:{seed}")
    knobs = [p.knob for p in space.params]
    for _ in range(100):
        relevant = frozenset(rng.sample(knobs, relevant_k)) if 0 < relevant_k < len(knobs) else frozenset(knobs)
        params = [p for p in space.params if p.knob in relevant]
        for _ in range(500):
            best = draw_point(space, rng)
            if memory(best) or any(distance(params, best, v) < KNOWN_DISTANCE for v in [control, *known.values()]):
                continue
            cliff = place_cliff(params, [best, control, *known.values()], rng)
            if cliff is not None:
                return {"relevant": relevant, "optimum": best, "cliff": cliff, "radius": RADIUS, "width": WIDTH}
    raise ValueError(f"no optimum {KNOWN_DISTANCE} from every known set with room for a cliff (seed {seed})")
