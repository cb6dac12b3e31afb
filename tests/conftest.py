"""What the end-to-end modules share as fixtures: the two machines as system containers, brought up once for the
containers' e2e and the real hosts' (which takes them as hosts it did not make), taken down at the session's end.
(One `up` fewer than a module each: ~1 min of CI's time.)"""
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from tests.lab_e2e import assert_nothing_left  # noqa: E402
from tests.lab_e2e import on_containers as start  # noqa: E402


@pytest.fixture(scope="session")
def containers_up():
    start("down", env={"LAB_PROVIDER": "auto"})      # whatever kind a killed run left
    started = time.monotonic()
    up = start("up")
    print(up.stdout[-4000:], up.stderr[-2000:])
    assert up.returncode == 0, f"./start.sh up failed:\n{up.stdout[-3000:]}\n{up.stderr[-3000:]}"
    print(f"containers up in {time.monotonic() - started:.0f} s")
    yield up
    down = start("down")
    assert down.returncode == 0, down.stderr
    assert_nothing_left()
