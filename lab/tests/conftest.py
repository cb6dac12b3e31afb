"""What every lab test shares: no test takes the checkout's own lab lock (.lab/lock), which a real run, or
another test run beside this one, may hold; and no test sees the kind of a lab that may be up in this checkout
(.lab/settings.json) or that a command before it chose (lab.provision.machine_fit): VMs unless it says otherwise,
reached as VMs even after a test that went through hosts.prepare (it switches the whole process to real hosts);
and the tuner's tests' run folders and knob sets in a folder of their own (sets)."""
import pytest

from lab import lock
from lab.machines import lifecycle, provider, reach, vagrant
from lab.provision import machine_fit


@pytest.fixture(autouse=True)
def own_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(lock, "PATH", tmp_path / "lab.lock")


@pytest.fixture(autouse=True)
def machines_are_vms_unless_said(monkeypatch):
    monkeypatch.setattr(vagrant, "kind", lambda: provider.LIBVIRT)
    monkeypatch.setattr(lifecycle, "kind", lambda s: provider.LIBVIRT)
    monkeypatch.setattr(reach, "_reach", dict(reach._reach))   # restored after: test_collect failed after test_hosts
    machine_fit.use(provider.LIBVIRT)
    yield
    machine_fit.use(provider.LIBVIRT)


@pytest.fixture
def sets(tmp_path, monkeypatch):
    """Run folders and knob sets in tmp_path; no report subprocess."""
    from lab import paths
    from lab.experiment import reporting
    from lab.provision import knob_sets
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(reporting, "report_command", lambda *a, **k: 0)
    folder = tmp_path / "knob_sets"
    folder.mkdir()
    for file in knob_sets.DIR.glob("*.yml"):
        (folder / file.name).write_text(file.read_text())
    monkeypatch.setattr(knob_sets, "DIR", folder)
    return folder
