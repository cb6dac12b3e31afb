"""A folder assembled from a pom (lab/maven.py): once, also when two threads of one run ask for it at once (JMeter
assembled beside the boot while the load may ask for it) or two processes do (test workers sharing a checkout)."""
import multiprocessing
import subprocess
import threading
import time
from pathlib import Path

from lab import maven


class Broken(Exception):
    pass


def test_two_threads_assembling_one_home_run_maven_once(tmp_path, monkeypatch):
    pom = tmp_path / "pom.xml"
    pom.write_text("<project/>")
    home = tmp_path / "state" / "home"
    runs = []

    def fake_maven(argv, what, error, cwd, **_):
        building = next(a.split("=", 1)[1] for a in argv if a.startswith("-Dlab.home="))
        runs.append(building)
        time.sleep(0.3)             # long enough for the other thread to arrive while this one builds
        (tmp_path / "state" / building.rsplit("/", 1)[1] / "bin").mkdir(parents=True)
        (tmp_path / "state" / building.rsplit("/", 1)[1] / "bin" / "marker").write_text("built")

    monkeypatch.setattr(maven.shell, "run", fake_maven)
    got, failed = [], []

    def assemble():
        try:
            got.append(maven.assemble(pom, home, "lab.home", "bin/marker", Broken))
        except Broken as e:
            failed.append(e)

    threads = [threading.Thread(target=assemble) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not failed and got == [home, home]
    assert len(runs) == 1, f"Maven ran {len(runs)} times"
    assert (home / "bin" / "marker").read_text() == "built" and maven.is_built(home, pom, "bin/marker")
    assert sorted(p.name for p in home.parent.iterdir()) == ["home", "home.lock"], "a half-built folder was left"


def test_two_processes_assembling_one_home_run_maven_once(tmp_path, monkeypatch):
    """A fresh clone's test workers both asked for JMeter: the second replaced the home under the first's JMeter
    ("Could not access …/lib/ext", CI of 3262e8d's clone)."""
    pom = tmp_path / "pom.xml"
    pom.write_text("<project/>")
    home = tmp_path / "state" / "home"
    runs = tmp_path / "runs.txt"

    def fake_maven(argv, what, error, cwd, **_):
        building = Path(next(a.split("=", 1)[1] for a in argv if a.startswith("-Dlab.home=")))
        with open(runs, "a") as f:
            f.write("ran\n")
        time.sleep(0.5)
        (building / "bin").mkdir(parents=True)
        (building / "bin" / "marker").write_text("built")

    monkeypatch.setattr(maven.shell, "run", fake_maven)
    fork = multiprocessing.get_context("fork")       # the children keep the stand-in Maven
    workers = [fork.Process(target=maven.assemble, args=(pom, home, "lab.home", "bin/marker", Broken))
               for _ in range(2)]
    for w in workers:
        w.start()
    for w in workers:
        w.join(30)
    assert [w.exitcode for w in workers] == [0, 0]
    assert runs.read_text() == "ran\n", "Maven ran in both processes"
    assert maven.is_built(home, pom, "bin/marker")


def test_the_labs_maven_runs_a_short_builds_jvm_and_the_users_options_win(tmp_path, monkeypatch):
    """Every Maven the lab runs gets JVM_OPTIONS (C1 only: its C2 doubled a build's CPU beside a cold start's root
    file system), ahead of the user's own MAVEN_OPTS, which therefore win; a JVM takes them."""
    monkeypatch.setenv("MAVEN_OPTS", "-Xmx1g -XX:TieredStopAtLevel=4")
    opts = maven.environment()["MAVEN_OPTS"].split()
    assert opts == [*maven.JVM_OPTIONS.split(), "-Xmx1g", "-XX:TieredStopAtLevel=4"]
    assert maven.environment({"HOME": "/home/x"}) == {"HOME": "/home/x", "MAVEN_OPTS": maven.JVM_OPTIONS}
    java = subprocess.run(["java", *maven.JVM_OPTIONS.split(), "-version"], capture_output=True, text=True)
    assert java.returncode == 0, java.stderr
    seen = []
    monkeypatch.setattr(maven.shell, "run", lambda argv, *a, **kw: seen.append(kw["env"]["MAVEN_OPTS"]))
    pom = tmp_path / "pom.xml"
    pom.write_text("<project/>")
    try:
        maven.assemble(pom, tmp_path / "home", "lab.home", "marker", Broken)
    except Broken:
        pass                        # the stand-in built nothing: only what Maven was given matters here
    assert seen and seen[0].startswith(maven.JVM_OPTIONS)
