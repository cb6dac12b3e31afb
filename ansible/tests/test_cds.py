"""Knob jvm_cds on this host's JDK (the guests' Debian 12 OpenJDK 17): the app role's jar unpacker
(roles/app/files/unpack_jar.py), training start (cds_train.sh) and the controller's making of an archive
(cds_make.sh) for an unpacking elsewhere, then a start from the archive.

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
MAKE = FILES / "cds_make.sh"
KEY = FILES / "cds_key.sh"
JVM = FILES / "cds_jvm.sh"

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


def fat_jar(path: Path, classes: dict[str, bytes], libs: dict[str, bytes], start_class: str | None = "lab.stand.Main",
            main_class: str = "org.springframework.boot.loader.JarLauncher"):
    """A jar laid out as Spring Boot's repackaging does: BOOT-INF/classes/, BOOT-INF/lib/*.jar, classpath.idx."""
    manifest = f"Manifest-Version: 1.0\nMain-Class: {main_class}\n"
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


def unpack(jar: Path, dest: Path, *kit: Path, fat: bool = False, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(UNPACK), *(["--fat"] if fat else []), str(jar), str(dest),
                           *map(str, kit)], capture_output=True, text=True, env={**os.environ, **env})


@pytest.fixture
def kit(tmp_path) -> Path:
    """A stand-in for the tuning kit's jar (kit/core/target/lab-kit.jar)."""
    path = tmp_path / "kit" / "lab-kit.jar"
    path.parent.mkdir()
    with zipfile.ZipFile(path, "w") as jar:
        jar.writestr("lab/kit/Kit.class", b"kit")
    return path


def test_unpack_keeps_the_class_path_order_and_the_main_class(tmp_path):
    jar = tmp_path / "app.jar"
    fat_jar(jar, {"lab/App.class": b"app", "application.yml": b"a: 1"}, {"a.jar": b"A", "b.jar": b"B"})
    dest = tmp_path / "unpacked"
    assert unpack(jar, dest).stdout == "unpacked\n"
    assert sorted(os.listdir(dest / "lib")) == ["a.jar", "b.jar"] and (dest / "lib" / "b.jar").read_bytes() == b"B"
    with zipfile.ZipFile(dest / "app-classes.jar") as classes:
        assert sorted(classes.namelist()) == ["application.yml", "lab/", "lab/App.class"]
    assert (dest / "launch.args").read_text().splitlines() == [
        "-cp unpacked/app-classes.jar:unpacked/lib/b.jar:unpacked/lib/a.jar", "lab.stand.Main",
    ], "relative to its parent"


def test_the_kit_is_copied_beside_the_libraries_and_last_on_the_class_path(tmp_path, kit):
    jar, dest = tmp_path / "app.jar", tmp_path / "unpacked"
    fat_jar(jar, {"lab/App.class": b"app"}, {"a.jar": b"A"})
    assert unpack(jar, dest, kit).stdout == "unpacked\n"
    assert (dest / "launch.args").read_text().splitlines()[0] == \
        "-cp unpacked/app-classes.jar:unpacked/lib/a.jar:unpacked/lib/lab-kit.jar", "the service's classes win"
    assert (dest / "lib" / "lab-kit.jar").read_bytes() == kit.read_bytes()
    with zipfile.ZipFile(kit, "a") as newer:        # a new kit is a new unpacking
        newer.writestr("lab/kit/More.class", b"more")
    assert unpack(jar, dest, kit).stdout == "unpacked\n"


@pytest.mark.parametrize("main_class", ["org.springframework.boot.loader.JarLauncher",
                                        "org.springframework.boot.loader.launch.JarLauncher"])
