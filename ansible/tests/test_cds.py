"""Knob jvm_cds on this host's JDK (the guests' Debian 12 OpenJDK 17): the app role's jar unpacker
(roles/app/files/unpack_jar.py) and training start (cds_train.sh), then a start from the archive.

A small stand-in for the app (a health endpoint, classes in BOOT-INF/classes and in a nested jar, as Spring
Boot packs them) keeps this fast; the real app's start from its archive is measured on the machines."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import ANSIBLE_DIR

FILES = ANSIBLE_DIR / "roles" / "app" / "files"
UNPACK = FILES / "unpack_jar.py"
TRAIN = FILES / "cds_train.sh"

MAIN = """package lab.stand;
import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;
public class Main {
    public static void main(String[] args) throws Exception {
        // Spring's component scan lists a package through its jar's directory entry: without it the app starts
        // healthy and answers every route with 404 (the first unpacker's, seen on the machines)
        if (Main.class.getClassLoader().getResource("lab/stand/") == null) {
            System.err.println("no directory entry for lab/stand/");
            System.exit(3);
        }
        HttpServer server = HttpServer.create(new InetSocketAddress("127.0.0.1", Integer.parseInt(args[0])), 0);
        server.createContext("/actuator/health", exchange -> {
            byte[] body = lab.dep.Health.up().getBytes();
            exchange.sendResponseHeaders(200, body.length);
            exchange.getResponseBody().write(body);
            exchange.close();
        });
        // a class generated at run time, as Spring's proxies are: listed, never on the class path
        ((Runnable) java.lang.reflect.Proxy.newProxyInstance(Main.class.getClassLoader(),
                new Class<?>[] {Runnable.class}, (proxy, method, arguments) -> null)).run();
        server.start();     // runs until SIGTERM
    }
}
"""
DEP = """package lab.dep;
public class Health { public static String up() { return "{\\"status\\":\\"UP\\"}"; } }
"""


def fat_jar(path: Path, classes: dict[str, bytes], libs: dict[str, bytes], start_class: str | None = "lab.stand.Main"):
    """A jar laid out as Spring Boot's repackaging does: BOOT-INF/classes/, BOOT-INF/lib/*.jar, classpath.idx."""
    manifest = "Manifest-Version: 1.0\nMain-Class: org.springframework.boot.loader.JarLauncher\n"
    if start_class:
        manifest += f"Start-Class: {start_class}\n"
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr("META-INF/MANIFEST.MF", manifest)
        folders = {name[:i + 1] for name in classes for i, c in enumerate(name) if c == "/"}
        for name in ["", *sorted(folders)]:           # directory entries, as Spring Boot's repackaging writes
            jar.writestr(f"BOOT-INF/classes/{name}", b"")
        for name, data in classes.items():
            jar.writestr(f"BOOT-INF/classes/{name}", data)
        for name, data in libs.items():
            jar.writestr(f"BOOT-INF/lib/{name}", data)
        jar.writestr("BOOT-INF/classpath.idx", "".join(f'- "BOOT-INF/lib/{n}"\n' for n in reversed(list(libs))))


def unpack(jar: Path, dest: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(UNPACK), str(jar), str(dest)], capture_output=True, text=True)


def test_unpack_keeps_the_class_path_order_and_the_main_class(tmp_path):
    jar = tmp_path / "app.jar"
    fat_jar(jar, {"lab/App.class": b"app", "application.yml": b"a: 1"}, {"a.jar": b"A", "b.jar": b"B"})
    dest = tmp_path / "unpacked"
    assert unpack(jar, dest).stdout == "unpacked\n"
    assert sorted(os.listdir(dest / "lib")) == ["a.jar", "b.jar"] and (dest / "lib" / "b.jar").read_bytes() == b"B"
    with zipfile.ZipFile(dest / "app-classes.jar") as classes:
        assert sorted(classes.namelist()) == ["application.yml", "lab/", "lab/App.class"]
    assert (dest / "launch.args").read_text().splitlines() == [
        f"-cp {dest}/app-classes.jar:{dest}/lib/b.jar:{dest}/lib/a.jar", "lab.stand.Main"]


