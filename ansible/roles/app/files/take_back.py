#!/usr/bin/env python3
"""take_back.py BASE RELATIVE DEST: a file the lab's user made on the controller (jvm_cds's archive, tasks/cds.yml)
copied to DEST, where root keeps it, reading it without following links: BASE is the folder the lab handed the user,
and each part of RELATIVE below it is opened as itself (O_NOFOLLOW), so a link the user put in place of a folder or
of the archive (to a host file root may read) is refused, not followed and copied to the machines."""
import os
import stat
import sys
import tempfile


def fail(message: str) -> None:
    sys.exit(f"take_back.py: {message}")


def main(base: str, relative: str, dest: str) -> None:
    parts = [p for p in relative.split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        fail(f"{relative!r} is not a path below {base}")
    fd = os.open(base, os.O_RDONLY | os.O_DIRECTORY)
    try:
        for i, part in enumerate(parts):
            last = i == len(parts) - 1
            flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | (0 if last else os.O_DIRECTORY)
            try:
                opened = os.open(part, flags, dir_fd=fd)
            except OSError as e:
                fail(f"{os.path.join(base, *parts[:i + 1])}: {e.strerror} (a link is refused: the lab's user made it)")
            os.close(fd)
            fd = opened
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            fail(f"{os.path.join(base, relative)} is not a regular file")
        os.makedirs(os.path.dirname(dest), mode=0o755, exist_ok=True)
        with os.fdopen(fd, "rb", closefd=True) as source:
            fd = -1
            handle, temporary = tempfile.mkstemp(dir=os.path.dirname(dest), prefix=".take-")
            with os.fdopen(handle, "wb") as target:
                while chunk := source.read(1 << 20):
                    target.write(chunk)
            os.chmod(temporary, 0o644)
            os.replace(temporary, dest)
    finally:
        if fd >= 0:
            os.close(fd)


if __name__ == "__main__":
    if len(sys.argv) != 4:
        fail("usage: take_back.py BASE RELATIVE DEST")
    main(*sys.argv[1:])
