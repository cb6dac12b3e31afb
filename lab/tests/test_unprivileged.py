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


def test_a_shared_folder_is_its_groups_to_write_and_keeps_its_owner(account, tmp_path):
    folder = tmp_path / "results"
    folder.mkdir(mode=0o755)
    account.share(folder)
    st = folder.stat()
    assert st.st_uid == 0 and st.st_gid == account.gid and st.st_mode & 0o070 == 0o070
