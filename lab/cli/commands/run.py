"""The full run: up if needed, build, provision, check, load both machines at once, collect, report."""
from __future__ import annotations

from lab.experiment import preflight
from lab.experiment import run as full_run

HELP = "the full run"
NEEDS_ROOT = True
TAKES_LOCK = True
RUN_OPTIONS = "all"


def main(args) -> int:
    opts = args.options
    s, opts = preflight.ready(opts, trials=opts.repeat)
    full_run.validate(opts, s)        # bad knobs are named before anything else is looked at
    preflight.namespace_free(opts)
    return full_run.execute(opts, s)
