"""lab/sh/venv.sh's bytecode step: where PYTHONDONTWRITEBYTECODE is set the venv's packages are compiled once (else
every Python process of the lab compiles its imports again); elsewhere nothing is done, and a venv that is not the
caller's is left as it is."""
import os
import subprocess
import sys
import time
from pathlib import Path

from lab import paths

VENV_SH = paths.ROOT / "lab" / "sh" / "venv.sh"


def checkout_with_a_venv(tmp_path: Path) -> Path:
    """A checkout whose .venv holds one package, its python this test's."""
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").symlink_to(sys.executable)
    package = tmp_path / ".venv" / "lib" / "site-packages" / "some_package"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("VALUE = 1\n")
    return tmp_path


def bytecode_step(checkout: Path, *mode: str, **env) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"} | env
    return subprocess.run(["bash", "-c", f'. "{VENV_SH}"; lab_venv_bytecode "$@"', "-", str(checkout), *mode],
                          env=environ, capture_output=True, text=True, timeout=120)


def compiled(checkout: Path) -> list[str]:
    return sorted(p.name for p in (checkout / ".venv" / "lib").rglob("*.pyc"))


def test_the_venv_is_compiled_once_where_python_would_not_cache_it(tmp_path):
    checkout = checkout_with_a_venv(tmp_path)
    done = bytecode_step(checkout, PYTHONDONTWRITEBYTECODE="1")
    assert done.returncode == 0 and "compiling .venv's packages once" in done.stdout, done.stdout + done.stderr
    assert compiled(checkout) == [f"__init__.{sys.implementation.cache_tag}.pyc"]
    again = bytecode_step(checkout, PYTHONDONTWRITEBYTECODE="1")
    assert again.returncode == 0 and again.stdout == "", "compiled once: the mark says so"


def test_nothing_is_compiled_where_python_caches_it_itself(tmp_path):
    checkout = checkout_with_a_venv(tmp_path)
    done = bytecode_step(checkout)
    assert done.returncode == 0 and done.stdout == "" and compiled(checkout) == []


def test_start_sh_compiles_beside_what_follows_and_says_nothing(tmp_path):
    checkout = checkout_with_a_venv(tmp_path)
    done = bytecode_step(checkout, "background", PYTHONDONTWRITEBYTECODE="1")
    assert done.returncode == 0 and done.stdout == "" and done.stderr == ""
    deadline = time.monotonic() + 60
    while not (checkout / ".venv" / ".bytecode").exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert compiled(checkout) == [f"__init__.{sys.implementation.cache_tag}.pyc"]
