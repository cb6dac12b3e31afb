"""The remote engines' work folders (lab/experiment/load/engines.py): /tmp and /var/tmp are everyone's, and the lab
runs as root. A folder or symlink planted where a run's folder goes would receive the run's RMI keystore and its
password, hold a JMeter the engine would run, or make the cleanup delete what it points to: the lab makes its folders
anew, 0700, in a parent only it can change, refuses anything else by name, and removes only what it made."""
from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest

from lab.experiment.load import engines

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="the lab runs as root; planted folders are another user's")
NOBODY = 65534


def mode(path: Path) -> int:
    return stat.S_IMODE(os.lstat(path).st_mode)


def no_java() -> engines.Remote:
    """A generator whose login has no java: the engines stop before any starts."""
    return engines.Remote(lambda script: ["env", "PATH=/nonexistent", "/bin/bash", "-c", script])


def test_a_symlink_planted_as_the_runs_folder_is_refused_and_what_it_points_to_is_left(tmp_path):
    run_id = f"test-{tmp_path.parent.name}-{tmp_path.name}"   # unique: pytest-N per session
    target = tmp_path / "elsewhere"
    target.mkdir()
    (target / "precious").write_text("keep")
    Path(engines.WORK).mkdir(mode=0o700, exist_ok=True)
    planted = Path(engines.WORK) / run_id
    planted.symlink_to(target)
    try:
        with pytest.raises(engines.EngineError, match=f"{planted} exists already .*: the lab makes this folder anew"):
            with engines.Engines(run_id, tmp_path, [engines.Engine("gen1", "127.0.0.1")], lambda e: no_java(),
                                 "127.0.0.1", log=lambda _: None):
                pytest.fail("the engines must not start")
        assert planted.is_symlink()
    finally:
        planted.unlink()
    assert [p.name for p in target.iterdir()] == ["precious"] and (target / "precious").read_text() == "keep"


@pytest.mark.parametrize("planted", ["another user's", "writable by everyone"])
def test_a_parent_folder_another_user_can_change_is_refused(tmp_path, monkeypatch, planted):
    parent = tmp_path / "camel-lab-engines"
    parent.mkdir(mode=0o755)
    if planted == "another user's":
        os.chown(parent, NOBODY, NOBODY)
    else:
        parent.chmod(0o777)
    monkeypatch.setattr(engines, "WORK", str(parent))
    with pytest.raises(engines.EngineError, match=f"{parent} is a symlink, not this user's or writable by others"):
        with engines.Engines("r1", tmp_path, [engines.Engine("gen1", "127.0.0.1")], lambda e: no_java(),
                             "127.0.0.1", log=lambda _: None):
            pytest.fail("the engines must not start")
    assert list(parent.iterdir()) == []


def test_the_runs_folder_is_made_private_and_removed_with_what_it_holds(tmp_path, monkeypatch):
    parent = tmp_path / "camel-lab-engines"
    monkeypatch.setattr(engines, "WORK", str(parent))
    before = os.umask(0o022)
    try:
        e = engines.Engines("r1", tmp_path, [engines.Engine("gen1", "127.0.0.1")], lambda _: no_java(), "127.0.0.1",
                            log=lambda _: None)
        e._make_keystore()
    finally:
        os.umask(before)
    assert mode(parent) == 0o700 and mode(parent / "r1") == 0o700
    assert {p.name: mode(p) for p in (parent / "r1").iterdir()} == {"rmi_keystore.jks": 0o600, "rmi.properties": 0o600}
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "precious").write_text("keep")
    (parent / "r1" / "link").symlink_to(tmp_path / "elsewhere")
    e._stop_all()
    assert not (parent / "r1").exists() and (tmp_path / "elsewhere" / "precious").exists()


def private(path: Path, mask: str = "077") -> subprocess.CompletedProcess:
    """The generators' side: engines.PRIVATE_SH's `private` run by bash, as the lab's scripts there run it."""
    return subprocess.run(["bash", "-c", f"{engines.PRIVATE_SH}private {path} {mask}; echo taken"],
                          capture_output=True, text=True)


def test_a_generator_takes_only_a_private_folder_of_its_own(tmp_path):
    fresh = tmp_path / "fresh"
    assert private(fresh).stdout == "taken\n" and mode(fresh) == 0o700
    assert private(fresh).stdout == "taken\n"        # its own: taken again (a generator that is this machine)
    shared = tmp_path / "shared"
    shared.mkdir(mode=0o755)
    assert private(shared, "022").stdout == "taken\n"     # a parent only its owner can change
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    (tmp_path / "other").mkdir(mode=0o700)
    os.chown(tmp_path / "other", NOBODY, NOBODY)
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o777)
    for bad in ("link", "other", "open", "shared"):
        done = private(tmp_path / bad)
        assert done.returncode == 3 and done.stdout == (f"{tmp_path / bad} is a symlink, not root's or open to "
                                                        "others: the lab will not use it; remove it\n"), bad
