"""Which machine runs which configuration in a trial: A/B, A/A calibration, crossover repeats.

A configuration (lab/provision/configuration.py) is a knob set and the values given on top of it: `default` is the
catalog (ansible/knobs.yml), `tuned` the catalog plus ansible/knob_sets/tuned.yml, and so on; `--set
[config:]knob=value` gives a configuration a value for this run. A trial assigns a configuration to each side of the
comparison (default/ and tuned/, the run folder's halves: tuned/ may hold article-2018) and each side to a machine;
run.json's design says which. Each machine is given its side's configuration as per-machine overrides: every knob
where that configuration differs from the catalog (group_vars/all/knobs.yml, the only knob values Ansible reads from
a file), the machine's own set included, so that every value of a knob set reaches Ansible as data
(lab/provision/as_data.py), never as a file it reads and renders (Ansible applies overrides last).

The service (--service, service.py; the lab's sample app by default) takes only the knobs it can
(lab/provision/service_fit.py), and the machines' kind only what it can (machine_fit.py: containers share the
host's kernel): a knob set's value either cannot take is left out of its configuration (Configuration.left_out says
which and why); a given value it cannot take is refused.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from lab import machines
from lab.machines import box
from lab.provision import catalog, knob_sets
from lab.provision.configuration import Configuration, same

CONFIGS = machines.NAMES            # the sides of a comparison (the run folder's halves) and each machine's own set


def box_suites(machine_knobs: dict[str, dict]) -> dict[str, str]:
    """machine → the Debian suite of the box its Java needs (the knob jvm_version; lab/machines/box.py)."""
    return {vm: box.suite_of(values["jvm_version"]) for vm, values in machine_knobs.items()}


def beyond_catalog(knobs: dict) -> dict:
    """The knobs of a resolved configuration whose value is not the catalog's: what a machine is given as overrides."""
    out_of_the_box = catalog.defaults()
    return {k: v for k, v in knobs.items() if k not in out_of_the_box or not same(out_of_the_box[k], v)}


def machine_overrides(configurations: dict[str, Configuration], service=None) -> dict[str, dict]:
    """machine → its overrides (lab_overrides): its configuration as the service can take it (Configuration.knobs;
    ValueError for a given value it cannot take), where it is not the catalog's. The tuned machine running `tuned`
    gets tuned's values here: no knob set reaches a machine any other way."""
    return {vm: beyond_catalog(c.knobs(service)) for vm, c in configurations.items()}


def own_suites() -> dict[str, str]:
    """machine → the suite its own knob set's Java needs (what `up` brings each machine up on)."""
    return box_suites({vm: Configuration(vm).knobs() for vm in machines.NAMES})


@dataclass
class Trial:
    """One trial's design: kind 'ab' or 'aa', configuration of each side, machine of each side."""
    kind: str = "ab"
    configurations: dict = field(default_factory=lambda: {c: Configuration(c) for c in CONFIGS})  # side -> config
    machines: dict = field(default_factory=lambda: {c: c for c in CONFIGS})         # side -> machine
    number: int | None = None        # k of N in a --repeat series
    of: int | None = None
    series: str | None = None        # the series folder's name

    @property
    def swapped(self) -> bool:
        return any(side != vm for side, vm in self.machines.items())

    def targets(self, addresses: dict[str, str], scheme: str = "http") -> dict[str, str]:
        """side -> <scheme>://<address of the machine that runs it> (https: HTTPD's TLS front on 443)."""
        return {side: f"{scheme}://{addresses[vm]}" for side, vm in self.machines.items()}

    def folders(self) -> dict[str, str]:
        """machine -> the run folder's side it fills."""
        return {vm: side for side, vm in self.machines.items()}

    def overrides(self, service=None) -> dict[str, dict]:
        """Per-machine overrides so that each machine runs its side's configuration, as the service can take it
        (machine_overrides; ValueError for a given value it cannot take)."""
        return machine_overrides({vm: self.configurations[side] for side, vm in self.machines.items()}, service)

    def suites(self, service=None) -> dict[str, str]:
        """machine → the suite of the box its side's configuration needs (its Java)."""
        return box_suites({vm: self.configurations[side].knobs(service) for side, vm in self.machines.items()})

    def given(self) -> dict[str, dict]:
        """{side: the values given on top of its knob set} of the sides that have any (run.json's overrides; keyed by
        side, as two sides may start from one set)."""
        return {side: dict(c.values) for side, c in self.configurations.items() if c.values}

    def record(self) -> dict:
        return {"kind": self.kind, "configurations": {side: c.base for side, c in self.configurations.items()},
                "machines": dict(self.machines),
                "trial": self.number, "trials": self.of, "series": self.series}


