"""A network namespace of its own for each customer's build (a descriptor's Maven project, lab/provision/jars.py):
the lab's uplink (slirp4netns) and egress guard, as the lab's own namespace has them (netns.py), so that the build
reaches Maven Central and nothing of the host's, of a private network or of the lab's machines; removed with it."""
from __future__ import annotations

import contextlib
import itertools
import os
from collections.abc import Iterator
from pathlib import Path

from lab import paths, procs
from lab.machines import netns

NAME = "camel-lab-build"
_BUILDS = itertools.count()


@contextlib.contextmanager
def for_a_build() -> Iterator[tuple[Path, Path]]:
    """(the namespace's file, the resolv.conf its processes must see: slirp's resolver), while the context lasts."""
    name = f"{NAME}-{os.getpid()}-{next(_BUILDS)}"
    resolv = paths.RUN_DIR / f"{name}.resolv.conf"
    uplink = None
    try:
        netns.sh(["ip", "netns", "add", name], "creating a build's network namespace")
        netns.sh(["ip", "-n", name, "link", "set", "lo", "up"], "bringing up loopback in a build's namespace")
        uplink = netns.start_uplink(netns.NETNS_FILE.parent / name, name)
        netns.sh(["ip", "netns", "exec", name, "nft", "-f", "-"], "loading a build's egress guard",
                 input=netns.guard_ruleset(netns.host_networks()))
        resolv.write_text(f"nameserver {netns.SLIRP_DNS}\n")
        yield netns.NETNS_FILE.parent / name, resolv
    finally:
        if uplink is not None:
            procs.stop(name)
        procs.forget(name)
        netns.sh(["ip", "netns", "delete", name], "deleting a build's network namespace", check=False)
        resolv.unlink(missing_ok=True)
