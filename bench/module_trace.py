"""How often a run's calls re-enter the lab's modules: `./start.sh ARGS` run in this process under a profile hook,
counting, inside the call tree of one trial (trial.run_trial), two things (issue 51's measures):

- **every call** that crosses from one lab module into another: the modules entered, how many of them were entered
  again after being left, and the entries in all (polling loops, a watch's every tick, count here too);
- **the run's options followed**: only the calls that receive the run's options (an argument of type Options, or
  an object holding them, as a trial's self.opts), in the order they are made: the modules that walk visits, and
  how many of them it comes back to after having gone to another (a "return to a room already left").

    sudo .venv/bin/python -m bench.module_trace -- --users 10 --ramp-up 20s --duration 1m --label trace

Run from a checkout's root (its lab/ is the one traced: `cd OTHER && python /path/to/bench/module_trace.py …`
traces another checkout's). Prints the counts, the modules entered most often and the options' walk."""
from __future__ import annotations

import collections
import os
import sys


def is_options(value) -> bool:
    """The run's options: lab.experiment.options.Options (after issue 51) or lab.experiment.run.Options (before)."""
    kind = type(value)
    return kind.__name__ == "Options" and kind.__module__ in ("lab.experiment.options", "lab.experiment.run")


def carries_options(value) -> bool:
    """The options, or an object holding them as an attribute (a trial's self.opts)."""
    if is_options(value):
        return True
    attrs = getattr(value, "__dict__", None)
    return isinstance(attrs, dict) and any(is_options(v) for v in attrs.values())


def walk_counts(walk: list[str]) -> tuple[int, list[str], int]:
    """(modules visited, those returned to after the walk left them, returns in all) of a walk of modules."""
    seen: set[str] = set()
    returned: list[str] = []
    returns = 0
    previous = None
    for module in walk:
        if module != previous:
            if module in seen:
                returns += 1
                if module not in returned:
                    returned.append(module)
            seen.add(module)
        previous = module
    return len(seen), returned, returns


def main(argv: list[str]) -> int:
    sys.path.insert(0, os.getcwd())          # the checkout run from, not this file's
    os.environ["PATH"] = os.environ.get("PATH", "") + ":/usr/local/sbin:/usr/sbin:/sbin"
    from lab import cli
    entries: collections.Counter = collections.Counter()
    walk: list[str] = []                     # the modules of the calls that receive the options, in order
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
            walk.append(callee)
            return
        if depth[0] <= 0 or callee is None:
            return
        caller = module_of(frame.f_back) if frame.f_back is not None else None
        if caller is not None and caller != callee:
            entries[callee] += 1
        if any(carries_options(v) for v in frame.f_locals.values()):
            walk.append(callee)

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
    visited, returned, returns = walk_counts(walk)
    print(f"\nthe run's options followed through the trial: {len(walk)} calls receive them, in {visited} modules; "
          f"the walk comes back to {len(returned)} modules after leaving them, {returns} returns in all")
    print("  returned to: " + (", ".join(returned) or "none"))
    steps = [m for i, m in enumerate(walk) if i == 0 or walk[i - 1] != m]
    print("  walk: " + " → ".join(s.removeprefix("lab.") for s in steps))
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
