"""What every command that runs trials (the full run, sweep, ablate, tune) does before its knobs are checked and
before anything starts: the machines' kind chosen (what a knob set may do on it), a run that would fill the disk
refused, real hosts reached (their memory is what the knobs must fit); and, after the checks, the lab's namespace
found free."""
from __future__ import annotations

import dataclasses

from lab import paths, steps
from lab.experiment import disk
from lab.experiment.options import Options
from lab.machines import lifecycle, settings
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

