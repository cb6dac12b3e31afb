"""A configuration is a value: the knob set one side of a run starts from and the values given on top of it (this
run's --set, a sweep's point, a tune's candidate). It is made once, where the run's options are read, and handed
through the experiment as it is; the catalog and the knob sets are read once per process (catalog.specs,
knob_sets.values keep what they read while the files stay as they were).

Resolved for a machine it gives every knob's value: the catalog's, its set's, then the given ones. For a service
(service.Service) the set's values the service cannot take are left out (left_out() says which and why) and a given
value it cannot take is refused, as the machines' kind does (machine_fit: containers share the host's kernel)."""
from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field

from lab.provision import catalog, knob_sets, machine_fit, service_fit


@dataclass(frozen=True)
class Configuration:
    base: str = knob_sets.DEFAULT                       # the knob set (default: the catalog itself)
    values: Mapping = field(default_factory=dict)       # {knob: value} given on top, as JSON holds them

    def given(self, more: Mapping) -> Configuration:
        """This configuration with more values given on top (a later value replaces an earlier one)."""
        return Configuration(self.base, {**self.values, **more})

    def knobs(self, service=None) -> dict:
        """Every knob's value: the catalog, the set, the given values. service: the set's values it cannot take left
        out, a given value it cannot take refused (ValueError naming it); None: the set's values as written."""
        resolved = catalog.defaults()
        chosen = knob_sets.values(self.base, resolved)
        stack, java = (self._machine_wide(chosen, resolved, knob) for knob in ("app_stack", "jvm_version"))
        if service is not None:
            chosen, _ = service_fit.split(chosen, service, stack, catalog.specs(), java)
            chosen, _ = machine_fit.split(chosen)
        resolved.update(chosen)
        for knob, value in self.values.items():
            why = (service_fit.misfit(knob, value, service, stack, catalog.specs(), java)
                   or machine_fit.misfit(knob, value)) if service is not None else None
            if why:
                shown = value if isinstance(value, str) else json.dumps(value)     # as typed: true, not True
                raise ValueError(f"--set {knob}={shown}: {why}")
            resolved[knob] = value
        return resolved

    def left_out(self, service) -> dict[str, str]:
        """{knob: why} of the set's values that the service (or the machines' kind) cannot take, on the build the
        given values choose (a set written for camel3 run with app_stack=camel4 given loses its APR connector)."""
        resolved = catalog.defaults()
        chosen = knob_sets.values(self.base, resolved)
        kept = {k: v for k, v in chosen.items() if k not in self.values}     # a given value replaces the set's
        stack, java = (self._machine_wide(chosen, resolved, knob) for knob in ("app_stack", "jvm_version"))
        kept, lost = service_fit.split(kept, service, stack, catalog.specs(), java)
        return {**lost, **machine_fit.split(kept)[1]}

    def _machine_wide(self, chosen: dict, resolved: dict, knob: str):
        """A machine-wide knob (app_stack, jvm_version): the given value, the set's, the catalog's."""
        return self.values.get(knob, chosen.get(knob, resolved[knob]))


def same(a, b) -> bool:
    """Two knob values are the same as JSON holds them (1 and 1.0 differ, key order does not)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
