"""The machines wing: the twin machines and the host they run on (prerequisites, base box, the lab's network
namespace, accelerator, vCPU placement, Vagrant and libvirt, up/status/down, their memory). It imports only
the floor (lab.paths, shell, steps, procs, maven), never lab.provision or lab.experiment."""

NAMES = ("default", "tuned")                 # declared once: configurations, run folders, the plan's thread groups
