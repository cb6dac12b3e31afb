"""What the load is: the profile (a scenario, checked field by field) and the targets, both as the JMeter
properties of jmeter/plan.jmx."""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from lab import machines

MACHINES = machines.NAMES                    # the plan's thread groups
# The steps model's warm-up at the first rate before its judged stages: under emulation a JVM just started served
# its first stage at 5 req/s with p99 20–30 s while its JIT compiled (results/20261125T120921Z-capacity)
STEPS_WARMUP_S = 120
MIX_KEYS = ("get", "summary", "post", "delete")
LABELS = {
    "get": "GET /api/customers/{id}",
    "summary": "GET /api/customers/{id}/summary",
    "post": "POST /api/customers",
    "delete": "DELETE /api/customers/{id}",
}


@dataclass(frozen=True)
class Profile:
    """One load scenario; each field is a JMeter property of the plan (same name; mix → mix_<key>).

    Defaults are the lab's scenario: 150 users per machine, one more each second, then 20 minutes of the
    request mix. LOADS names it and the article's own plan.
    """
    name: str = "lab"                   # which named load (LOADS) it started from, for run.json and the report
    model: str = "closed"               # closed: `users` threads loop; open: arrivals at rate_per_s; steps: arrivals
                                        # at each of step_rates for step_s (a capacity search)
    users: int = 150                    # closed model: threads per machine
    ramp_up_s: int = 150                # closed: time to start all users; open: rate rises 0 → rate_per_s; steps: a
                                        # warm-up at the first stage's rate before the judged stages
    duration_s: int = 1200              # the hold after the ramp-up (the run lasts ramp_up_s + duration_s, +drain_s)
    rate_per_s: float = 50.0            # open model: requests per second per machine during the hold
    keep_alive: bool = True             # closed model: reuse connections (open: each arrival connects anew)
    step_rates: tuple = ()              # steps model: req/s per machine of each stage, rising
    step_s: int = 120                   # steps model: each stage's length
    p99_target_ms: int = 2000           # steps model: a stage is sustained only with p99 at or under this
    connect_timeout_ms: int = 5000
    response_timeout_ms: int = 30000
    mix: dict = field(default_factory=lambda: {"get": 60, "summary": 25, "post": 10, "delete": 5})
    id_min: int = 1                     # customers read are drawn from id_min..id_max (the backend's ids)
    id_max: int = 1000
    customers_path: str = "/api/customers"   # where the API's customers are (the benchmark: the mock's /customers)

    def __post_init__(self) -> None:
        problem = self.problem()
        if problem:
            raise ValueError(problem)

    def problem(self) -> str | None:
        """The first bad field as 'field: what is wrong, got value', or None."""
        def bad(name: str, want: str, got) -> str:
            return f"{name}: {want}, got {got!r}"

        def is_int(v) -> bool:
            return isinstance(v, int) and not isinstance(v, bool)

        if not isinstance(self.name, str) or not re.fullmatch(r"[a-z0-9][a-z0-9._-]{0,39}", self.name):
            return bad("name", "must be a short lower-case name", self.name)
        if self.model not in ("closed", "open", "steps"):
            return bad("model", "must be 'closed', 'open' or 'steps'", self.model)
        if self.model == "steps":
            rates = self.step_rates
            if not isinstance(rates, tuple) or len(rates) < 2 or len(rates) > 50 or any(
                    isinstance(r, bool) or not isinstance(r, (int, float)) or not 0 < r <= 100000 for r in rates):
                return bad("step_rates", "must be 2 to 50 rates above 0 (req/s)", rates)
            if list(rates) != sorted(set(rates)):
                return bad("step_rates", "must rise from stage to stage", rates)
            if not is_int(self.step_s) or not 10 <= self.step_s <= 86400:
                return bad("step_s", "must be whole seconds from 10 to 86400", self.step_s)
            if not is_int(self.p99_target_ms) or not 1 <= self.p99_target_ms <= 3600000:
                return bad("p99_target_ms", "must be whole milliseconds from 1 to 3600000", self.p99_target_ms)
        elif self.step_rates:
            return bad("step_rates", "apply to the steps model only", self.step_rates)
        if not is_int(self.users) or not 1 <= self.users <= 10000:
            return bad("users", "must be a whole number from 1 to 10000", self.users)
        if not is_int(self.ramp_up_s) or not 0 <= self.ramp_up_s <= 86400:
            return bad("ramp_up_s", "must be whole seconds from 0 to 86400", self.ramp_up_s)
        if not is_int(self.duration_s) or not 1 <= self.duration_s <= 7 * 86400:
            return bad("duration_s", "must be whole seconds from 1 to 604800", self.duration_s)
        if isinstance(self.rate_per_s, bool) or not isinstance(self.rate_per_s, (int, float)) \
                or not 0 < self.rate_per_s <= 100000:
            return bad("rate_per_s", "must be a number above 0 and at most 100000", self.rate_per_s)
        if not isinstance(self.keep_alive, bool):
            return bad("keep_alive", "must be true or false", self.keep_alive)
        for name in ("connect_timeout_ms", "response_timeout_ms"):
            value = getattr(self, name)
            if not is_int(value) or not 1 <= value <= 3600000:
                return bad(name, "must be whole milliseconds from 1 to 3600000", value)
        if not isinstance(self.mix, dict) or set(self.mix) != set(MIX_KEYS):
            return bad("mix", f"must have exactly the weights {', '.join(MIX_KEYS)}", self.mix)
        for key in MIX_KEYS:
            if not is_int(self.mix[key]) or not 0 <= self.mix[key] <= 1000000:
                return bad(f"mix.{key}", "must be a whole number from 0 to 1000000", self.mix[key])
        if sum(self.mix.values()) == 0:
            return bad("mix", "must have at least one weight above 0", self.mix)
        if self.mix["delete"] > self.mix["post"]:
            return bad("mix.delete", f"must not exceed mix.post ({self.mix['post']}): a DELETE removes a "
                       "customer the load created", self.mix["delete"])
        if not is_int(self.id_min) or self.id_min < 1:
            return bad("id_min", "must be a whole number from 1", self.id_min)
        if not is_int(self.id_max) or self.id_max < self.id_min or self.id_max > 2**31 - 2:
            return bad("id_max", f"must be a whole number from id_min ({self.id_min}) to 2147483646", self.id_max)
        if not isinstance(self.customers_path, str) or not re.fullmatch(r"(/[\w.~-]+)+", self.customers_path):
            return bad("customers_path", "must be a path like /api/customers (no trailing slash)", self.customers_path)
        return None

    @property
    def drain_s(self) -> int:
        """Open and steps models: the schedule's closing pause, so requests in flight finish rather than being cut."""
        return -(-self.response_timeout_ms // 1000) if self.model in ("open", "steps") else 0

    @property
    def planned_s(self) -> int:
        if self.model == "steps":
            return self.ramp_up_s + len(self.step_rates) * self.step_s + self.drain_s
        return self.ramp_up_s + self.duration_s + self.drain_s

    def stages(self) -> list[tuple[float, int, int]]:
        """Steps model: (rate, start, end) of each judged stage in seconds from the load's start (after the
        warm-up)."""
        w = self.ramp_up_s
        return [(r, w + k * self.step_s, w + (k + 1) * self.step_s) for k, r in enumerate(self.step_rates)]

    def steps_schedule(self) -> str:
        """JMeter's open-model schedule for the steps: the warm-up at the first rate (ramp_up_s; a JVM just started
        serves its first minutes slower than it can: its JIT is still compiling), then each rate held for step_s
        (two rate() in a row jump from one to the next), then the closing pause."""
        if self.model != "steps":
            return ""
        first = self.step_rates[0]
        warmup = f"rate({first:g}/s) random_arrivals({self.ramp_up_s} s) rate({first:g}/s) " if self.ramp_up_s else ""
        stages = " ".join(f"rate({r:g}/s) random_arrivals({self.step_s} s) rate({r:g}/s)" for r in self.step_rates)
        return f"{warmup}{stages} pause({self.response_timeout_ms} ms)"

    def jmeter_properties(self) -> dict[str, str]:
        props = {
            "model": self.model, "users": str(self.users), "ramp_up_s": str(self.ramp_up_s),
            "duration_s": str(self.duration_s), "rate_per_s": f"{self.rate_per_s:g}",
            "keep_alive": "true" if self.keep_alive else "false",
            "connect_timeout_ms": str(self.connect_timeout_ms), "response_timeout_ms": str(self.response_timeout_ms),
            "id_min": str(self.id_min), "id_max": str(self.id_max), "customers_path": self.customers_path,
            "steps_schedule": self.steps_schedule(),
        }
        props.update({f"mix_{key}": str(self.mix[key]) for key in MIX_KEYS})
        return props

    def per_engine(self, engines: int) -> Profile:
        """The share of this load one of `engines` JMeter engines runs (each runs the whole plan): the users or the
        rates divided; ValueError when the users do not divide evenly (the machines would get unequal loads)."""
        if engines == 1:
            return self
        closed = self.model == "closed"
        if closed and self.users % engines:
            raise ValueError(f"{self.users} users per machine do not divide between {engines} load generators: "
                             f"choose a multiple of {engines} (--users)")
        return dataclasses.replace(self, users=self.users // engines if closed else self.users,
                                   rate_per_s=self.rate_per_s / engines,
                                   step_rates=tuple(r / engines for r in self.step_rates))

    def describe(self) -> str:
        """The load in a few words, for the terminal."""
        if self.model == "open":
            return f"{self.rate_per_s:g} req/s per machine after a {self.ramp_up_s} s ramp"
        if self.model == "steps":
            return (f"{self.ramp_up_s} s of warm-up, then stages of {self.step_s} s at "
                    f"{', '.join(f'{r:g}' for r in self.step_rates)} req/s per machine (capacity search)")
        return f"{self.users} users per machine over {self.ramp_up_s} s"


LOADS = {
    "lab": Profile(),
    # the 2018 article's JMeter plan (jmeter/load_test.jmx of its lab): one GET that calls the backend, a new
    # connection per request, 10 s connect and response timeouts, 150 threads started over 150 s, 5 minutes
    "article-2018": Profile(name="article-2018", mix={"get": 1, "summary": 0, "post": 0, "delete": 0},
                            keep_alive=False, connect_timeout_ms=10000, response_timeout_ms=10000, duration_s=300),
}


def named(name: str, **changes) -> Profile:
    """A named load with some fields changed (those not None); ValueError naming an unknown load or a bad field."""
    if name not in LOADS:
        raise ValueError(f"--load {name!r}: unknown load (loads: {', '.join(LOADS)})")
    fields = {k: v for k, v in changes.items() if v is not None}
    return dataclasses.replace(LOADS[name], **fields)


def target_properties(targets: dict[str, str]) -> dict[str, str]:
    """machine → "http://host[:port]" as the plan's <machine>_host/_port/_scheme; ValueError names the bad one."""
    if set(targets) != set(MACHINES):
        raise ValueError(f"targets: need exactly {' and '.join(MACHINES)}, got {sorted(targets)}")
    props = {}
    for machine in MACHINES:
        url = targets[machine]
        parts = urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            port = -1
        if parts.scheme not in ("http", "https") or not parts.hostname or port == -1 \
                or parts.path not in ("", "/") or parts.query or parts.fragment:
            raise ValueError(f"targets.{machine}: must be http(s)://host[:port] without a path, got {url!r}")
        props[f"{machine}_host"] = parts.hostname
        props[f"{machine}_port"] = str(port or (443 if parts.scheme == "https" else 80))
        props[f"{machine}_scheme"] = parts.scheme
    return props
