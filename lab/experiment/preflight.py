"""What every command that runs trials (the full run, sweep, ablate, tune) does before its knobs are checked and
before anything starts: the machines' kind chosen (what a knob set may do on it), a run that would fill the disk
refused, real hosts reached (their memory is what the knobs must fit); and, after the checks, the lab's namespace
found free."""
from __future__ import annotations

import contextlib
import dataclasses
import os

from lab import paths, steps
from lab.errors import LabError
from lab.experiment import design, disk
from lab.experiment.options import Options
from lab.machines import ahead, box, image, lifecycle, provider, settings
from lab.provision import hosts, machine_fit


def ready(opts: Options, trials: int) -> tuple[settings.Settings, Options]:
    """The lab's settings and the options with --hosts reached (opts.reached), once the kind is chosen and the disk
    has room for `trials` trials; LabError or ValueError naming what stops the run."""
    s = settings.load()
    machine_fit.use("hosts" if opts.hosts is not None else lifecycle.kind(s))
    disk.check(opts.profile, trials, paths.RESULTS)
    if opts.hosts is not None:
        with steps.step(f"the hosts of {opts.hosts}: SSH, sudo, facts (nothing is changed)"):
            opts = dataclasses.replace(opts, reached=hosts.prepare(opts.hosts, steps.note))
    return s, opts


def namespace_free(opts: Options) -> None:
    """The lab namespace is not another checkout's lab (real hosts need none)."""
    if opts.hosts is None:
        lifecycle.refuse_foreign()


def images_ahead(hosts) -> contextlib.AbstractContextManager:
    """While a command that runs trials checks its options and knobs (the app's jar is built there), the
    machines' base (a container's image, a VM's box) is made ahead where `up` will need it (lab/machines/ahead.py).
    Its guesses are cheap and safe: each machine's own knob set's Java (a --set jvm_version the guess misses is built
    by `up` itself), and nothing at all without root, with --hosts, or when any of it cannot be read (the checks
    then say why)."""
    if hosts is not None or os.geteuid() != 0:
        return contextlib.nullcontext()
    try:
        kind = lifecycle.kind(settings.load())
        suites = set(design.own_suites().values())
    except (LabError, ValueError, OSError):
        return contextlib.nullcontext()
    if kind == provider.LIBVIRT:
        return ahead.images(kind, suites, lambda suite: not box.box_file(suite).exists())
    return ahead.images(kind, suites, lambda suite: not image.recorded(image.base_name(suite)))
