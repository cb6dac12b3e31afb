"""The lab's lifecycle on the host: prerequisites, up (box, namespace, accelerator, machines, SSH), whether it
is up, its status, and down (which also clears the remains of a lab that was killed)."""
from __future__ import annotations

import json
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict

from lab import confine, machines, paths, shell, steps, unprivileged
from lab.errors import LabError
from lab.machines import (
    accel,
    ahead,
    box,
    containers,
    image,
    netns,
    pool,
    prereqs,
    provider,
    reach,
    settings,
    status,
    vagrant,
)


def made_with(resolved: dict, s: settings.Settings) -> bool:
    """The lab of these resolved settings was made with settings s."""
    return resolved.get("requested") == json.loads(json.dumps(asdict(s)))


def kind(s: settings.Settings) -> str:
    """The machines' kind a run gets: the running lab's, else what `up` would choose now."""
    resolved = vagrant.read_resolved() or {}
    if resolved.get("provider") and made_with(resolved, s):
        return resolved["provider"]
    return provider.choose(s.provider, s.accelerator)["provider"]


def install_prereqs(kind: str = "auto") -> None:
    """What the host needs for machines of that kind (libvirt, containers, or auto: either)."""
    with steps.step("host prerequisites"):
        need = prereqs.missing(prereqs.PER_PROVIDER[kind])
        if need:
            steps.note(f"installing {' '.join(need)}")
            prereqs.install(need)
        else:
            steps.note("all present")
    with steps.step("the lab's user"):      # JMeter and the host's JVM check run as it (lab/unprivileged.py)
        account = unprivileged.ensure()
        steps.note(f"{account.name} (uid {account.uid})" if account else "not made: the lab is not root")


def install_kind_prereqs(kind: str) -> None:
    """The rest of what the host needs once the machines' kind is decided (up saw to the common part before):
    a step only where something is missing, not the same "all present" twice."""
    need = prereqs.missing(prereqs.PER_PROVIDER[kind])
    if need:
        with steps.step(f"host prerequisites for {kind}"):
            steps.note(f"installing {' '.join(need)}")
            prereqs.install(need)


def running() -> bool:
    """Both machines run in a healthy lab namespace."""
    return vagrant.healthy() and set(vagrant.states().values()) == {"running"}


def is_up(s: settings.Settings) -> bool:
    """Both machines running in a healthy lab; an error when they were made with other settings."""
    if not running():
        return False
    if not made_with(vagrant.read_resolved() or {}, s):
        raise LabError("the machines are up but were made with other settings; run ./start.sh down first")
    return True


def ensure_up(s: settings.Settings, suites: dict[str, str]) -> dict:
    """For the full run: the lab up (brought up when it is not), each machine on its suite's box (a machine on
    another box made again from the right one), and its resolved settings."""
    if is_up(s):
        if not onto_boxes(s, suites):
            steps.note("both machines are already up")
    else:
        up(s, suites)
    return vagrant.read_resolved() or {}


def other_boxes(suites: dict[str, str]) -> tuple[str, ...]:
    """The running machines made from another suite's box than `suites` asks for (a lab made before boxes were
    per machine ran bookworm on both)."""
    made = (vagrant.read_resolved() or {}).get("suites") or {}
    return tuple(name for name in machines.NAMES if made.get(name, box.SUITES[17]) != suites[name])


def onto_boxes(s: settings.Settings, suites: dict[str, str]) -> bool:
    """The running machines on another box than `suites` asks for made again from theirs; True when any was."""
    names = other_boxes(suites)
    if names:
        remake(s, suites, names)
    return bool(names)


def remake(s: settings.Settings, suites: dict[str, str], names: tuple[str, ...]) -> None:
    """Those machines destroyed and booted again from their suite's box (their Java changed: jvm_version); the
    other machine keeps running. A new machine has a new identity: the next provisioning runs every role on it."""
    made = (vagrant.read_resolved() or {}).get("suites") or {}
    with steps.step(f"another Java on {', '.join(names)}: made again from its box"):
        for name in names:
            steps.note(f"{name}: {made.get(name, box.SUITES[17])} → {suites[name]}")
        resolved = vagrant.with_suites(vagrant.read_resolved(), suites)
        machine_images({suites[n] for n in names}, s)
        vagrant.destroy(names)
        vagrant.write_resolved(resolved)
        vagrant.up(s.boot_timeout, names)
        vagrant.write_ssh_config()
        answer_over_ssh(names)


