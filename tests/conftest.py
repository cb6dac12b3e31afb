"""What the end-to-end modules share as fixtures: the two machines as system containers, brought up once for the
containers' e2e and the real hosts' (which takes them as hosts it did not make), taken down at the session's end
(one `up` fewer than a module each: ~1 min of CI's time); and the VMs' box, built beside them when the VMs' e2e
runs later in the session."""
import contextlib
import os
import sys
import time
import warnings
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lab.machines import ahead, box, provider, settings  # noqa: E402
from tests.lab_e2e import ROOT, assert_nothing_left  # noqa: E402
from tests.lab_e2e import on_containers as start  # noqa: E402

VM_MODULE = "test_machines_e2e.py"


@pytest.fixture(scope="session")
def containers_up(request):
    start("down", env={"LAB_PROVIDER": "auto"})      # whatever kind a killed run left
    started = time.monotonic()
    up = start("up")
    print(up.stdout[-4000:], up.stderr[-2000:])
    assert up.returncode == 0, f"./start.sh up failed:\n{up.stdout[-3000:]}\n{up.stderr[-3000:]}"
    print(f"containers up in {time.monotonic() - started:.0f} s")
    if any(item.path.name == VM_MODULE for item in request.session.items):
        request.getfixturevalue("vm_box")       # built while the containers' runs load (their CPU mostly idle)
    yield up
    down = start("down")
    assert down.returncode == 0, down.stderr
    assert_nothing_left()


BOX_NICE = 10       # the build's autogroup below the containers' runs: it takes what their loads leave idle


@pytest.fixture(scope="session")
def vm_box():
    """The VMs' box (bookworm, what `up` boots both machines from) made by the lab's own build-ahead process
    (lab/machines/ahead.py) where it is missing and its tools are installed: asked for by containers_up once they
    are up, so it is built while their short runs load the host's CPU only in part (CI: the box took ~2 of the VMs'
    `up`'s 3.5 minutes, after the containers' e2e). Calling it puts it in the lab's box folder, as `up` would, or
    leaves it to `up` where the build failed (a warning in pytest's summary, with its log's end). Cancelled at the
    session's end if never taken."""
    suite = box.SUITES[17]
    build = None
    if (os.geteuid() == 0 and not box.box_file(suite).exists()
            and not ahead.tools_missing(provider.LIBVIRT)):
        build = ahead.start(suite, kind=provider.LIBVIRT)
        with contextlib.suppress(OSError):      # a kernel without autogroups: as it is
            Path(f"/proc/{build.proc.pid}/autogroup").write_text(f"{BOX_NICE}\n")
        print(f"the VMs' {suite} box being built ahead (its output: {build.log})")

    def wait():
        nonlocal build
        if build is None:
            return
        taken, build = build, None
        try:
            path, _ = box.ensure(settings.load(), suite, made_ahead=taken.take)
            print(f"the VMs' box made ahead: {path.relative_to(ROOT)}")
        except box.BoxError as failure:        # said in pytest's summary, not only in captured output
            warnings.warn(f"the VMs' box made ahead failed; `up` builds it: {failure}", stacklevel=1)
    yield wait
    if build is not None:
        build.cancel()
