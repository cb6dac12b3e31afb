"""Which kind of machine the twins are: the setting `provider` (machines.yml) decided on this host.

auto takes VMs where KVM works and system containers where it does not: under QEMU's emulation (TCG) this service
runs ~25x slower than native, compiling is the slowest thing there is, and a verdict may be one on the JIT's
warm-up (docs/methods.md, "The machines' kind"). Either can be forced (LAB_PROVIDER=libvirt or containers).
"""
from __future__ import annotations

from lab.machines import accel

LIBVIRT, CONTAINERS = "libvirt", "containers"
NATIVE = "native"      # a container's "accelerator": it runs on the host's kernel and CPU


def choose(requested: str, accelerator: str, detect=accel.detect) -> dict:
    """{provider, provider_reason, accelerator, accelerator_reason} for the settings provider and accelerator."""
    if requested == CONTAINERS:
        return _containers("requested")
    accel_kind, accel_why = detect(accelerator)
    if requested == LIBVIRT:
        return {"provider": LIBVIRT, "provider_reason": "requested", "accelerator": accel_kind,
                "accelerator_reason": accel_why}
    if accel_kind == "kvm":
        return {"provider": LIBVIRT, "provider_reason": f"auto: KVM works ({accel_why})", "accelerator": "kvm",
                "accelerator_reason": accel_why}
    return _containers(f"auto: no usable KVM ({accel_why}); emulated VMs would run ~25x slower than native "
                       "(LAB_PROVIDER=libvirt forces them)")


def _containers(why: str) -> dict:
    return {"provider": CONTAINERS, "provider_reason": why, "accelerator": NATIVE,
            "accelerator_reason": "system containers on the host's kernel"}
