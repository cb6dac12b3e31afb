"""The lab's own user (lab/unprivileged.py): made once, never with root's IDs; a command through it runs with its IDs,
no groups, no capability, no way back to root (what it reads behind a closed folder: lab/tests/test_confine.py)."""
from __future__ import annotations

import os
import pwd
import subprocess
import tempfile
from pathlib import Path

import pytest

from lab import unprivileged

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="making and becoming the lab's user needs root")


@pytest.fixture
def account():
    return unprivileged.ensure()


def run(account, argv, reads=()):
    return subprocess.run(account.command(argv, list(reads)), capture_output=True, text=True,
                          env=account.environment(), timeout=60)


def test_the_user_is_made_once_a_system_account_without_login(account):
    entry = pwd.getpwnam(unprivileged.NAME)
    assert account.uid == entry.pw_uid != 0 and account.gid == entry.pw_gid != 0
    assert entry.pw_shell.endswith("nologin") and entry.pw_dir == str(unprivileged.HOME)
    assert unprivileged.ensure() == account         # the second call makes nothing
    home = unprivileged.HOME.stat()
    assert home.st_uid == account.uid and home.st_mode & 0o777 == 0o700


def test_a_command_runs_with_its_ids_no_groups_and_no_way_back(account):
    said = run(account, ["sh", "-c", "id -u; id -g; id -G; grep -E '^(NoNewPrivs|CapEff)' /proc/self/status; "
                                     "echo $HOME"])
    assert said.returncode == 0, said.stderr
    uid, gid, groups, caps, no_new_privs, home = said.stdout.split("\n")[:6]   # status lists CapEff first
    assert (int(uid), int(gid), groups.split()) == (account.uid, account.gid, [str(account.gid)])
    assert no_new_privs.split()[-1] == "1" and int(caps.split()[-1], 16) == 0
    assert home == str(unprivileged.HOME)


def test_it_cannot_change_roots_files(account, tmp_path):
    planted = Path(tempfile.mkdtemp(prefix="lab-user-test-", dir="/tmp"))      # open to all but root's to write
    planted.chmod(0o755)
    try:
        (planted / "roots").write_text("kept\n")
        said = run(account, ["sh", "-c", f"echo changed > {planted}/roots; touch {planted}/new"], reads=[planted])
        assert said.returncode != 0 and "Permission denied" in said.stderr
        assert (planted / "roots").read_text() == "kept\n" and not (planted / "new").exists()
    finally:
        subprocess.run(["rm", "-rf", str(planted)])


def test_a_folder_lent_is_given_back(account, tmp_path):
    folder = tmp_path / "default"
    folder.mkdir()
    with account.lent(folder):
        assert folder.stat().st_uid == account.uid
        (folder / "made").touch()
        os.chown(folder / "made", account.uid, account.gid)
    assert folder.stat().st_uid == 0 and (folder / "made").stat().st_uid == account.uid


def test_a_user_of_that_name_with_roots_ids_is_refused(monkeypatch):
    fake = pwd.struct_passwd((unprivileged.NAME, "x", 0, 0, "", "/root", "/bin/sh"))
    monkeypatch.setattr(unprivileged.pwd, "getpwnam", lambda name: fake)
    with pytest.raises(unprivileged.UserError, match="has root's user or group ID"):
        unprivileged.ensure()


def test_a_folder_lent_twice_is_given_back_by_the_first_lender_only(account, tmp_path):
    """Two reports of one folder at once: the second finds it the user's already, and neither takes nor gives it
    back; the first gives it back when it ends."""
    folder = tmp_path / "run"
    folder.mkdir()
    with account.lent(folder):
        with account.lent(folder):
            pass
        assert folder.stat().st_uid == account.uid, "the second lender gave it back under the first"
    assert folder.stat().st_uid == 0


def test_a_folder_given_back_holds_no_link_fifo_or_socket(account, tmp_path):
    """JMeter (a plan's code with --allow-plan-code) could leave a link where its JTL should be: root then read and
    cut the file it named. Given back, the folder holds folders and regular files only."""
    folder = tmp_path / "default"
    folder.mkdir()
    target = tmp_path / "roots"
    target.write_text("root's\n")
    with account.lent(folder):
        (folder / "jmeter.jtl").symlink_to(target)
        (folder / "deep").mkdir()
        (folder / "deep" / "link").symlink_to("/etc")
        os.mkfifo(folder / "fifo")
        (folder / "kept.csv").write_text("a,b\n")
    assert sorted(p.name for p in folder.rglob("*")) == ["deep", "kept.csv"]
    assert target.read_text() == "root's\n"


@pytest.mark.parametrize("plant", ["file", "folder"])
def test_what_the_user_made_is_taken_back_only_as_a_regular_file(account, tmp_path, plant):
    base = tmp_path / "scratch"
    (base / "target").mkdir(parents=True)
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "one.jar").write_text("root's\n")
    if plant == "file":
        (base / "target" / "one.jar").symlink_to(secret / "one.jar")
        relative = Path("target/one.jar")
    else:
        (base / "linked").symlink_to(secret)
        relative = Path("linked/one.jar")
    with pytest.raises(unprivileged.UserError, match="a link there is refused"):
        unprivileged.take_back(base, relative, tmp_path / "out.jar")
    assert not (tmp_path / "out.jar").exists()
    (base / "target" / "two.jar").write_text("built\n")
    assert unprivileged.take_back(base, Path("target/two.jar"), tmp_path / "out.jar")
    assert (tmp_path / "out.jar").read_text() == "built\n"
    assert not unprivileged.take_back(base, Path("target/none.jar"), tmp_path / "none.jar")