def test_the_same_jar_changes_nothing_and_another_replaces_it_whole(tmp_path):
    jar, dest = tmp_path / "app.jar", tmp_path / "unpacked"
    fat_jar(jar, {"lab/App.class": b"v1"}, {"old.jar": b"O"})
    unpack(jar, dest)
    assert unpack(jar, dest).stdout == "unchanged\n"
    fat_jar(jar, {"lab/App.class": b"v2"}, {"new.jar": b"N"})
    assert unpack(jar, dest).stdout == "unpacked\n"
    assert os.listdir(dest / "lib") == ["new.jar"], "a library of the old jar was left on the class path"
    assert not (tmp_path / "unpacked.new").exists()


def test_a_new_unpacker_unpacks_the_same_jar_again(tmp_path):
    """The unpacker's own code is part of what an unpacking is of: a mended one must not keep the old result."""
    jar, dest = tmp_path / "app.jar", tmp_path / "unpacked"
    fat_jar(jar, {"lab/App.class": b"v1"}, {"a.jar": b"A"})
    unpack(jar, dest)
    mended = tmp_path / "unpack_jar.py"
    mended.write_text(UNPACK.read_text() + "# mended\n")
    again = subprocess.run([sys.executable, str(mended), str(jar), str(dest)], capture_output=True, text=True)
    assert again.stdout == "unpacked\n", again.stdout + again.stderr


def test_a_jar_that_is_not_a_spring_boot_jar_is_refused_and_changes_nothing(tmp_path):
    jar, dest = tmp_path / "app.jar", tmp_path / "unpacked"
    fat_jar(jar, {"lab/App.class": b"v1"}, {"a.jar": b"A"})
    unpack(jar, dest)
    before = (dest / "launch.args").read_text()
    fat_jar(jar, {"lab/App.class": b"v2"}, {"a.jar": b"A"}, start_class=None)
    refused = unpack(jar, dest)
    assert refused.returncode == 1 and "names no Start-Class" in refused.stderr
    assert (dest / "launch.args").read_text() == before


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def stand_in_jar(tmp_path_factory) -> Path:
    if not shutil.which("javac") or not shutil.which("jar"):
        pytest.fail("javac and jar are needed (the app stage's JDK: ./test.sh installs it)")
    work = tmp_path_factory.mktemp("standin")
    (work / "src" / "lab" / "stand").mkdir(parents=True)
    (work / "src" / "lab" / "dep").mkdir(parents=True)
    (work / "src" / "lab" / "stand" / "Main.java").write_text(MAIN)
    (work / "src" / "lab" / "dep" / "Health.java").write_text(DEP)
    subprocess.run(["javac", "-d", str(work / "out"), *map(str, (work / "src").rglob("*.java"))], check=True)
    subprocess.run(["jar", "cf", str(work / "dep.jar"), "-C", str(work / "out"), "lab/dep"], check=True)
    main = (work / "out" / "lab" / "stand" / "Main.class").read_bytes()
    fat_jar(work / "app.jar", {"lab/stand/Main.class": main}, {"dep.jar": (work / "dep.jar").read_bytes()})
    return work / "app.jar"