def test_the_fat_jar_starts_by_its_own_loaders_properties_launcher_with_the_kit_on_loader_path(
        tmp_path, kit, main_class):
    """Knob app_unpacked false: the jar as it is; Boot's JarLauncher ignores loader.path, its PropertiesLauncher
    (in the same package: Boot 3.2 moved both, with no alias of the old names) appends it to the jar's class path."""
    jar, dest = tmp_path / "app.jar", tmp_path / "fat"
    fat_jar(jar, {"lab/App.class": b"app"}, {"a.jar": b"A"}, main_class=main_class)
    assert unpack(jar, dest, kit, fat=True).stdout == "written\n"
    launcher = main_class.replace("JarLauncher", "PropertiesLauncher")
    assert (dest / "launch.args").read_text().splitlines() == [
        f"-Dloader.path={kit}", "-Dloader.main=lab.stand.Main", f"-cp {jar}", launcher]
    assert not (dest / "lib").exists(), "nothing unpacked"
    assert unpack(jar, dest, kit, fat=True).stdout == "unchanged\n"
    assert unpack(jar, dest, kit).stdout == "unpacked\n", "the other mode into the same folder is not 'unchanged'"


def test_a_fat_jar_without_spring_boots_launcher_is_refused_and_changes_nothing(tmp_path, kit):
    jar, dest = tmp_path / "app.jar", tmp_path / "fat"
    fat_jar(jar, {"lab/App.class": b"app"}, {"a.jar": b"A"})
    unpack(jar, dest, kit, fat=True)
    before = (dest / "launch.args").read_text()
    fat_jar(jar, {"lab/App.class": b"v2"}, {"a.jar": b"A"}, main_class="com.shop.OwnMain")
    refused = unpack(jar, dest, kit, fat=True)
    assert refused.returncode == 1 and "Main-Class com.shop.OwnMain is not Spring Boot's launcher" in refused.stderr
    assert (dest / "launch.args").read_text() == before
    assert unpack(jar, dest, fat=True).returncode != 0, "--fat without the kit: the usage"


def class_path_files(dest: Path) -> dict[str, tuple[int, int, bytes]]:
    return {str(jar.relative_to(dest)): (jar.stat().st_size, jar.stat().st_mtime_ns, jar.read_bytes())
            for jar in dest.rglob("*.jar")}


def test_the_same_jar_unpacked_elsewhere_later_gives_the_same_files_sizes_and_times(tmp_path):
    """A CDS archive checks each class-path jar's size and time: the controller's unpacking and a machine's,
    made at other times in other folders and time zones, must not differ in either."""
    jar = tmp_path / "app.jar"
    fat_jar(jar, {"lab/App.class": b"app" * 1000}, {"a.jar": b"A" * 1000, "b.jar": b"B"})
    here, there = tmp_path / "controller" / "unpacked", tmp_path / "machine" / "unpacked"
    unpack(jar, here, TZ="UTC")
    os.utime(jar)                                   # the jar copied to the machine later
    unpack(jar, there, TZ="America/New_York")
    assert class_path_files(here) == class_path_files(there) and len(class_path_files(here)) == 3
    assert (here / "launch.args").read_text() == (there / "launch.args").read_text()


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


def stand_in(work: Path, main_source: str = MAIN) -> Path:
    """The stand-in's fat jar, built in work: lab.stand.Main of main_source, lab.dep.Health in a nested jar."""
    if not shutil.which("javac") or not shutil.which("jar"):
        pytest.fail("javac and jar are needed (the app stage's JDK: ./test.sh installs it)")
    (work / "src" / "lab" / "stand").mkdir(parents=True)
    (work / "src" / "lab" / "dep").mkdir(parents=True)
    (work / "src" / "lab" / "stand" / "Main.java").write_text(main_source)
    (work / "src" / "lab" / "dep" / "Health.java").write_text(DEP)
    subprocess.run(["javac", "-d", str(work / "out"), *map(str, (work / "src").rglob("*.java"))], check=True)
    subprocess.run(["jar", "cf", str(work / "dep.jar"), "-C", str(work / "out"), "lab/dep"], check=True)
    main = (work / "out" / "lab" / "stand" / "Main.class").read_bytes()
    fat_jar(work / "app.jar", {"lab/stand/Main.class": main}, {"dep.jar": (work / "dep.jar").read_bytes()})
    return work / "app.jar"


