"""`./start.sh provision`: both machines provisioned outside a run, as the lab's sample service's machines, each with
its own knob set (the machine tuned: `tuned`) and this command's --set values on top (checked first, on this host).
Like a run, it hands every value to Ansible as per-machine overrides (design.machine_overrides), as data."""
from __future__ import annotations

from lab import machines, steps
from lab.errors import LabError
from lab.experiment import design, service
from lab.machines import lifecycle, memory, settings, vagrant
from lab.provision import machine_fit, playbook
from lab.provision.configuration import Configuration


def provision(given: dict, s: settings.Settings, insist_memory: bool = False) -> int:
    """given: {machine: {knob: value}} as --set gives them; the exit code."""
    machine_fit.use(lifecycle.kind(s))         # what the machines' kind lets a knob set do
    svc = service.load(service.DEFAULT)         # the default service's machines
    overrides = design.machine_overrides({vm: Configuration(vm, given.get(vm, {})) for vm in machines.NAMES}, svc)
    sample = service.ansible_vars(svc, overrides)
    playbook.validate({"machines": s.machines, "management_network": s.management_network,
                       "memory_mb": s.memory_mb}, overrides, insist_memory=insist_memory, service_vars=sample)
    if not lifecycle.running():
        raise LabError("the machines are not up (./start.sh up)")
    wanted = design.box_suites({vm: Configuration(vm, given.get(vm, {})).knobs(svc) for vm in machines.NAMES})
    lifecycle.onto_boxes(s, wanted)         # --set jvm_version: that machine is made again from its box
    resolved = vagrant.read_resolved() or {}
    with steps.step("provision both machines (Ansible)"):
        ran = playbook.run(resolved, overrides, log=steps.note, insist_memory=insist_memory, service_vars=sample)
    if ran:
        memory.report_memory(list(ran.machines), steps.note)
    return 0
