"""lifecycle.boot: a failed boot is tried once more from scratch, its consoles kept; a second failure is said."""
import pytest

from lab import machines, paths
from lab.machines import containers, lifecycle, vagrant


@pytest.fixture
def fake_boot(monkeypatch, tmp_path):
    calls = []
    results = []          # what each `vagrant up` does: None boots, an exception fails
    consoles = tmp_path / "qemu"
    consoles.mkdir()
    for name in machines.NAMES:
        (consoles / f"lab-{name}-serial.log").write_text(f"{name}: watchdog: BUG: soft lockup\n")
    monkeypatch.setattr(vagrant, "SERIAL_LOG", str(consoles / "lab-{name}-serial.log"))
    monkeypatch.setattr(paths, "LOG_DIR", tmp_path / "log")

    def up(timeout):
        calls.append(("up", timeout))
        outcome = results.pop(0)
        if outcome is not None:
            raise outcome
    monkeypatch.setattr(vagrant, "up", up)
    monkeypatch.setattr(vagrant, "destroy", lambda: calls.append(("destroy",)) or True)
    monkeypatch.setattr(vagrant, "in_containers", lambda: False)
    return calls, results, tmp_path / "log"


def test_a_boot_that_fails_once_is_tried_again_from_scratch(fake_boot, capsys):
    calls, results, log = fake_boot
    results += [vagrant.MachineError("the machines did not come up (vagrant up exited 1)"), None]
    lifecycle.boot(600)
    assert calls == [("up", 600), ("destroy",), ("up", 600)]
    kept = sorted(p.name for p in log.iterdir())
    assert len(kept) == 2 and all("-attempt-1-" in k for k in kept), kept
    assert "soft lockup" in (log / kept[1]).read_text()          # the failed boot's console, not overwritten
    said = capsys.readouterr()
    assert "boot 1 of 2 failed: the machines did not come up" in said.out + said.err


def test_on_containers_a_failed_boot_also_removes_the_containers_vagrant_lost(fake_boot, monkeypatch, capsys):
    """A killed lab's containers, which Vagrant's destroy does not know, would refuse the next boot by their names
    ("Conflict. The container name "/camel-lab-tuned" is already in use", the e2e of 2026-11-29)."""
    calls, results, _ = fake_boot
    results += [vagrant.MachineError("the machines did not come up (vagrant up exited 1)"), None]
    monkeypatch.setattr(vagrant, "in_containers", lambda: True)
    monkeypatch.setattr(containers, "remove_containers",
                        lambda: calls.append(("remove",)) or ["container camel-lab-tuned removed"])
    lifecycle.boot(600)
    assert calls == [("up", 600), ("destroy",), ("remove",), ("up", 600)]
    assert "container camel-lab-tuned removed (Vagrant did not know it)" in capsys.readouterr().out


def test_a_second_failure_is_raised(fake_boot):
    calls, results, _ = fake_boot
    results += [vagrant.MachineError("first"), vagrant.MachineError("second")]
    with pytest.raises(vagrant.MachineError, match="second"):
        lifecycle.boot(600)
    assert calls == [("up", 600), ("destroy",), ("up", 600)]


def test_a_boot_that_works_is_not_repeated(fake_boot):
    calls, results, log = fake_boot
    results.append(None)
    lifecycle.boot(600)
    assert calls == [("up", 600)] and not log.exists()


def test_the_kinds_own_prerequisites_are_a_step_only_where_some_are_missing(monkeypatch, capsys):
    from lab.machines import prereqs
    installed = []
    monkeypatch.setattr(prereqs, "install", installed.extend)
    monkeypatch.setattr(prereqs, "missing", lambda wanted: [])
    lifecycle.install_kind_prereqs("containers")        # up saw to the common ones: nothing more to say
    assert installed == [] and "prerequisites" not in capsys.readouterr().out
    monkeypatch.setattr(prereqs, "missing", lambda wanted: ["docker.io"])
    lifecycle.install_kind_prereqs("containers")
    assert installed == ["docker.io"]
    out = capsys.readouterr().out
    assert "host prerequisites for containers" in out and "installing docker.io" in out
