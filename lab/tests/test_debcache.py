"""The host's cache of the machines' Debian packages (lab/machines/debcache.py): what a build takes from it, what it
leaves there. The real builds (mmdebstrap, apt checking the cached files) run in the e2e's containers and VMs."""
import subprocess

import pytest

from lab.machines import debcache

STATUS = """Package: libc6
Status: install ok installed
Architecture: amd64
Version: 2.36-9+deb12u14

Package: openssh-server
Status: install ok installed
Architecture: amd64
Version: 1:9.2p1-2+deb12u7

Package: removed-one
Status: deinstall ok config-files
Architecture: amd64
Version: 1.0-1

"""


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(debcache, "CACHE_DIR", tmp_path / "cache")
    return tmp_path / "cache"


def built_root(tmp_path, debs):
    root = tmp_path / "root"
    (root / "var/lib/dpkg").mkdir(parents=True)
    (root / "var/lib/dpkg/status").write_text(STATUS)
    (root / debcache.ARCHIVES).mkdir(parents=True)
    for name in debs:
        (root / debcache.ARCHIVES / name).write_text(name)
    return root


def filled_by_the_hook(suite, tmp_path):
    """A next build's root folder after mmdebstrap ran the setup hook in it ($1: that folder)."""
    fill = next(o for o in debcache.mmdebstrap_options(suite) if o.startswith("--setup-hook="))
    nxt = tmp_path / "next"
    nxt.mkdir()
    subprocess.run(["sh", "-c", fill.removeprefix("--setup-hook="), "hook", str(nxt)], check=True)
    return nxt


def test_apts_file_name_writes_an_epochs_colon_as_apt_does():
    assert debcache.deb_name("openssh-server", "1:9.2p1-2", "amd64") == "openssh-server_1%3a9.2p1-2_amd64.deb"


def test_the_installed_packages_are_read_from_the_root_file_systems_own_dpkg(tmp_path):
    assert debcache.installed(built_root(tmp_path, [])) == {
        "libc6": "libc6_2.36-9+deb12u14_amd64.deb",
        "openssh-server": "openssh-server_1%3a9.2p1-2+deb12u7_amd64.deb"}


def test_a_build_keeps_what_it_installed_and_drops_only_their_other_versions(tmp_path, cache_dir):
    old = cache_dir / "bookworm"
    old.mkdir(parents=True)
    for name in ("libc6_2.36-9+deb12u13_amd64.deb",         # an older libc6: replaced
                 "linux-image-6.1.0-41-amd64_6.1.158-1_amd64.deb"):   # the VMs' kernel: the other kind installs it
        (old / name).write_text(name)
    root = built_root(tmp_path, ["libc6_2.36-9+deb12u14_amd64.deb", "openssh-server_1%3a9.2p1-2+deb12u7_amd64.deb",
                                 "removed-one_1.0-1_amd64.deb"])          # downloaded, but not installed
    debcache.keep("bookworm", root)
    assert sorted(p.name for p in old.glob("*.deb")) == [
        "libc6_2.36-9+deb12u14_amd64.deb", "linux-image-6.1.0-41-amd64_6.1.158-1_amd64.deb",
        "openssh-server_1%3a9.2p1-2+deb12u7_amd64.deb"]
    assert (old / "libc6_2.36-9+deb12u14_amd64.deb").read_text() == "libc6_2.36-9+deb12u14_amd64.deb"
    assert not list(old.glob("*.partial"))


def test_the_next_build_finds_the_cached_packages_where_apt_looks_for_them(tmp_path, cache_dir):
    debcache.keep("bookworm", built_root(tmp_path, ["libc6_2.36-9+deb12u14_amd64.deb"]))
    nxt = filled_by_the_hook("bookworm", tmp_path)
    assert [p.name for p in (nxt / debcache.ARCHIVES).iterdir()] == ["libc6_2.36-9+deb12u14_amd64.deb"]
    # ... and mmdebstrap leaves them there for keep(), apt's lists for customize.sh
    assert {"--skip=essential/unlink", "--skip=cleanup/apt"} <= set(debcache.mmdebstrap_options("bookworm"))


def test_a_suites_first_build_finds_an_empty_cache(tmp_path, cache_dir):
    nxt = filled_by_the_hook("trixie", tmp_path)
    assert list((nxt / debcache.ARCHIVES).iterdir()) == []
