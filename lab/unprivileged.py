"""The lab's own unprivileged user (`camel-lab`, a system account `prereqs` makes): what runs or reads a customer's
text on the lab's host runs as it, never as root — JMeter (a plan's samplers, a request list's functions,
`--allow-plan-code`'s scripts), the host's JVM check of the jvm_* knobs, a descriptor's Maven build (its plugins),
`service check`'s start of a service and jvm_cds's training start, and the report (labels, messages).

A process started through `command()` is confined (lab/confine.py): the user's IDs, no supplementary groups, no
capability, no way to gain privileges again (no_new_privs: a setuid program stays unprivileged), SIGTERM when the lab
dies, only the environment it is given, and through a folder the user may not enter (a checkout in /root) it sees
only the paths it was given. It may write only what the lab gives or lends the user (`give()`, `lent()`: a JMeter's
log, the folder a report writes) and its own home; the lab reads back what it wrote without following links."""
from __future__ import annotations

import contextlib
import os
import pwd
import shutil
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from lab import redact, shell
from lab.errors import LabError

NAME = "camel-lab"
HOME = Path("/var/lib/camel-lab/home")      # its own home: Java's user preferences, nothing of root's
SBIN_PATH = "/usr/local/sbin:/usr/sbin:/sbin"


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
                if not self.enters(folder):
                    return folder
        return None

    def enters(self, folder: Path) -> bool:
        """Whether this user may enter (search) folder itself."""
        return self._may(folder, stat.S_IXUSR, stat.S_IXGRP, stat.S_IXOTH)

    def _may(self, path: Path, owner: int, group: int, other: int) -> bool:
        try:
            st = path.stat()
        except OSError:
            return True             # not there (yet): whoever makes it decides
        if st.st_uid == self.uid:
            return bool(st.st_mode & owner)
        return bool(st.st_mode & (group if st.st_gid == self.gid else other))

    def setpriv(self, die_with_parent: bool = True) -> list[str]:
        """setpriv's arguments that become this user: its IDs, no groups, no capability in any set (not even the
        bounding set, whatever a program's file capabilities say), no way back (no_new_privs); SIGTERM when its
        parent dies unless told otherwise (a daemon)."""
        return ["setpriv", f"--reuid={self.uid}", f"--regid={self.gid}", "--clear-groups", "--no-new-privs",
                "--inh-caps=-all", "--bounding-set=-all", *(["--pdeathsig=TERM"] if die_with_parent else [])]

    def command(self, argv: list[str], reads: list[Path] = (), die_with_parent: bool = True,
                env: dict[str, str] | None = None, netns: Path | None = None, cgroup=None, binds=None) -> list[str]:
        """argv run as this user, confined (lab/confine.py): the paths it reads or writes shown through folders it may
        not enter, env alone (None: environment()), in netns (None: the caller's) and cgroup when given, binds (file:
        the file it shows instead)."""
        from lab import confine
        return confine.command(self, argv, list(reads), env, netns, cgroup, die_with_parent, binds)

    # What its processes (JMeter, a build, the JVM check, the report) get of the lab's environment: where programs
    # are, the locale and time zone, the terminal, which Java, and each tool's own options (Maven's, JMeter's JVM's).
    # Nothing else: the lab's LAB_* settings, a study's PGPASSWORD, tokens and keys stay with the lab.
    ENVIRONMENT = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM", "JAVA_HOME", "MAVEN_OPTS", "MAVEN_ARGS", "JVM_ARGS",
                   "http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY")

    def environment(self, base: dict[str, str] | None = None) -> dict[str, str]:
        """The environment for its processes: of `base` (the lab's own by default) only ENVIRONMENT and LC_*, and none
        holding a secret (a proxy's or an option's password: redact.without_secrets); HOME, USER and LOGNAME the
        user's own (Java writes preferences there)."""
        kept = {k: v for k, v in (os.environ if base is None else base).items()
                if k in self.ENVIRONMENT or k.startswith("LC_")}
        return {**redact.without_secrets(kept), "HOME": str(self.home), "USER": self.name, "LOGNAME": self.name}

    def give(self, *paths: Path) -> None:
        """paths (files or folders, not what is in them) now the user's: what its process may write."""
        for path in paths:
            os.chown(path, self.uid, self.gid, follow_symlinks=False)

    @contextlib.contextmanager
    def lent(self, *folders: Path) -> Iterator[None]:
        """folders the user's while the context lasts (its process makes files there), then their owner's again:
        what it made stays its own, as the record of who wrote it, but nothing in them that is not a folder or a
        regular file (disarm). One the user owns already is left as it is."""
        owners = {folder: st for folder in folders if (st := folder.stat()).st_uid != self.uid}
        self.give(*owners)
        try:
            yield
        finally:
            for folder, st in owners.items():
                with contextlib.suppress(OSError):
                    os.chown(folder, st.st_uid, st.st_gid, follow_symlinks=False)
                disarm(folder)

    def reading(self, reads: list[Path]) -> dict:
        """For run.json: who ran it, that it could read nothing past permissions, and the folders closed to it
        through which it was shown what it needed (lab/confine.py)."""
        from lab import confine
        said = {"user": self.name, "uid": self.uid, "read_all": False}
        shown = confine.shown_through(self, list(reads))
        if shown:
            said["shown_through"] = shown
        return said


def disarm(folder: Path) -> list[Path]:
    """What the lab's user left in folder that root could be fooled by removed, and named: a symbolic link (root
    reading, or cutting, a JTL there would reach the file it points to), a FIFO, socket or device; only folders and
    regular files stay. Walked without following links."""
    removed = []
    for where, dirs, files in os.walk(folder, followlinks=False):
        for name in dirs + files:
            path = Path(where) / name
            try:
                mode = path.lstat().st_mode
            except OSError:
                continue
            if not (stat.S_ISDIR(mode) or stat.S_ISREG(mode)):
                with contextlib.suppress(OSError):
                    path.unlink()
                    removed.append(path)
    return removed


def take_back(base: Path, relative: Path, dest: Path) -> bool:
    """A file the lab's user made below base (a folder the lab handed it) copied to dest, each part of relative
    opened as itself (O_NOFOLLOW): a link in place of the file or of a folder on its way (to a file of the host's,
    which root may read) is refused with UserError. False when the file is not there."""
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        parts = Path(relative).parts
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            try:
                opened = os.open(part, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | (0 if last else os.O_DIRECTORY),
                                 dir_fd=fd)
            except FileNotFoundError:
                return False
            except OSError as e:
                raise UserError(f"{base.joinpath(*parts[:i + 1])}: {e.strerror}: made by the lab's user {NAME}, "
                                "a link there is refused, not followed") from None
            os.close(fd)
            fd = opened
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise UserError(f"{base / relative}: not a regular file (made by the lab's user {NAME})")
        dest.parent.mkdir(parents=True, exist_ok=True)
        source, fd = os.fdopen(fd, "rb"), -1        # the file object closes it from here on
        with source, open(dest, "wb") as target:
            shutil.copyfileobj(source, target)
        return True
    finally:
        if fd >= 0:
            os.close(fd)


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