@pytest.fixture(scope="module")
def stand_in_jar(tmp_path_factory) -> Path:
    return stand_in(tmp_path_factory.mktemp("standin"))


def classes_from_archive(args: list[str], port: int, log: Path, cwd: Path) -> set[str]:
    """Starts the stand-in with args until it is healthy, stops it; the classes it loaded from the static archive
    (-Xshare:on: a JVM that cannot map it fails instead of starting without it)."""
    app = subprocess.Popen(["java", "-Xshare:on", f"-Xlog:class+load=info:file={log}", *args, str(port)],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
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
                             capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert trained.returncode == 0, trained.stdout + trained.stderr
    assert archive.stat().st_size > 0 and not Path(f"{archive}.new").exists()
    listed = Path(f"{archive}.classlist").read_text().split()
    assert "lab/dep/Health" in listed and any("$Proxy" in c for c in listed)     # what the app loaded and made
    # the knobs may change the collector, the heap and the JIT after the archive was made: it still serves
    shared = classes_from_archive([f"-XX:SharedArchiveFile={archive}", "-XX:+UseSerialGC", "-Xmx64m",
                                   "-XX:TieredStopAtLevel=1", f"@{dest}/launch.args"],
                                  free_port(), tmp_path / "load.log", tmp_path)
    assert {"lab.stand.Main", "lab.dep.Health"} <= shared


def test_a_training_start_that_dies_leaves_no_archive_and_says_so(stand_in_jar, tmp_path):
    dest, archive = tmp_path / "unpacked", tmp_path / "app.jsa"
    unpack(stand_in_jar, dest)
    trained = subprocess.run([str(TRAIN), str(archive), "http://127.0.0.1:9/actuator/health", "60",
                              f"{dest}/launch.args", f"@{dest}/launch.args", "not-a-port"],
                             capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert trained.returncode == 1 and "died before it was healthy" in trained.stdout
    assert "NumberFormatException" in trained.stdout, "the JVM's own last words are shown"
    assert not archive.exists()


def test_a_training_start_refuses_while_the_app_still_answers(stand_in_jar, tmp_path):
    dest, archive, port = tmp_path / "unpacked", tmp_path / "app.jsa", free_port()
    unpack(stand_in_jar, dest)
    running = subprocess.Popen(["java", f"@{dest}/launch.args", str(port)], stdout=subprocess.DEVNULL, cwd=tmp_path)
    try:
        url = f"http://127.0.0.1:{port}/actuator/health"
        for _ in range(300):
            if subprocess.run(["curl", "-fsS", "-m", "2", url], capture_output=True).returncode == 0:
                break
            subprocess.run(["sleep", "0.1"])
        trained = subprocess.run([str(TRAIN), str(archive), url, "60", f"{dest}/launch.args", f"@{dest}/launch.args",
                                  str(free_port())],
                                 capture_output=True, text=True, timeout=120, cwd=tmp_path)
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
                             capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert trained.returncode == 1 and "the dump of the listed classes failed" in trained.stdout
    assert not archive.exists() and not Path(f"{archive}.new").exists()


def key_of(unpacked: Path) -> str:
    return subprocess.run([str(KEY), str(unpacked)], capture_output=True, text=True, check=True).stdout


def test_an_archive_made_on_the_controller_serves_a_machines_own_unpacking(stand_in_jar, tmp_path, kit):
    """cds_make.sh unpacks (the kit last, as on the machines) and trains in its folder; the machine unpacks the same
    jar in another folder and starts from the archive alone: its key is the machine's, and its classes come from it."""
    controller, machine = tmp_path / "controller", tmp_path / "machine"
    made = subprocess.run([str(MAKE), str(stand_in_jar), str(kit), str(controller), "-", "/actuator/health", "{port}"],
                          capture_output=True, text=True, timeout=120)
    assert made.returncode == 0, made.stdout + made.stderr
    assert unpack(stand_in_jar, machine / "unpacked", kit).returncode == 0
    assert made.stdout == key_of(machine / "unpacked") == (controller / "app.jsa.key").read_text()
    shutil.copy(controller / "app.jsa", machine / "app.jsa")
    shared = classes_from_archive(["-XX:SharedArchiveFile=app.jsa", "@unpacked/launch.args"], free_port(),
                                  tmp_path / "load.log", machine)
    assert {"lab.stand.Main", "lab.dep.Health"} <= shared
    # the same jar again: the archive is kept, no training start
    made_at = (controller / "app.jsa").stat().st_mtime_ns
    again = subprocess.run([str(MAKE), str(stand_in_jar), str(kit), str(controller), "-", "/actuator/health",
                            "{port}"], capture_output=True, text=True, timeout=120)
    assert again.stdout == made.stdout and (controller / "app.jsa").stat().st_mtime_ns == made_at, again.stderr


def test_a_controller_archive_refuses_a_machine_jar_of_another_time(stand_in_jar, tmp_path, kit):
    """What the role's check before taking an archive relies on: -Xshare:on refuses a class path jar whose time
    differs (the JVM would otherwise start without the archive, quietly)."""
    controller, machine = tmp_path / "controller", tmp_path / "machine"
    subprocess.run([str(MAKE), str(stand_in_jar), str(kit), str(controller), "-", "/actuator/health", "{port}"],
                   capture_output=True, text=True, timeout=120, check=True)
    unpack(stand_in_jar, machine / "unpacked", kit)
    os.utime(machine / "unpacked" / "lib" / "dep.jar")
    class_path = (machine / "unpacked" / "launch.args").read_text().split()[1]
    check = subprocess.run(["java", "-Xshare:on", f"-XX:SharedArchiveFile={controller}/app.jsa", "-cp", class_path,
                            "-version"], capture_output=True, text=True, cwd=machine)
    assert check.returncode != 0 and "dep.jar" in check.stdout + check.stderr


def test_the_machines_jvm_build_is_fetched_from_the_mirror_and_runs_from_another_folder(tmp_path):
    """cds_jvm.sh with the package this host's java came from, in the version the mirror has now (the guests
    name theirs the same way, the version their box got): apt's package, unpacked into a folder of the lab's,
    runs as that build there, and a second call fetches nothing."""
    java = subprocess.run(["readlink", "-f", shutil.which("java")], capture_output=True, text=True).stdout.strip()
    package = subprocess.run(["dpkg", "-S", java], capture_output=True, text=True).stdout.split(":")[0]
    policy = subprocess.run(["apt-cache", "policy", package], capture_output=True, text=True).stdout
    version = next(line.split()[1] for line in policy.splitlines() if line.strip().startswith("Candidate:"))
    name = f"{package}:amd64={version}"
    fetched = subprocess.run([str(JVM), name, str(tmp_path / "jvm")], capture_output=True, text=True, timeout=600)
    assert fetched.returncode == 0, fetched.stderr
    home = Path(fetched.stdout.strip())
    assert home.is_relative_to(tmp_path / "jvm") and not list((tmp_path / "jvm").rglob("*.deb"))
    theirs = subprocess.run([str(home / "bin" / "java"), "-version"], capture_output=True, text=True)
    upstream = version.split("+")[0]         # 17.0.21.1+2-1~deb12u1: java says 17.0.21.1
    assert theirs.returncode == 0 and f'version "{upstream}"' in theirs.stderr, theirs.stderr
    again = subprocess.run([str(JVM), name, str(tmp_path / "jvm")], capture_output=True, text=True, timeout=60)
    assert again.stdout == fetched.stdout and "apt" not in again.stderr.lower()


def test_a_jvm_package_apt_does_not_have_is_refused_and_leaves_nothing(tmp_path):
    refused = subprocess.run([str(JVM), "openjdk-17-jre-headless:amd64=0.0-not-a-version", str(tmp_path / "jvm")],
                             capture_output=True, text=True, timeout=600)
    assert refused.returncode == 1
    assert "apt cannot download openjdk-17-jre-headless:amd64=0.0-not-a-version" in refused.stderr
    assert not (tmp_path / "jvm").exists()
