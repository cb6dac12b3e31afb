"""A folder assembled from a pom (lab/maven.py): once, also when two threads of one run ask for it at once (JMeter
assembled beside the boot while the load may ask for it)."""
import threading
import time

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
    assert [p.name for p in home.parent.iterdir()] == ["home"], "a half-built folder was left"
