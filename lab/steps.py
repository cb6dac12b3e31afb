"""Progress on the terminal: each step with its elapsed time, so a slow TCG run is never a silent one."""
from __future__ import annotations

import sys
import threading
import time
from contextlib import contextmanager

_T0 = time.monotonic()
_QUIET = threading.local()        # a background job's thread: its steps unsaid (the console is another's)


def _clock() -> str:
    total = int(time.monotonic() - _T0)
    return f"{total // 60:02d}:{total % 60:02d}"


def note(message: str) -> None:
    print(f"[{_clock()}]    {message}", flush=True)


@contextmanager
def step(title: str):
    """Prints the step, runs the block, prints its duration (or that it failed); silent on a quiet() thread."""
    if getattr(_QUIET, "on", False):
        yield
        return
    print(f"[{_clock()}] >> {title}", flush=True)
    started = time.monotonic()
    try:
        yield
    except BaseException:
        print(f"[{_clock()}] !! {title}: failed after {time.monotonic() - started:.0f} s", flush=True, file=sys.stderr)
        raise
    print(f"[{_clock()}] ok {title} ({time.monotonic() - started:.0f} s)", flush=True)


@contextmanager
def quiet():
    """On this thread the steps run unsaid: a job in the background while the console tells another's."""
    _QUIET.on = True
    try:
        yield
    finally:
        _QUIET.on = False
