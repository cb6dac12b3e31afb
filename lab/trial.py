"""Which machine runs which configuration in a trial: A/B, A/A calibration, crossover repeats.

A configuration is a knob set: `default` is the catalog (ansible/knobs.yml), `tuned` the catalog
plus ansible/host_vars/tuned.yml; `--set [config:]knob=value` changes a configuration for this run. A trial
assigns each configuration (side of the comparison) to a machine; the run folder is labelled by
configuration (default/, tuned/), run.json's design says which machine ran which. A machine is made to run
another configuration than its own with per-machine overrides: the knobs where that configuration differs
from what the machine's own files give it (Ansible applies overrides last).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import yaml

from lab import machines, provision

CONFIGS = machines.NAMES            # the two knob sets; also the run folder's sides


def config_knobs(config: str, sets: dict[str, dict] | None = None) -> dict:
    """A configuration's resolved knobs: catalog, its host_vars file, then this run's --set values."""
    knobs = dict(provision.catalog())
    host_vars = provision.ANSIBLE_DIR / "host_vars" / f"{config}.yml"
    if host_vars.exists():
        knobs.update(yaml.safe_load(host_vars.read_text()) or {})
    knobs.update((sets or {}).get(config, {}))
    return knobs


def _same(a, b) -> bool:
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

    def overrides(self, sets: dict[str, dict]) -> dict[str, dict]:
        """Per-machine overrides so that each machine runs its side's configuration (plus --set). A --set
        for a configuration no machine runs (tuned, in an A/A run of default) is refused."""
        unused = [c for c, values in sets.items() if values and c not in self.configurations.values()]
        if unused:
            raise ValueError(f"--set {unused[0]}:…: no machine runs the {unused[0]} configuration in this "
                             f"{'A/A ' if self.kind == 'aa' else ''}run (set it without a prefix, or for "
                             f"{', '.join(sorted(set(self.configurations.values())))})")
        out = {}
        for side, vm in self.machines.items():
            wanted = config_knobs(self.configurations[side], sets)
            own = config_knobs(vm)
            out[vm] = {k: v for k, v in wanted.items() if k not in own or not _same(own[k], v)}
        return out

    def record(self) -> dict:
        return {"kind": self.kind, "configurations": dict(self.configurations), "machines": dict(self.machines),
                "trial": self.number, "trials": self.of, "series": self.series}


def plan(repeat: int = 1, aa: str | None = None, series: str | None = None) -> list[Trial]:
    """The trials of a run: one, or `repeat` with the machines swapped on every second one (crossover).
    aa: both sides run that configuration (an A/A calibration; repeats are not swapped, so the run folder's
    default/ and tuned/ stay the machines of those names)."""
    if aa is not None and aa not in CONFIGS:
        raise ValueError(f"--aa {aa!r}: name a configuration ({', '.join(CONFIGS)})")
    if not 1 <= repeat <= 20:
        raise ValueError(f"--repeat {repeat}: from 1 to 20 trials")
    trials = []
    for k in range(1, repeat + 1):
        swapped = k % 2 == 0 and aa is None      # A/A: one configuration, nothing to swap; its repeats measure drift
        trials.append(Trial(
            kind="aa" if aa else "ab",
            configurations={side: aa or side for side in CONFIGS},
            machines={side: (CONFIGS[1 - i] if swapped else side) for i, side in enumerate(CONFIGS)},
            number=k if repeat > 1 else None, of=repeat if repeat > 1 else None, series=series))
    return trials
