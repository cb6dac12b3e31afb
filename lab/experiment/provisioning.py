"""`./start.sh provision`: both machines provisioned outside a run, as the lab's sample service's machines, with this
command's --set values (checked first, on this host)."""
from __future__ import annotations

from lab import machines, steps
from lab.errors import LabError
from lab.experiment import design, service
from lab.machines import lifecycle, memory, settings, vagrant
from lab.provision import machine_fit, playbook
from lab.provision.configuration import Configuration


def provision(overrides: dict, s: settings.Settings, insist_memory: bool = False) -> int:
    """overrides: {machine: {knob: value}} as --set gives them; the exit code."""
    machine_fit.use(lifecycle.kind(s))         # what the machines' kind lets a knob set do
    sample = service.ansible_vars(service.load(service.DEFAULT), overrides)     # the default service's machines
    playbook.validate({"machines": s.machines, "management_network": s.management_network,
                       "memory_mb": s.memory_mb}, overrides, insist_memory=insist_memory, service_vars=sample)
    if not lifecycle.running():
        raise LabError("the machines are not up (./start.sh up)")
    wanted = design.box_suites({vm: Configuration(vm, overrides.get(vm, {})).knobs() for vm in machines.NAMES})
    lifecycle.onto_boxes(s, wanted)         # --set jvm_version: that machine is made again from its box
    resolved = vagrant.read_resolved() or {}
    with steps.step("provision both machines (Ansible)"):
        ran = playbook.run(resolved, overrides, log=steps.note, insist_memory=insist_memory, service_vars=sample)
    if ran:
        memory.report_memory(list(ran.machines), steps.note)
    return 0
