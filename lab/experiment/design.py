"""Which machine runs which configuration in a trial: A/B, A/A calibration, crossover repeats.

A configuration is a knob set (lab/provision/knob_sets.py): `default` is the catalog (ansible/knobs.yml), `tuned` the
catalog plus ansible/knob_sets/tuned.yml, and so on; `--set [config:]knob=value` changes a configuration for
this run. A trial assigns a configuration to each side of the comparison (default/ and tuned/, the run folder's
halves: tuned/ may hold article-2018) and each side to a machine; run.json's design says which. A machine is
made to run another configuration than its own with per-machine overrides: the knobs where that configuration
differs from what the machine's own files give it (Ansible applies overrides last).

The service (--service, service.py; the lab's sample app by default) takes only the knobs it can
(lab/provision/service_fit.py), and the machines' kind only what it can (machine_fit.py: containers share the
host's kernel): a knob set's value either cannot take is left out of its configuration (left_out() says which and
why); a --set value it cannot take is refused.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

from lab import machines
from lab.machines import box
from lab.provision import knob_sets, knobs, machine_fit, service_fit

CONFIGS = machines.NAMES            # the sides of a comparison (the run folder's halves) and each machine's own set


def _machine_wide(chosen: dict, typed: dict, resolved: dict, knob: str = "app_stack"):
    """A machine-wide knob (app_stack, jvm_version) of a configuration: its --set value, its set's, the
    catalog's."""
    return typed.get(knob, chosen.get(knob, resolved[knob]))


def config_knobs(config: str, sets: dict[str, dict] | None = None, service=None) -> dict:
    """A configuration's resolved knobs: catalog, its knob set, then this run's --set values. service (a
    service.Service): the set's values it cannot take left out, a --set value it cannot take refused (ValueError);
    None: the files as they are (what a machine's own group_vars and host_vars give it)."""
    resolved = knobs.defaults()
    chosen = knob_sets.values(config, resolved)
    typed = (sets or {}).get(config, {})
    specs = knobs.specs() if service is not None else {}
    stack, java = _machine_wide(chosen, typed, resolved), _machine_wide(chosen, typed, resolved, "jvm_version")
    if service is not None:
        chosen, _ = service_fit.split(chosen, service, stack, specs, java)
        chosen, _ = machine_fit.split(chosen)
    resolved.update(chosen)
    for knob, value in typed.items():
        why = (service_fit.misfit(knob, value, service, stack, specs, java) or machine_fit.misfit(knob, value)
               if service else None)
        if why:
            shown = value if isinstance(value, str) else json.dumps(value)     # as typed: true, not True
            raise ValueError(f"--set {knob}={shown}: {why}")
        resolved[knob] = value
    return resolved


def left_out(config: str, service, sets: dict[str, dict] | None = None) -> dict[str, str]:
    """{knob: why} of the configuration's knob set that the service cannot take, on the build this run's --set
    values choose (a set written for camel3 run with --set tuned:app_stack=camel4 loses its APR connector)."""
    resolved = knobs.defaults()
    chosen = knob_sets.values(config, resolved)
    typed = (sets or {}).get(config, {})
    kept = {k: v for k, v in chosen.items() if k not in typed}     # a typed value replaces the set's: not lost
    kept, lost = service_fit.split(kept, service, _machine_wide(chosen, typed, resolved), knobs.specs(),
                                   _machine_wide(chosen, typed, resolved, "jvm_version"))
    return {**lost, **machine_fit.split(kept)[1]}


def box_suites(machine_knobs: dict[str, dict]) -> dict[str, str]:
    """machine → the Debian suite of the box its Java needs (the knob jvm_version; lab/machines/box.py)."""
    return {vm: box.suite_of(values["jvm_version"]) for vm, values in machine_knobs.items()}


def same(a, b) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@dataclass
class Trial:
    """One trial's design: kind 'ab' or 'aa', configuration of each side, machine of each side."""
    kind: str = "ab"
    configurations: dict = field(default_factory=lambda: {c: c for c in CONFIGS})   # side -> config
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

    def overrides(self, sets: dict[str, dict], service=None) -> dict[str, dict]:
        """Per-machine overrides so that each machine runs its side's configuration (plus --set), as the service
        can take it (config_knobs). A --set for a configuration no machine runs (tuned, in an A/A run of default)
        is refused."""
        unused = [c for c, values in sets.items() if values and c not in self.configurations.values()]
        if unused:
            raise ValueError(f"--set {unused[0]}:…: no machine runs the {unused[0]} configuration in this "
                             f"{'A/A ' if self.kind == 'aa' else ''}run (set it without a prefix, or for "
                             f"{', '.join(sorted(set(self.configurations.values())))})")
        out = {}
        for side, vm in self.machines.items():
            wanted = config_knobs(self.configurations[side], sets, service)
            own = config_knobs(vm)
            out[vm] = {k: v for k, v in wanted.items() if k not in own or not same(own[k], v)}
        return out

    def suites(self, sets: dict[str, dict], service=None) -> dict[str, str]:
        """machine → the suite of the box its side's configuration needs (its Java)."""
        return box_suites({vm: config_knobs(self.configurations[side], sets, service)
                           for side, vm in self.machines.items()})

    def record(self) -> dict:
        return {"kind": self.kind, "configurations": dict(self.configurations), "machines": dict(self.machines),
                "trial": self.number, "trials": self.of, "series": self.series}


def plan(repeat: int = 1, aa: str | None = None, series: str | None = None,
         chosen: dict[str, str] | None = None) -> list[Trial]:
    """The trials of a run: one, or `repeat` with the machines swapped on every second one (crossover).
    chosen: {side: knob set} where a side runs another set than its own name (--knob-set tuned=article-2018).
    aa: both sides run that set (an A/A calibration; repeats are not swapped, so the run folder's default/ and
    tuned/ stay the machines of those names)."""
    chosen = chosen or {}
    if aa is not None and aa not in knob_sets.names():
        raise ValueError(f"--aa {aa!r}: name a knob set ({', '.join(knob_sets.names())})")
    if aa is not None and chosen:
        raise ValueError("--aa and --knob-set both choose the machines' knob sets: use one (--aa SET runs SET on both)")
    for side, name in chosen.items():
        if side not in CONFIGS or name not in knob_sets.names():
            raise ValueError(f"--knob-set {side}={name}: sides are {', '.join(CONFIGS)}, "
                             f"sets {', '.join(knob_sets.names())}")
    if not 1 <= repeat <= 20:
        raise ValueError(f"--repeat {repeat}: from 1 to 20 trials")
    configurations = {side: aa or chosen.get(side, side) for side in CONFIGS}
    if configurations[CONFIGS[0]] == configurations[CONFIGS[1]] and aa is None:
        raise ValueError(f"--knob-set: both sides would run {configurations[CONFIGS[0]]}: that is an A/A run "
                         f"(--aa {configurations[CONFIGS[0]]})")
    trials = []
    for k in range(1, repeat + 1):
        swapped = k % 2 == 0 and aa is None      # A/A: one configuration, nothing to swap; its repeats measure drift
        trials.append(Trial(
            kind="aa" if aa else "ab",
            configurations=dict(configurations),
            machines={side: (CONFIGS[1 - i] if swapped else side) for i, side in enumerate(CONFIGS)},
            number=k if repeat > 1 else None, of=repeat if repeat > 1 else None, series=series))
    return trials