def answer_over_ssh(names) -> None:
    """Each machine logs in over SSH (all at once); LabError naming one that does not."""
    def login(name):
        shell.run(reach.ssh_command(name, "true"), f"{name} booted but does not answer over SSH", error=LabError,
                  timeout=120)
    with ThreadPoolExecutor(len(names)) as pool:
        list(pool.map(login, names))


def up(s: settings.Settings, suites: dict[str, str] | None = None) -> None:
    """Prerequisites, the machines' kind decided (provider), their boxes or images, the namespace and its daemon
    (libvirtd or the lab's dockerd), both machines booted and answering over SSH, then the status.
    suites: machine → the suite of its box (its Java; None: bookworm, Java 17, for both). A failure tears down
    what was started."""
    suites = suites or {name: box.SUITES[17] for name in machines.NAMES}
    install_prereqs("libvirt" if s.provider == provider.LIBVIRT or (s.provider == "auto" and accel.kvm_candidate())
                    else "common")
    if is_up(s):
        if not onto_boxes(s, suites):
            print("The lab is already up; nothing changed.")
        status.show()
        return
    if netns.exists() or vagrant.defined_domains() or containers.remains():
        with steps.step("cleaning up a lab left behind"):
            for line in teardown():
                steps.note(line)
    with steps.step("the machines' kind"):
        resolved = vagrant.resolve(s, suites)
        in_containers = resolved["provider"] == provider.CONTAINERS
        steps.note(f"{resolved['provider']} ({resolved['provider_reason']})")
    install_kind_prereqs(resolved["provider"])
    if not in_containers:
        machine_images(set(suites.values()), s, registered=False)
    try:
        with steps.step(f"lab network namespace and {'Docker' if in_containers else 'libvirt'}"):
            if not netns.healthy(libvirt=not in_containers):
                netns.create(libvirt=not in_containers)
            if in_containers:
                containers.start_daemon(bridge=s.management_network)
            elif netns.kvm_hidden_from_libvirt():
                steps.note(f"libvirt sees no {netns.KVM_DEVICE}: QEMU's user ({netns.QEMU_USER}) cannot use it, "
                           "and libvirt would probe QEMU again on every call")
        vagrant.write_resolved(resolved)
        steps.note(f"accelerator {resolved['accelerator']} ({resolved['accelerator_reason']}); "
                   f"placement {resolved['cpusets'] or 'unpinned'}")
        machine_images(set(suites.values()), s)
        with steps.step("boot both machines" + ("" if in_containers else " (TCG: a few minutes)")):
            boot(s.boot_timeout)
            for removed in pool.remove_stale_box_volumes():
                steps.note(f"removed {removed} from libvirt's pool: an older box recipe's disk")
        with steps.step("SSH to both machines"):
            vagrant.write_ssh_config()
            answer_over_ssh(machines.NAMES)
    except BaseException as failure:
        print(f"\nstart.sh up failed: {failure}\nTearing down what was started…", file=sys.stderr)
        for line in teardown():
            print(f"  {line}", file=sys.stderr)
        raise
    status.show()


def machine_images(suites: set[str], s: settings.Settings, registered: bool = True) -> None:
    """Each suite's box (a VM's, built when missing; registered with Vagrant once libvirt runs) or image (a
    container's, built into the lab's daemon when missing), from the one made ahead where there is one."""
    ahead.cancel_except(suites)
    if vagrant.in_containers() and registered:
        with steps.step("the machines' images"):
            for suite in sorted(suites):
                name, built = image.ensure(s, suite, made_ahead=lambda suite=suite: ahead.take(suite))
                steps.note(f"{'built' if built else 'reusing'} {name}")
        return
    with steps.step("base boxes" if not registered else "register the boxes with Vagrant"):
        for suite in sorted(suites):
            path, built = box.ensure(s, suite, made_ahead=lambda suite=suite: ahead.take(suite))
            if registered:
                vagrant.ensure_box(path, box.box_name(suite))
            else:
                steps.note(f"{'built' if built else 'reusing'} {path.name}")


# Now and then a guest under TCG hangs in its first minute of boot (soft lockups in virtio's notify, no IP
# after 15 min: tuned, on a first up) while its twin comes up; a boot from scratch came up.
BOOT_ATTEMPTS = 2


