"""Commands that only read run folders need no root: a real unprivileged user (nobody, through setpriv) runs
./start.sh report, compare and status from a checkout whose .venv is root's, and is told plainly what needs root
(the commands that change the lab; a .venv that must be rebuilt)."""
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from lab import paths

FIXTURE = paths.ROOT / "report" / "tests" / "fixtures" / "20261122T215957Z-fixture"
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
# a Python outside root's home (the checkout's .venv may point into /root, which nobody can enter)
SYSTEM_PYTHON = Path("/usr/bin/python3")

pytestmark = pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv"),
                                reason="becoming another user needs root and setpriv")


@pytest.fixture
def shared():
    """A world-writable folder in /tmp (pytest's own tmp_path is root's only)."""
    folder = Path(tempfile.mkdtemp(prefix="lab-nonroot-", dir="/tmp"))
    folder.chmod(0o777)
    yield folder
    shutil.rmtree(folder)


def checkout(where: Path, current: bool = True) -> Path:
    """A checkout owned by root as `sudo` would leave it: start.sh, lab/ and runfolder/ (this one's), and a root-owned
    .venv — this checkout's packages on a Python nobody may run — whose stamp says it is current (or not)."""
    version = subprocess.run([str(SYSTEM_PYTHON), "-c", "import sys; print('%d.%d.%d' % sys.version_info[:3])"],
                             capture_output=True, text=True).stdout.strip()
    if not version.startswith(f"{sys.version_info.major}.{sys.version_info.minor}."):
        pytest.skip(f"{SYSTEM_PYTHON} is {version}, not this venv's Python {sys.version_info[:2]}")
    co = where / "checkout"
    (co / "mock-service").mkdir(parents=True)
    shutil.copy2(paths.ROOT / "start.sh", co)
    (co / "lab").symlink_to(paths.ROOT / "lab")
    (co / "runfolder").symlink_to(paths.ROOT / "runfolder")      # the run folder's contract the lab imports
    for name in ("requirements-dev.txt", "mock-service/pyproject.toml"):
        shutil.copy2(paths.ROOT / name, co / name)
    venv = co / ".venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin" / "python").symlink_to(SYSTEM_PYTHON)
    (venv / "lib").symlink_to(paths.ROOT / ".venv" / "lib")
    (venv / "pyvenv.cfg").write_text(f"home = {SYSTEM_PYTHON.parent}\ninclude-system-site-packages = false\n"
                                     f"version = {version}\n")
    want = subprocess.run(["bash", "-c", '. "$1/lab/sh/venv.sh" && lab_venv_stamp "$1"', "-", str(co)],
                          capture_output=True, text=True, check=True).stdout.strip()
    (venv / ".requirements.sha").write_text((want if current else "an older one") + "\n")
    co.chmod(0o755)
    return co


def as_nobody(co: Path, *args: str, home: Path) -> subprocess.CompletedProcess:
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "LANG": "C.UTF-8"}
    return subprocess.run([*NOBODY, str(co / "start.sh"), *map(str, args)], cwd=home, env=env, capture_output=True,
                          text=True, timeout=900)


def run_copy(shared: Path, name: str) -> Path:
    copy = shutil.copytree(FIXTURE, shared / name)
    for folder, _dirs, files in os.walk(copy):
        for entry in (folder, *(os.path.join(folder, f) for f in files)):
            os.chmod(entry, os.stat(entry).st_mode | stat.S_IWOTH | stat.S_IROTH | (0o001 if entry == folder else 0))
    return copy


def test_report_and_compare_run_without_root(shared):
    co = checkout(shared)
    one, two = run_copy(shared, "one"), run_copy(shared, "two")
    done = as_nobody(co, "report", one, home=shared)
    assert done.returncode == 0, done.stderr
    assert (one / "report.html").stat().st_uid == 65534
    done = as_nobody(co, "compare", one, two, "--out", shared / "both", home=shared)
    assert done.returncode == 0, done.stderr
    assert (shared / "both" / "compare.html").exists()


def test_compare_into_a_results_folder_of_roots_says_how(shared):
    results = paths.ROOT / "results"
    if results.exists() and results.stat().st_mode & stat.S_IWOTH:
        pytest.skip(f"{results} is writable by everyone here")
    co = checkout(shared)
    done = as_nobody(co, "compare", run_copy(shared, "one"), run_copy(shared, "two"), home=shared)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "Permission denied" in done.stderr and "--out FOLDER" in done.stderr


def test_status_without_root_says_what_it_cannot_see(shared):
    done = as_nobody(checkout(shared), "status", home=shared)
    assert done.returncode == 0, done.stderr
    assert "lab namespace camel-lab" in done.stdout and "not shown without root" in done.stderr


def test_commands_that_change_the_lab_still_need_root(shared):
    co = checkout(shared)
    for args in (["up"], ["down"], ["--duration", "1m"]):
        done = as_nobody(co, *args, home=shared)
        assert done.returncode == 1 and "needs root" in done.stderr and "Traceback" not in done.stderr, args
    assert as_nobody(co, "--help", home=shared).returncode == 0


def test_a_venv_that_must_be_rebuilt_by_root_is_said_so(shared):
    co = checkout(shared, current=False)
    before = sorted((p.name, p.stat().st_mtime_ns) for p in (co / ".venv").iterdir())
    done = as_nobody(co, "report", FIXTURE, home=shared)
    assert done.returncode == 1, done.stderr
    assert "must be built or rebuilt" in done.stderr and "sudo ./start.sh --help" in done.stderr
    assert sorted((p.name, p.stat().st_mtime_ns) for p in (co / ".venv").iterdir()) == before
