"""The lab's lifecycle on the host: prerequisites, up (box, namespace, accelerator, machines, SSH), whether it
is up, its status, and down (which also clears the remains of a lab that was killed)."""
from __future__ import annotations

import json
import sys
import time
from dataclasses import asdict

from lab import machines, paths, shell, steps
from lab.machines import box, netns, prereqs, reach, settings, vagrant


class LabError(RuntimeError):
    """Any failure the user must read: printed as one message, exit 1."""


def install_prereqs() -> None:
    with steps.step("host prerequisites"):
        need = prereqs.missing()
        if need:
            steps.note(f"installing {' '.join(need)}")
            prereqs.install(need)
        else:
            steps.note("all present")


def running() -> bool:
    """Both machines run in a healthy lab namespace."""
    return netns.healthy() and set(vagrant.states().values()) == {"running"}


def is_up(s: settings.Settings) -> bool:
    """Both machines running in a healthy lab; an error when they were made with other settings."""
    if not running():
        return False
    previous = vagrant.read_resolved() or {}
    if previous.get("requested") != json.loads(json.dumps(asdict(s))):
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
        boxes = {suite: box.ensure(s, suite)[0] for suite in {suites[n] for n in names}}
        resolved = {**vagrant.read_resolved(), "suites": dict(suites),
                    "boxes": {n: box.box_name(suites[n]) for n in machines.NAMES}}
        for suite, path in boxes.items():
            vagrant.ensure_box(path, box.box_name(suite))
        vagrant.destroy(names)
        vagrant.write_resolved(resolved)
        vagrant.up(s.boot_timeout, names)
        vagrant.write_ssh_config()
        for name in names:
            shell.run(reach.ssh_command(name, "true"), f"{name} booted but does not answer over SSH",
                      error=LabError, timeout=120)


def up(s: settings.Settings, suites: dict[str, str] | None = None) -> None:
    """Prerequisites, boxes, namespace and libvirt, both machines booted and answering over SSH, then the status.
    suites: machine → the suite of its box (its Java; None: bookworm, Java 17, for both). A failure tears down
    what was started."""
    suites = suites or {name: box.SUITES[17] for name in machines.NAMES}
    install_prereqs()
    if is_up(s):
        if not onto_boxes(s, suites):
            print("The lab is already up; nothing changed.")
        status()
        return
    if netns.exists() and not netns.healthy():
        with steps.step("cleaning up a lab left behind"):
            for line in teardown():
                steps.note(line)
    with steps.step("base boxes"):
        box_paths = {}
        for suite in sorted(set(suites.values())):
            box_paths[suite], built = box.ensure(s, suite)
            steps.note(f"{'built' if built else 'reusing'} {box_paths[suite].name}")
    try:
        with steps.step("lab network namespace and libvirt"):
            if not netns.healthy():
                netns.create()
            if netns.kvm_hidden_from_libvirt():
                steps.note(f"libvirt sees no {netns.KVM_DEVICE}: QEMU's user ({netns.QEMU_USER}) cannot use it, "
                           "and libvirt would probe QEMU again on every call")
        with steps.step("accelerator and CPU placement"):
            resolved = vagrant.resolve(s, suites)
            vagrant.write_resolved(resolved)
            steps.note(f"accelerator {resolved['accelerator']} ({resolved['accelerator_reason']}); "
                       f"placement {resolved['cpusets'] or 'unpinned'}")
        with steps.step("register the boxes with Vagrant"):
            for suite, path in box_paths.items():
                vagrant.ensure_box(path, box.box_name(suite))
        with steps.step("boot both machines (TCG: a few minutes)"):
            boot(s.boot_timeout)
        with steps.step("SSH to both machines"):
            vagrant.write_ssh_config()
            for name in machines.NAMES:
                shell.run(reach.ssh_command(name, "true"), f"{name} booted but does not answer over SSH",
                          error=LabError, timeout=120)
    except BaseException as failure:
        print(f"\nstart.sh up failed: {failure}\nTearing down what was started…", file=sys.stderr)
        for line in teardown():
            print(f"  {line}", file=sys.stderr)
        raise
    status()


# Now and then a guest under TCG hangs in its first minute of boot (soft lockups in virtio's notify, no IP
# after 15 min: tuned, the first up of stop 27) while its twin comes up; a boot from scratch came up.
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


def teardown() -> list[str]:
    """Machines, libvirt networks, daemons, namespace: whatever of them exists, also after a crash."""
    done = []
    if not netns.exists() and not vagrant.defined_domains():
        return done
    if not netns.healthy():
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
    done += netns.destroy()
    paths.SETTINGS_JSON.unlink(missing_ok=True)
    reach.SSH_CONFIG.unlink(missing_ok=True)
    return done


def down() -> None:
    """Everything the lab started, gone; an error when something is left behind."""
    with steps.step("down"):
        done = teardown()
        for line in done:
            steps.note(line)
        if not done:
            steps.note("nothing was running")
    leftovers = [n for n in vagrant.defined_domains() if n in machines.NAMES]
    if netns.exists() or leftovers:
        raise LabError(f"down left something behind: namespace={netns.exists()} domains={leftovers}")


def status() -> None:
    """Each machine's state, IP, box (its Debian suite), provider, accelerator, memory, CPUs, uptime and vCPU
    placement."""
    resolved = vagrant.read_resolved() or {}
    states = vagrant.states()
    print(f"lab namespace: {'up' if netns.healthy() else 'down'}; accelerator: "
          f"{resolved.get('accelerator', '-')} ({resolved.get('accelerator_reason', 'not resolved yet')})")
    print(f"{'machine':8} {'state':12} {'ip':15} {'box':9} {'provider':8} {'accel':5} {'memory':>8} {'cpus':>4} "
          f"{'uptime':>8}  placement")
    for name in machines.NAMES:
        state = states[name]
        memory = cpus = uptime = "-"
        cores = "-"
        if state == "running":
            probe = reach.ssh(name, "free -m | awk '/^Mem:/{print $2}'; nproc; cut -d' ' -f1 /proc/uptime")
            if probe.returncode == 0 and len(probe.stdout.split()) == 3:
                mem, cpus, up_s = probe.stdout.split()
                memory, uptime = f"{mem} MB", f"{float(up_s):.0f} s"
            cores = vagrant.vcpu_placement(name)
        print(f"{name:8} {state:12} {resolved.get('machines', {}).get(name, '-'):15} "
              f"{(resolved.get('suites') or {}).get(name, '-'):9} {'libvirt':8} "
              f"{resolved.get('accelerator', '-'):5} {memory:>8} {cpus:>4} {uptime:>8}  {cores}")