def boot(boot_timeout: int) -> None:
    """Both machines booted; after a failed boot their consoles are kept, both destroyed, booted again."""
    for attempt in range(1, BOOT_ATTEMPTS + 1):
        try:
            vagrant.up(boot_timeout)
            return
        except vagrant.MachineError as failure:
            if attempt == BOOT_ATTEMPTS:
                raise
            kept = vagrant.keep_consoles(f"boot-{time.strftime('%Y%m%dT%H%M%SZ', time.gmtime())}-attempt-{attempt}")
            steps.note(f"boot {attempt} of {BOOT_ATTEMPTS} failed: {failure}; its consoles kept in "
                       f"{', '.join(str(k) for k in kept) or '(none written)'}; destroying both, booting again")
            vagrant.destroy()
            if vagrant.in_containers():
                for removed in containers.remove_containers():
                    steps.note(f"{removed} (Vagrant did not know it)")


def teardown() -> list[str]:
    """Machines, their daemons (libvirt's networks and daemons, or the lab's dockerd and its containers), the
    namespace: whatever of them exists, also after a crash, whichever kind the machines were."""
    done = []
    vms = netns.libvirt_started() or bool(vagrant.defined_domains())
    boxes = containers.remains()
    if not netns.exists() and not vms and not boxes:
        return done
    if vms:
        done += _teardown_vms()
    if boxes:
        done += _teardown_containers()
    done += netns.destroy()
    paths.SETTINGS_JSON.unlink(missing_ok=True)
    reach.SSH_CONFIG.unlink(missing_ok=True)
    return done


def _teardown_vms() -> list[str]:
    done = []
    if not netns.healthy(libvirt=True):
        # Remains of a killed lab: a fresh namespace and libvirtd are needed to remove its domains.
        done += netns.destroy()
        netns.create()
    if vagrant.domains():
        vagrant.destroy()
        done += [f"domain {d} undefined (Vagrant had lost it)" for d in vagrant.undefine_leftover_domains()]
        done.append("machines destroyed")
    for net in vagrant.NETWORKS:
        netns.virsh("net-destroy", net)
        if netns.virsh("net-undefine", net).returncode == 0:
            done.append(f"libvirt network {net} removed")
    return done


def _teardown_containers() -> list[str]:
    """The lab's containers removed by its own daemon (started again in a fresh namespace when it was killed),
    the daemon stopped, then whatever a killed daemon left in the containers' cgroups ended by PID."""
    done = []
    if not containers.daemon_running():
        try:
            if not netns.healthy(libvirt=False):
                done += netns.destroy()
                netns.create(libvirt=False)
            containers.start_daemon()
        except (netns.NetnsError, containers.ContainerError) as failure:
            done.append(f"the lab's dockerd could not be started to remove its containers: {failure}")
    done += containers.stop_daemon()
    done += containers.end_leftovers()
    vagrant.forget_containers()
    return done


def down() -> None:
    """Everything the lab started, gone; an error when something is left behind."""
    with steps.step("down"):
        done = teardown()
        if confine.remove_sandbox():
            done.append(f"namespace {confine.SANDBOX} deleted")
        for line in done:
            steps.note(line)
        if not done:
            steps.note("nothing was running")
    leftovers = [n for n in vagrant.defined_domains() if n in machines.NAMES]
    if netns.exists() or leftovers or containers.remains():
        raise LabError(f"down left something behind: namespace={netns.exists()} domains={leftovers} "
                       f"containers={containers.remains()}")


def exec_inside(argv: list[str]) -> int:
    """`./start.sh exec -- COMMAND`: COMMAND inside the lab namespace, with the lab's Vagrant environment; its exit
    code."""
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise LabError("exec needs a command, e.g. ./start.sh exec -- ssh -F .lab/ssh_config default")
    refuse_foreign()
    if not netns.healthy():
        raise LabError("the lab is not up (./start.sh up)")
    return subprocess.run(netns.wrap(argv), env=vagrant.vagrant_env(), cwd=paths.ROOT).returncode


def refuse_foreign() -> None:
    """LabError when another checkout's lab holds the namespace: only one lab can run on a host."""
    owner = netns.foreign_owner()
    if owner:
        raise LabError(f"the lab namespace {netns.NAME} is taken by the lab in {owner}: run ./start.sh down there "
                       "first (only one lab can run on a host)")
