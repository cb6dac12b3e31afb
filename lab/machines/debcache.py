"""The host's cache of the Debian packages the machines' root file systems are made of: one folder per suite under
CACHE_DIR, shared by the containers' image and the VMs' box (one recipe) and by every checkout, as the host's Docker
images are. A second build of a suite (the VMs' box after the containers' image, a changed recipe, another clone)
downloads only what is new: bookworm's root file system took 56 s with a full cache, 65.5 s with an empty one
(one build each, 2026-12-03).

apt checks every cached file against the mirror's signed index before it installs it and fetches again one that
does not match, so the cache is data the build checks, not code it trusts. Each build keeps the packages it
installed and drops their other versions; a package neither kind installs any longer stays until the folder is
removed by hand (`rm -r /var/cache/camel-lab/apt`: the next build downloads everything again)."""
from __future__ import annotations

import contextlib
import fcntl
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

from lab import shell
from lab.errors import LabError

CACHE_DIR = Path("/var/cache/camel-lab/apt")
ARCHIVES = "var/cache/apt/archives"       # apt's own folder of downloaded packages, in the root file system


def folder(suite: str) -> Path:
    return CACHE_DIR / suite


@contextlib.contextmanager
def locked(suite: str) -> Iterator[Path]:
    """The suite's folder, held against a build beside this one that fills or prunes it."""
    cache = folder(suite)
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield cache


def mmdebstrap_options(suite: str) -> list[str]:
    """mmdebstrap's options that fill the root file system's archive folder from the cache before anything is
    downloaded, and leave what was downloaded there for keep() (and apt's lists: customize.sh's apt starts from them and
    removes them)."""
    cache = folder(suite)
    cache.mkdir(parents=True, exist_ok=True)
    fill = (f'mkdir -p "$1"/{ARCHIVES} && flock {shlex.quote(str(cache / ".lock"))} '
            f'find {shlex.quote(str(cache))} -maxdepth 1 -name "*.deb" -exec cp -t "$1"/{ARCHIVES} {{}} +')
    return ["--skip=essential/unlink", "--skip=cleanup/apt", f"--setup-hook={fill}"]


def deb_name(package: str, version: str, architecture: str) -> str:
    """apt's file name for a package's version (an epoch's colon is written %3a)."""
    return f"{package}_{version.replace(':', '%3a')}_{architecture}.deb"


def installed(root: Path) -> dict[str, str]:
    """The root file system's installed packages: {package: its .deb file's name}."""
    listed = shell.run(["dpkg-query", f"--admindir={root / 'var/lib/dpkg'}", "-W", "-f",
                        "${db:Status-Status} ${Package} ${Version} ${Architecture}\n"],
                       "box build failed while reading its installed packages", error=LabError)
    names = {}
    for line in listed.stdout.splitlines():
        status, package, version, architecture = line.split(" ")
        if status == "installed":
            names[package] = deb_name(package, version, architecture)
    return names


def stale(cached: list[str], wanted: dict[str, str]) -> list[str]:
    """The cached files that are another version of a package this build installed (wanted: installed()'s)."""
    return [name for name in cached if wanted.get(name.split("_", 1)[0], name) != name]


def keep(suite: str, root: Path) -> None:
    """The packages this build installed, from the root file system's archive folder into the cache, and their
    other versions removed from it (the root file system's own copies stay: apt-get clean empties them)."""
    wanted = installed(root)
    files = set(wanted.values())
    with locked(suite) as cache:
        for deb in (root / ARCHIVES).glob("*.deb"):
            target = cache / deb.name
            if deb.name in files and not target.exists():
                partial = target.with_suffix(".partial")
                shutil.copyfile(deb, partial)
                partial.rename(target)      # a build beside this one never copies half a file
        for name in stale([p.name for p in cache.glob("*.deb")], wanted):
            (cache / name).unlink()
