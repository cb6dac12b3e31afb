"""jvm_cds's training start on the controller runs the customer's main() confined (lab_controller_as,
lab/provision/controller_java.py, lab/confine.py): a hostile main() that reads a root-only file, writes outside its
folder and connects to the host finds none of it possible, and what it leaves in its folder is taken back by root
without following links (roles/app/files/take_back.py)."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import ANSIBLE_DIR
from test_cds import stand_in

from lab import unprivileged
from lab.provision import controller_java

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="only a lab run as root confines the training start")

FILES = ANSIBLE_DIR / "roles" / "app" / "files"
MAKE, TAKE_BACK = FILES / "cds_make.sh", FILES / "take_back.py"

HOSTILE = """package lab.stand;
import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.concurrent.Callable;
public class Main {
    static String write(String path) {
        return attempt(() -> Files.writeString(Paths.get(path), "x"));
    }
    static String attempt(Callable<Object> what) {
        try { what.call(); return "DONE"; } catch (Exception e) { return "REFUSED " + e.getClass().getSimpleName(); }
    }
    public static void main(String[] args) throws Exception {
        System.out.println("hostile: user " + System.getProperty("user.name"));
        System.out.println("hostile: read " + attempt(() -> Files.readAllBytes(Paths.get("SECRET"))));
        System.out.println("hostile: write-root " + write("ROOT_FOLDER/planted"));
        System.out.println("hostile: write-tmp " + write("/tmp/MARK"));
        System.out.println("hostile: write-var-tmp " + write("/var/tmp/MARK"));
        System.out.println("hostile: connect " + attempt(() -> new Socket("127.0.0.1", PORT)));
        System.out.flush();
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", Integer.parseInt(args[0])), 0);
        server.createContext("/actuator/health", exchange -> {
            byte[] body = lab.dep.Health.up().getBytes();
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        server.start();
    }
}
"""


@pytest.fixture
def root_folder():
    """A folder of root's, 0700, with a secret in it: what the host holds that the customer's code must not read."""
    folder = Path(tempfile.mkdtemp(prefix="camel-lab-test-", dir="/run"))
    (folder / "secret").write_text("root's secret\n")
    yield folder
    shutil.rmtree(folder)


def hostile_jar(work: Path, root_folder: Path, mark: str, port: int) -> Path:
    source = HOSTILE.replace("SECRET", str(root_folder / "secret")).replace("ROOT_FOLDER", str(root_folder))
    return stand_in(work, source.replace("MARK", mark).replace("PORT", str(port)))


def test_a_hostile_training_start_reaches_nothing_of_the_hosts(tmp_path, root_folder, monkeypatch):
    kit = tmp_path / "kit" / "lab-kit.jar"
    kit.parent.mkdir()
    kit.write_bytes(b"PK\x05\x06" + b"\0" * 18)          # an empty jar
    monkeypatch.setattr(controller_java.app_jars, "KIT_JAR", kit)
    monkeypatch.setattr(controller_java, "CDS_JVMS", tmp_path / "cds" / "jvm")
    monkeypatch.setattr(controller_java, "CDS_MADE", tmp_path / "cds" / "made")
    mark = f"camel-lab-hostile-{os.getpid()}"
    with socket.socket() as listener:                   # on the host's loopback: the training must not reach it
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        jar = hostile_jar(tmp_path / "build", root_folder, mark, listener.getsockname()[1])
        service_vars = {"lab_service": {"builds": {"camel3": {"jar": str(jar)}}}}
        confined = controller_java.as_user(controller_java.javas(), service_vars)
        assert confined["user"] == unprivileged.NAME
        made = subprocess.run([*confined["argv"], str(MAKE), str(jar), str(kit), str(tmp_path / "cds" / "made" / "x"),
                               "-", "/actuator/health", "{port}"], capture_output=True, text=True,
                              timeout=300)
        listener.settimeout(0.5)
        with pytest.raises(TimeoutError):
            listener.accept()
    assert made.returncode == 0, made.stdout + made.stderr
    said = (tmp_path / "cds" / "made" / "x" / "app.jsa.log").read_text()
    lines = dict(line.split(" ", 2)[1:] for line in said.splitlines() if line.startswith("hostile: "))
    assert lines["user"] == unprivileged.NAME, said
    assert lines["read"].startswith("REFUSED") and lines["write-root"].startswith("REFUSED"), said
    assert lines["connect"].startswith("REFUSED"), said
    assert not Path("/tmp", mark).exists() and not Path("/var/tmp", mark).exists(), "its /tmp was the host's"
    assert not (root_folder / "planted").exists()
    assert (tmp_path / "cds" / "made" / "x" / "app.jsa").stat().st_size > 0, "the training still made its archive"
    taken = tmp_path / "taken" / "x" / "app.jsa"
    done = subprocess.run([sys.executable, str(TAKE_BACK), str(tmp_path / "cds" / "made"), "x/app.jsa", str(taken)],
                          capture_output=True, text=True)
    assert done.returncode == 0 and taken.read_bytes() == (tmp_path / "cds" / "made" / "x" / "app.jsa").read_bytes()


@pytest.mark.parametrize("plant", ["archive", "folder"])
def test_an_archive_taken_back_is_never_a_link(tmp_path, root_folder, plant):
    """The user could leave a link where the archive or its folder should be: root would copy the host's file to the
    machines. take_back.py refuses it and writes nothing."""
    made = tmp_path / "made"
    (made / "x").mkdir(parents=True)
    if plant == "archive":
        (made / "x" / "app.jsa").symlink_to(root_folder / "secret")
    else:
        (made / "y").symlink_to(root_folder)
        (root_folder / "app.jsa").write_text("root's\n")
    relative = "x/app.jsa" if plant == "archive" else "y/app.jsa"
    done = subprocess.run([sys.executable, str(TAKE_BACK), str(made), relative, str(tmp_path / "taken" / "app.jsa")],
                          capture_output=True, text=True)
    assert done.returncode != 0 and "a link is refused" in done.stderr, done.stderr
    assert not (tmp_path / "taken" / "app.jsa").exists()
