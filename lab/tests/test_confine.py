"""What runs a customer's text on the host runs confined (lab/confine.py, lab/sh/confine.sh): as the lab's user with
no capability in any set, its environment alone, in the sandbox network namespace (loopback only), in a cgroup of its
own that ends every process it made, and through a closed folder it sees only what it was given."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from lab import confine, shell, unprivileged

pytestmark = pytest.mark.skipif(os.geteuid() != 0,
                                reason="confinement (namespaces, cgroups, the lab's user) needs root")


@pytest.fixture
def account():
    return unprivileged.ensure()


@pytest.fixture
def closed():
    """A folder closed to the lab's user (root's, 0700; not in /tmp, which a confined command gets empty) holding a
    file it must read and one it must not see."""
    folder = Path(tempfile.mkdtemp(prefix="camel-lab-test-", dir="/run"))
    (folder / "given.txt").write_text("given\n")
    (folder / "secret.txt").write_text("secret\n")
    yield folder
    shutil.rmtree(folder)


def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, **kw)


def test_no_capability_in_any_set_not_even_the_bounding_set(account):
    said = run(account.command(["grep", "^Cap", "/proc/self/status"]))
    assert said.returncode == 0, said.stderr
    caps = dict(line.split(":") for line in said.stdout.splitlines())
    assert {k: int(v, 16) for k, v in caps.items()} == {"CapInh": 0, "CapPrm": 0, "CapEff": 0, "CapBnd": 0,
                                                       "CapAmb": 0}


def test_through_a_closed_folder_only_the_paths_given_are_there(account, closed):
    assert account.blocked([closed / "given.txt"]) is not None
    said = run(account.command(["sh", "-c", f"cat {closed}/given.txt; ls {closed}; cat {closed}/secret.txt"],
                               [closed / "given.txt"]))
    assert said.stdout.split("\n")[:2] == ["given", "given.txt"], said.stderr
    assert "secret" not in said.stdout and "No such file" in said.stderr
    assert run(["cat", str(closed / "secret.txt")]).stdout == "secret\n", "only the confined process saw less"
    record = account.reading([closed / "given.txt"])
    assert record["read_all"] is False and record["shown_through"] == [str(closed)]


def test_what_was_not_given_is_not_reachable_at_all(account, closed):
    said = run(account.command(["cat", str(closed / "secret.txt")]))
    assert said.returncode != 0 and "secret" not in said.stdout


def test_a_shown_folder_is_written_only_as_its_permissions_say(account, closed):
    lent = closed / "lent"
    lent.mkdir()
    account.give(lent)
    said = run(account.command(["sh", "-c", f"echo made > {lent}/out; echo no >> {closed}/given.txt"],
                               [lent, closed / "given.txt"]))
    assert (lent / "out").read_text() == "made\n"
    assert (closed / "given.txt").read_text() == "given\n" and said.returncode != 0


def test_only_the_environment_given(account, monkeypatch):
    monkeypatch.setenv("PGPASSWORD", "hunter2")
    monkeypatch.setenv("LAB_STUDY_SECRET", "postgresql://lab:hunter2@127.0.0.1/study")
    said = run(account.command(["env"]), env=os.environ)
    assert said.returncode == 0 and "hunter2" not in said.stdout
    said = run(account.command(["env"], env={"PATH": "/usr/bin:/bin", "ONLY": "this"}))
    assert sorted(said.stdout.split()) == ["ONLY=this", "PATH=/usr/bin:/bin"]


def test_the_sandbox_has_loopback_alone(account):
    """A listener on the host's loopback is not the sandbox's: a confined process cannot reach it, and the namespace
    has no interface but lo and no route."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        probe = f"import socket; socket.create_connection(('127.0.0.1', {port}), 2); print('reached')"
        said = run(account.command(["python3", "-c", probe], netns=confine.sandbox()))
        assert "reached" not in said.stdout and "Connection refused" in said.stderr
        assert "reached" in run(account.command(["python3", "-c", probe])).stdout, "the same probe outside reaches it"
    links = run(["ip", "-n", confine.SANDBOX, "-o", "link"]).stdout
    assert [line.split(":")[1].strip() for line in links.splitlines()] == ["lo"]
    assert run(["ip", "-n", confine.SANDBOX, "route"]).stdout.strip() == ""


def test_the_lab_probes_the_sandbox_from_a_thread_inside_it(account):
    ns = confine.sandbox()
    with confine.netns_thread(ns) as inside:
        port = inside(_free_port)
        server = subprocess.Popen(account.command(["python3", "-m", "http.server", "--bind", "127.0.0.1", str(port)],
                                                  netns=ns), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            until = time.monotonic() + 20
            while (answer := inside(_get, port)) is None and time.monotonic() < until:
                time.sleep(0.2)
            assert answer == 200
            assert _get(port) is None, "the host's own loopback is another one"
        finally:
            server.terminate()
            server.wait(10)


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _get(port: int) -> int | None:
    import urllib.request
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as answer:
            return answer.status
    except OSError:
        return None


def test_a_child_that_forks_twice_is_ended_with_its_cgroup(account, tmp_path):
    cgroup = confine.Cgroup.make("test")
    pid_file = tmp_path / "pid"
    pid_file.touch()
    account.give(pid_file)
    said = run(account.command(["sh", "-c", f"(setsid sleep 600 > /dev/null 2>&1 & echo $! > {pid_file})"],
                               [pid_file], cgroup=cgroup))
    assert said.returncode == 0, said.stderr
    orphan = int(pid_file.read_text())
    assert Path(f"/proc/{orphan}").exists() and orphan in cgroup.pids()
    assert orphan in cgroup.end()
    time.sleep(0.2)
    assert not Path(f"/proc/{orphan}").exists() or "zombie" in Path(f"/proc/{orphan}/status").read_text()
    assert not any(folder.exists() for folder in cgroup.folders)


def test_a_confined_command_is_quoted_by_its_own_program(account):
    argv = account.command(["java", "-version", "x", "y", "z"], env={"PATH": "/usr/bin"})
    assert shell.shown(argv) == "java -version x y …"


def test_tmp_and_its_kind_are_the_commands_own(account, tmp_path):
    """What a confined command writes in /tmp, /var/tmp or /dev/shm is gone with it and never reaches the host's; a
    path of /tmp it was given is there."""
    mark = f"camel-lab-confine-{os.getpid()}"
    given = tmp_path / "given"
    given.mkdir()
    account.give(given)
    said = run(account.command(["sh", "-c", f"ls /tmp; touch /tmp/{mark} /var/tmp/{mark} /dev/shm/{mark} "
                                            f"{given}/made && echo wrote"], [given]))
    first = given.resolve().relative_to("/tmp").parts[0]          # what leads to the path given, alone
    assert said.returncode == 0 and said.stdout.split() == [first, "wrote"], said.stdout + said.stderr
    assert not any(Path(folder, mark).exists() for folder in ("/tmp", "/var/tmp", "/dev/shm"))
    assert (given / "made").exists()
