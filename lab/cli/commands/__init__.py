"""./start.sh's commands, one module each (pyperf's shape, as report/ has): the table below is the whole list.

Every command module has
    HELP          its line in `./start.sh --help`
    NEEDS_ROOT    whether it needs root (the namespace, the machines, the lab's files)
    TAKES_LOCK    whether it changes the lab, so takes its lock (one such command at a time, lab/lock.py)
    RUN_OPTIONS   the run options it takes: "all" (every trial is a full run: the options built and checked before
                  the lock, as args.options), or the set of those it shares a name with (provision's --set)
    add_arguments(parser)   its own arguments, where it has any
    main(args) -> int       the command, its exit code
The full run (no command) is `run`; `sweep` and `ablate` share the sweep's module."""
from __future__ import annotations

from types import ModuleType

from lab.cli.commands import (
    ablate,
    compare,
    down,
    exec_,
    gate,
    history,
    prereqs,
    provision,
    report,
    run,
    runs,
    service,
    status,
    sweep,
    tune,
    up,
)

RUN = run            # ./start.sh [run options]: the full run

COMMANDS: dict[str, ModuleType] = {
    "report": report, "compare": compare, "up": up, "status": status, "down": down, "prereqs": prereqs,
    "provision": provision, "service": service, "runs": runs, "history": history, "sweep": sweep, "ablate": ablate,
    "tune": tune, "gate": gate, "exec": exec_,
}


def of(name: str | None) -> ModuleType:
    """The module of a command (None: the full run)."""
    return RUN if name is None else COMMANDS[name]
