"""How often a run's calls re-enter the lab's modules: `./start.sh ARGS` run in this process under a profile hook,
counting, inside the call tree of one trial (trial.run_trial), every call that crosses from one lab module into
another: the modules entered, how many of them were entered again after being left, and the entries in all.
Issue 51's measure of how far a run's options travel back and forth through the house.

    sudo .venv/bin/python -m bench.module_trace -- --users 10 --ramp-up 20s --duration 1m --label trace

Run from a checkout's root (its lab/ is the one traced: `cd OTHER && python /path/to/bench/module_trace.py …`
traces another checkout's). Prints the counts and the twenty modules entered most often."""
from __future__ import annotations

import collections
import os
import sys


def main(argv: list[str]) -> int:
    sys.path.insert(0, os.getcwd())          # the checkout run from, not this file's
    os.environ["PATH"] = os.environ.get("PATH", "") + ":/usr/local/sbin:/usr/sbin:/sbin"
    from lab import cli
    entries: collections.Counter = collections.Counter()
    depth = [0]                              # > 0 inside run_trial

    def module_of(frame) -> str | None:
        name = frame.f_globals.get("__name__", "")
        return name if name.startswith("lab.") else None

    def hook(frame, event, arg):
        if event != "call":
            if event == "return" and frame.f_code.co_name == "run_trial" and module_of(frame) == "lab.experiment.trial":
                depth[0] -= 1
            return
        callee = module_of(frame)
        if callee == "lab.experiment.trial" and frame.f_code.co_name == "run_trial":
            depth[0] += 1
            entries[callee] += 1
            return
        if depth[0] <= 0 or callee is None:
            return
        caller = module_of(frame.f_back) if frame.f_back is not None else None
        if caller is not None and caller != callee:
            entries[callee] += 1

    sys.setprofile(hook)
    try:
        code = cli.main(argv[1:] if argv and argv[0] == "--" else argv)
    finally:
        sys.setprofile(None)
    again = {m: n for m, n in entries.items() if n > 1}
    print(f"\nmodule trace of one trial (exit {code}): {len(entries)} lab modules entered, {len(again)} of them "
          f"entered again after being left, {sum(entries.values())} entries in all "
          f"({sum(n - 1 for n in entries.values())} re-entries)")
    for module, n in entries.most_common(20):
        print(f"  {n:6}  {module}")
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
