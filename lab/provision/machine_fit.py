"""Which knob values the machines' kind can take: on system containers the kernel is the host's, so a kernel
setting that is not per network namespace would change the host and both twins at once (and a container may not
write it). A knob set's such value is left out of its configuration, said in run.json and the report beside the
service's (Configuration.left_out); a given value is refused. VMs and real hosts take every value.

The kind is chosen once per process (use(), by the command line before any knob is resolved), as lab.machines.reach
chooses how machines are reached.
"""
from __future__ import annotations

from lab.machines import containers, provider

SYSCTL = "base_sysctl"
_kind = {"containers": False, "per_namespace": frozenset()}


def use(kind: str, per_namespace=None) -> None:
    """From now on the machines are of this kind (provider.LIBVIRT, CONTAINERS, or "hosts"); on containers the
    kernel settings a machine may change are `per_namespace` (default: this host kernel's, measured now)."""
    on = kind == provider.CONTAINERS
    if on and per_namespace is None:
        per_namespace = containers.netns_sysctls()
    _kind.update(containers=on, per_namespace=frozenset(per_namespace or ()))


def on_containers() -> bool:
    return _kind["containers"]


def _refused(entries: dict) -> dict[str, str]:
    if not on_containers() or not isinstance(entries, dict):
        return {}
    return containers.sysctl_refusals(entries, _kind["per_namespace"])


def split(values: dict) -> tuple[dict, dict[str, str]]:
    """(the values the machines can take, {knob[entry]: why} of those they cannot)."""
    refused = _refused(values.get(SYSCTL))
    if not refused:
        return values, {}
    kept = {**values, SYSCTL: {k: v for k, v in values[SYSCTL].items() if str(k) not in refused}}
    return kept, {f"{SYSCTL}[{key}]": f"{SYSCTL} {key}: {why}" for key, why in refused.items()}


def misfit(knob: str, value) -> str | None:
    """Why a typed value cannot be taken by the machines, or None."""
    if knob != SYSCTL:
        return None
    refused = _refused(value)
    if not refused:
        return None
    key, why = next(iter(refused.items()))
    return f"{key}: {why}; on containers a machine changes only its own network namespace's settings " \
           "(LAB_PROVIDER=libvirt runs VMs, whose kernels are their own)"
