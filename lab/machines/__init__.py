"""The machines wing: the twin machines and the host they run on (prerequisites, base box, the lab's network
namespace, accelerator, vCPU placement, Vagrant and libvirt, up/status/down, their memory). It imports only
the floor (lab.paths, shell, steps, procs, maven) and the run folder's contract (runfolder: the sides' names), never
lab.provision or lab.experiment."""

from runfolder import SIDES as NAMES  # noqa: F401 - the run folder's halves: configurations, machines, thread groups