def choose(aa: str | None = None, chosen: dict[str, str] | None = None) -> dict[str, str]:
    """side → the knob set it runs: its own name, the set chosen for it (--knob-set tuned=article-2018), or with aa
    that set on both (an A/A calibration); ValueError naming what is wrong."""
    chosen = chosen or {}
    if aa is not None and aa not in knob_sets.names():
        raise ValueError(f"--aa {aa!r}: name a knob set ({', '.join(knob_sets.names())})")
    if aa is not None and chosen:
        raise ValueError("--aa and --knob-set both choose the machines' knob sets: use one (--aa SET runs SET on both)")
    for side, name in chosen.items():
        if side not in CONFIGS or name not in knob_sets.names():
            raise ValueError(f"--knob-set {side}={name}: sides are {', '.join(CONFIGS)}, "
                             f"sets {', '.join(knob_sets.names())}")
    return {side: aa or chosen.get(side, side) for side in CONFIGS}


def by_side(sets: dict[str, str], aa: str | None = None) -> bool:
    """Whether a --set prefix names a side rather than a knob set: in an A/B run whose sides start from one set
    (--knob-set tuned=default), where that set's name could not tell them apart."""
    return aa is None and len(set(sets.values())) == 1


def configurations(sets: dict[str, str], given: dict[str, dict], aa: bool = False,
                   sides: bool = False) -> dict[str, Configuration]:
    """side → its Configuration: its knob set with the values given for that set (--set SET:knob=value), or with
    sides (by_side()) the values given for that side (--set tuned:knob=value). A value given for a set no side
    runs (tuned, in an A/A run of default) is refused, and so is an A/B run whose sides would be one
    configuration (that is an A/A run)."""
    unused = [] if sides else [name for name, values in given.items() if values and name not in sets.values()]
    if unused:
        raise ValueError(f"--set {unused[0]}:…: no machine runs the {unused[0]} configuration in this "
                         f"{'A/A ' if aa else ''}run (set it without a prefix, or for "
                         f"{', '.join(sorted(set(sets.values())))})")
    configured = {side: Configuration(name, dict(given.get(side if sides else name) or {}))
                  for side, name in sets.items()}
    first, second = (configured[side] for side in CONFIGS)
    if not aa and first == second:
        raise ValueError(f"--knob-set: both sides would run {first.base}"
                         + (" with the same values" if first.values else "")
                         + f": that is an A/A run (--aa {first.base}); to measure a value against its set, give it "
                           f"to one side (--knob-set {CONFIGS[1]}={first.base} --set {CONFIGS[1]}:KNOB=VALUE)")
    return configured


def plan(repeat: int = 1, aa: str | None = None, series: str | None = None, chosen: dict[str, str] | None = None,
         given: dict[str, dict] | None = None) -> list[Trial]:
    """The trials of a run from its choices: the knob sets (choose()), the values given for them (configurations()),
    then trials_of()."""
    sets = choose(aa, chosen)
    configured = configurations(sets, given or {}, aa=aa is not None, sides=by_side(sets, aa))
    return trials_of(configured, repeat, aa is not None, series)


def trials_of(configured: dict[str, Configuration], repeat: int = 1, aa: bool = False,
              series: str | None = None) -> list[Trial]:
    """The trials of a run of these configurations (side → Configuration): one, or `repeat` with the machines
    swapped on every second one (crossover). aa: an A/A calibration (repeats are not swapped, so the run folder's
    default/ and tuned/ stay the machines of those names)."""
    if not 1 <= repeat <= 20:
        raise ValueError(f"--repeat {repeat}: from 1 to 20 trials")
    trials = []
    for k in range(1, repeat + 1):
        swapped = k % 2 == 0 and not aa      # A/A: one configuration, nothing to swap; its repeats measure drift
        trials.append(Trial(
            kind="aa" if aa else "ab",
            configurations=dict(configured),
            machines={side: (CONFIGS[1 - i] if swapped else side) for i, side in enumerate(CONFIGS)},
            number=k if repeat > 1 else None, of=repeat if repeat > 1 else None, series=series))
    return trials
