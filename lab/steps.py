"""Progress on the terminal: each step with its elapsed time, so a slow TCG run is never a silent one."""
from __future__ import annotations

import sys
import time
from contextlib import contextmanager

_T0 = time.monotonic()


def _clock() -> str:
    total = int(time.monotonic() - _T0)
    return f"{total // 60:02d}:{total % 60:02d}"


def note(message: str) -> None:
    print(f"[{_clock()}]    {message}", flush=True)


@contextmanager
def step(title: str):
    """Prints the step, runs the block, prints its duration (or that it failed)."""
    print(f"[{_clock()}] >> {title}", flush=True)
    started = time.monotonic()
    try:
        yield
    except BaseException:
        print(f"[{_clock()}] !! {title}: failed after {time.monotonic() - started:.0f} s", flush=True, file=sys.stderr)
        raise
    print(f"[{_clock()}] ok {title} ({time.monotonic() - started:.0f} s)", flush=True)
