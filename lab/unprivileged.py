"""The lab's own unprivileged user (`camel-lab`, a system account `prereqs` makes): what runs or reads a customer's
text on the lab's host runs as it, not as root — JMeter (a plan's samplers, a request list's functions,
`--allow-plan-code`'s scripts), the host's JVM check of the jvm_* knobs, a descriptor's Maven build (its plugins) and
the report (labels, messages).

A process started through `command()` has the user's IDs, no supplementary groups, no way to gain privileges again
(no_new_privs: a setuid program stays unprivileged) and SIGTERM when the lab dies. It may write only what the lab
gives or lends the user (`give()`, `lent()`: a JMeter's log, the folder a report writes), results/ with its group
(`share()`: the runs' index) and its own home. It reads what any user may read; where what it
must read sits behind a folder the user cannot enter (a checkout in /root, the engines' private run folder) it keeps
one capability, to read and search files (CAP_DAC_READ_SEARCH), and `Account.reading()` says which folder asked for it:
changing nothing outside its own files, it cannot run code as root."""
from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lab import shell
from lab.errors import LabError

NAME = "camel-lab"
HOME = Path("/var/lib/camel-lab/home")      # its own home: Java's user preferences, nothing of root's
SBIN_PATH = "/usr/local/sbin:/usr/sbin:/sbin"
READ_CAPABILITY = "dac_read_search"


class UserError(LabError):
    """The lab's user cannot be made or is not what the lab made; the message says what to do."""


@dataclass(frozen=True)
class Account:
    name: str
    uid: int
    gid: int
    home: Path

    def blocked(self, paths: list[Path]) -> Path | None:
        """The first folder on the way to one of paths that this user may not enter (search), or None."""
        for path in paths:
            for folder in reversed(Path(path).resolve().parents):
                if not self._may(folder, stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH):
                    return folder
        return None

    def _may(self, path: Path, owner: int, group: int, other: int) -> bool:
        try:
            st = path.stat()
        except OSError:
            return True             # not there (yet): whoever makes it decides
        if st.st_uid == self.uid:
            return bool(st.st_mode & owner)
        return bool(st.st_mode & (group if st.st_gid == self.gid else other))

    def command(self, argv: list[str], reads: list[Path] = (), die_with_parent: bool = True) -> list[str]:
        """argv run as this user (setpriv), reading `reads`: with the read capability only where one of them sits
        behind a folder it may not enter; SIGTERM when its parent dies unless told otherwise (a daemon)."""
        prefix = ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--no-new-privs",
                  *(["--pdeathsig=TERM"] if die_with_parent else [])]
        if self.blocked(list(reads)):
            prefix += [f"--inh-caps=+{READ_CAPABILITY}", f"--ambient-caps=+{READ_CAPABILITY}"]
        return [*prefix, "--", *argv]

    def environment(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment for its processes: root's HOME replaced by the user's own (Java writes preferences there)."""
        return {**(os.environ if base is None else base), "HOME": str(self.home), "USER": self.name,
                "LOGNAME": self.name}

    def give(self, *paths: Path) -> None:
        """paths (files or folders, not what is in them) now the user's: what its process may write."""
        for path in paths:
            os.chown(path, self.uid, self.gid, follow_symlinks=False)

    def share(self, folder: Path) -> None:
        """folder writable by the user's group for good (the lab's own results/, where every report writes the runs'
        index: lending it would race between two reports at once); its owner stays."""
        os.chown(folder, -1, self.gid, follow_symlinks=False)
        folder.chmod(folder.stat().st_mode | stat.S_IRWXG)

    @contextlib.contextmanager
    def lent(self, *folders: Path) -> Iterator[None]:
        """folders the user's while the context lasts (its process makes files there), then their owner's again:
        what it made stays its own, as the record of who wrote it. One the user owns already is left as it is."""
        owners = {folder: st for folder in folders if (st := folder.stat()).st_uid != self.uid}
        self.give(*owners)
        try:
            yield
        finally:
            for folder, st in owners.items():
                with contextlib.suppress(OSError):
                    os.chown(folder, st.st_uid, st.st_gid, follow_symlinks=False)

    def reading(self, reads: list[Path]) -> dict:
        """For run.json: who ran it and whether it kept the read capability, and for which folder."""
        blocked = self.blocked(list(reads))
        said = {"user": self.name, "uid": self.uid, "read_all": blocked is not None}
        if blocked is not None:
            said["why"] = f"{blocked} is closed to {self.name}"
        return said



def current_reading() -> dict:
    """run.json's record of a process the lab started as itself (the lab not being root)."""
    uid = os.geteuid()
    try:
        name = pwd.getpwuid(uid).pw_name
    except KeyError:
        name = str(uid)
    return {"user": name, "uid": uid, "read_all": False}


def find() -> Account | None:
    """The lab's user if it exists (checked: never root's IDs)."""
    try:
        entry = pwd.getpwnam(NAME)
    except KeyError:
        return None
    if entry.pw_uid == 0 or entry.pw_gid == 0:
        raise UserError(f"the user {NAME} has root's user or group ID ({entry.pw_uid}:{entry.pw_gid}): the lab runs "
                        f"JMeter as {NAME} to keep root's powers from it; remove that user (userdel {NAME}) and run "
                        "./start.sh prereqs")
    return Account(NAME, entry.pw_uid, entry.pw_gid, HOME)


def ensure() -> Account | None:
    """The lab's user, made when missing (a system account without login or password, its home HOME); None when the
    lab does not run as root (then what it starts is already unprivileged)."""
    if os.geteuid() != 0:
        return None
    account = find()
    if account is None:
        useradd = shutil.which("useradd", path=os.environ.get("PATH", "") + ":" + SBIN_PATH) or "useradd"
        shell.run([useradd, "--system", "--user-group", "--home-dir", str(HOME), "--no-create-home",
                   "--shell", "/usr/sbin/nologin", "--comment", "Camel Tuning Lab, JMeter and host checks", NAME],
                  f"making the lab's user {NAME}", error=UserError)
        account = find()
    # asked for often (each poll of a local engine): the home is set only when it is not so already
    home = HOME.stat() if HOME.is_dir() else None
    if home is None or home.st_uid != account.uid or home.st_mode & 0o777 != 0o700:
        HOME.mkdir(parents=True, exist_ok=True)
        account.give(HOME)
        HOME.chmod(0o700)
    return account