def classes_from_archive(args: list[str], port: int, log: Path) -> set[str]:
    """Starts the stand-in with args until it is healthy, stops it; the classes it loaded from the static archive
    (-Xshare:on: a JVM that cannot map it fails instead of starting without it)."""
    app = subprocess.Popen(["java", "-Xshare:on", f"-Xlog:class+load=info:file={log}", *args, str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        for _ in range(300):
            if subprocess.run(["curl", "-fsS", "-m", "2", f"http://127.0.0.1:{port}/actuator/health"],
                              capture_output=True).returncode == 0:
                break
            subprocess.run(["sleep", "0.1"])
    finally:
        app.terminate()
        app.wait(30)
    return {line.split()[1] for line in log.read_text().splitlines() if line.endswith("source: shared objects file")}


def test_a_training_start_makes_an_archive_any_gc_and_jit_then_use(stand_in_jar, tmp_path):
    dest, archive, port = tmp_path / "unpacked", tmp_path / "app.jsa", free_port()
    assert unpack(stand_in_jar, dest).returncode == 0
    trained = subprocess.run([str(TRAIN), str(archive), f"http://127.0.0.1:{port}/actuator/health", "60",
                              f"{dest}/launch.args", f"@{dest}/launch.args", str(port)],
                             capture_output=True, text=True, timeout=120)
    assert trained.returncode == 0, trained.stdout + trained.stderr
    assert archive.stat().st_size > 0 and not Path(f"{archive}.new").exists()
    listed = Path(f"{archive}.classlist").read_text().split()
    assert "lab/dep/Health" in listed and any("$Proxy" in c for c in listed)     # what the app loaded and made
    # the knobs may change the collector, the heap and the JIT after the archive was made: it still serves
    shared = classes_from_archive([f"-XX:SharedArchiveFile={archive}", "-XX:+UseSerialGC", "-Xmx64m",
                                   "-XX:TieredStopAtLevel=1", f"@{dest}/launch.args"], free_port(), tmp_path / "load.log")
    assert {"lab.stand.Main", "lab.dep.Health"} <= shared


def test_a_training_start_that_dies_leaves_no_archive_and_says_so(stand_in_jar, tmp_path):
    dest, archive = tmp_path / "unpacked", tmp_path / "app.jsa"
    unpack(stand_in_jar, dest)
    trained = subprocess.run([str(TRAIN), str(archive), "http://127.0.0.1:9/actuator/health", "60",
                              f"{dest}/launch.args", f"@{dest}/launch.args", "not-a-port"],
                             capture_output=True, text=True, timeout=120)
    assert trained.returncode == 1 and "died before it was healthy" in trained.stdout
    assert "NumberFormatException" in trained.stdout, "the JVM's own last words are shown"
    assert not archive.exists()


def test_a_training_start_refuses_while_the_app_still_answers(stand_in_jar, tmp_path):
    dest, archive, port = tmp_path / "unpacked", tmp_path / "app.jsa", free_port()
    unpack(stand_in_jar, dest)
    running = subprocess.Popen(["java", f"@{dest}/launch.args", str(port)], stdout=subprocess.DEVNULL)
    try:
        url = f"http://127.0.0.1:{port}/actuator/health"
        for _ in range(300):
            if subprocess.run(["curl", "-fsS", "-m", "2", url], capture_output=True).returncode == 0:
                break
            subprocess.run(["sleep", "0.1"])
        trained = subprocess.run([str(TRAIN), str(archive), url, "60", f"{dest}/launch.args", f"@{dest}/launch.args",
                                  str(free_port())],
                                 capture_output=True, text=True, timeout=120)
    finally:
        running.terminate()
        running.wait(30)
    assert trained.returncode == 1 and "something already answers" in trained.stdout
    assert not archive.exists()


def test_a_dump_that_fails_leaves_no_archive_and_says_so(stand_in_jar, tmp_path):
    """The app was trained, but its class path for the dump is wrong: the JVM's refusal, and no archive."""
    dest, archive, port = tmp_path / "unpacked", tmp_path / "app.jsa", free_port()
    unpack(stand_in_jar, dest)
    (tmp_path / "wrong.args").write_text(f"-cp {tmp_path}/nothing-here.jar\n")
    trained = subprocess.run([str(TRAIN), str(archive), f"http://127.0.0.1:{port}/actuator/health", "60",
                              str(tmp_path / "wrong.args"), f"@{dest}/launch.args", str(port)],
                             capture_output=True, text=True, timeout=120)
    assert trained.returncode == 1 and "the dump of the listed classes failed" in trained.stdout
    assert not archive.exists() and not Path(f"{archive}.new").exists()
