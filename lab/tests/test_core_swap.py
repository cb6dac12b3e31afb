"""The machines trade host cores half-way through the measured window (lab/experiment/core_swap.py)."""
from __future__ import annotations

import threading
import time

import pytest

from lab.experiment import core_swap, load
from lab.machines import vagrant

CLOSED = load.Profile(users=150, ramp_up_s=150, duration_s=180)


class Cores:
    """The machines' host cores as libvirt would show them; `refuse` makes pinning one machine fail."""

    def __init__(self, cpusets: dict[str, str], refuse: str | None = None) -> None:
        self.now, self.refuse, self.pins = dict(cpusets), refuse, []

    def pin(self, vm: str, cores: str, when: str = "") -> None:
        if vm == self.refuse:
            raise RuntimeError(f"virsh vcpupin camel-lab-{vm}: refused")
        self.pins.append((vm, cores))
        self.now[vm] = cores


def test_the_swap_is_planned_at_the_middle_of_the_measured_window():
    assert core_swap.plan("swap", {"default": "0", "tuned": "1"}, CLOSED, 150) == {"mode": "swap", "at_s": 240.0}
    assert core_swap.plan("swap", {"default": "0", "tuned": "1"}, CLOSED, 0)["at_s"] == 165.0
    open_model = load.Profile(model="open", rate_per_s=20, ramp_up_s=60, duration_s=120)
    assert core_swap.plan("swap", {"default": "0", "tuned": "1"}, open_model, 60)["at_s"] == 120.0


@pytest.mark.parametrize(("mode", "cpusets", "profile", "why"), [
    ("fixed", {"default": "0", "tuned": "1"}, CLOSED, "--cores fixed"),
    ("swap", {}, CLOSED, "the machines are not pinned to cores of their own"),
    ("swap", {"default": "0-1", "tuned": "0-1"}, CLOSED, "the machines are not pinned to cores of their own"),
    ("swap", {"default": "0", "tuned": "1"}, load.Profile(model="steps", step_rates=(10, 20), ramp_up_s=30),
     "the steps model judges each stage on its own"),
])
def test_the_cores_stay_fixed_and_run_json_says_why(mode, cpusets, profile, why):
    assert core_swap.plan(mode, cpusets, profile, 30) == {"mode": "fixed", "why": why}


def test_an_unknown_mode_is_refused():
    with pytest.raises(ValueError, match="cores: 'half' is not one of swap, fixed"):
        core_swap.plan("half", {"default": "0", "tuned": "1"}, CLOSED, 150)


def wait_for(condition, seconds: float = 5) -> None:
    until = time.monotonic() + seconds
    while not condition() and time.monotonic() < until:
        time.sleep(0.01)


def test_the_machines_trade_cores_during_the_load_and_get_their_own_back_after():
    cores = Cores({"default": "0,1", "tuned": "2,3"})
    said = []
    swap = core_swap.CoreSwap(cores.now, 0.05, cores.pin, log=said.append)
    swap.started(1234)
    wait_for(lambda: swap.result["swapped_at"])
    assert cores.now == {"default": "2,3", "tuned": "0,1"}
    record = swap.stop()
    assert cores.now == {"default": "0,1", "tuned": "2,3"}
    assert record["mode"] == "swap" and record["at_s"] == 0.05 and record["error"] is None
    assert abs(record["swapped_at"] - time.time()) < 5 and record["after_s"] >= 0.05
    assert said == ["cores swapped half-way through the measured window: default now on 2,3; tuned now on 0,1"]


def test_a_load_that_ends_first_leaves_the_cores_alone():
    cores = Cores({"default": "0", "tuned": "1"})
    swap = core_swap.CoreSwap(cores.now, 60, cores.pin, log=lambda *a: None)
    swap.started(1234)
    record = swap.stop()
    assert cores.pins == [] and record["swapped_at"] is None
    assert record["error"] == "the load ended before the swap"


def test_a_refused_pin_is_recorded_and_the_load_goes_on():
    cores = Cores({"default": "0", "tuned": "1"}, refuse="tuned")
    said = []
    swap = core_swap.CoreSwap(cores.now, 0.01, cores.pin, log=said.append)
    swap.started(1234)
    wait_for(lambda: swap.result["error"])
    record = swap.stop()
    assert record["swapped_at"] is None
    assert record["error"] == "swap: virsh vcpupin camel-lab-tuned: refused"
    assert said and said[0].startswith("WARNING: the machines' cores could not be swapped")


def test_a_pin_libvirt_does_not_show_is_not_taken_for_a_swap(monkeypatch):
    """The swap pins through vagrant.pin_checked: libvirt keeping the shared cores is a failed swap."""
    monkeypatch.setattr(vagrant, "pin", lambda vm, cores: None)
    monkeypatch.setattr(vagrant, "vcpu_placement", lambda vm: "0-1")
    swap = core_swap.CoreSwap({"default": "0", "tuned": "1"}, 0.01, vagrant.pin_checked, log=lambda *a: None)
    swap.started(1234)
    wait_for(lambda: swap.result["error"])
    assert swap.stop()["error"] == "swap: default: its vCPUs are on host cores 0-1 after the swap, not 1"


def test_every_watch_beside_the_load_is_told_jmeter_started():
    told = []

    class Watch:
        def started(self, pid):
            told.append((threading.current_thread().name, pid))

    core_swap.Beside(Watch(), None, Watch()).started(42)
    assert [pid for _, pid in told] == [42, 42]
