"""JMeter's own HTML dashboard of each machine's JTL, in <run-dir>/jmeter-dashboard/<machine>/."""
from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from lab import shell, unprivileged
from lab.experiment.load.jmeter import (
    LAB_PROPERTIES,
    LoadError,
    Progress,
    ensure_jmeter,
    jmeter_command,
)
from lab.experiment.load.profile import MACHINES


def dashboards(run_dir: Path, machines: tuple[str, ...] = MACHINES, progress: Progress = print,
               java: str = "java") -> dict[str, Path | None]:
    """JMeter's HTML dashboard per machine in <run-dir>/jmeter-dashboard/<machine>/ (index.html).

    Never raises: a machine whose JTL is missing or has no sample, or whose generation fails, gets None
    and a line saying so.
    """
    run_dir = Path(run_dir)
    out_root = run_dir / "jmeter-dashboard"
    made: dict[str, Path | None] = {}
    try:
        home = ensure_jmeter(progress=progress)
    except LoadError as e:
        progress(f"dashboards: skipped, no JMeter ({e})")
        return {m: None for m in machines}
    account = unprivileged.ensure()     # JMeter as the lab's user (a plan's JTL is a customer's text)
    for machine in machines:
        made[machine] = None
        jtl = run_dir / machine / "jmeter.jtl"
        try:
            with open(jtl, "rb") as f:
                has_samples = len(f.readline()) > 0 and len(f.readline()) > 0
        except OSError:
            progress(f"dashboard {machine}: skipped, {jtl} is missing")
            continue
        if not has_samples:
            progress(f"dashboard {machine}: skipped, {jtl} has no sample")
            continue
        out, log = out_root / machine, out_root / f"{machine}.log"
        shutil.rmtree(out, ignore_errors=True)     # JMeter wants an empty or new folder; it is derived data
        out_root.mkdir(parents=True, exist_ok=True)
        try:
            _generate(home, jtl, machine, out, log, java, account)
        except (LoadError, OSError, subprocess.TimeoutExpired) as e:
            progress(f"dashboard {machine}: failed ({e}); log {log}")
            continue
        made[machine] = out
        progress(f"dashboard {machine}: {out / 'index.html'}")
    return made


def _generate(home: Path, jtl: Path, machine: str, out: Path, log: Path, java: str,
              account: unprivileged.Account | None) -> None:
    """JMeter's dashboard of jtl into out, its log in log. As the lab's user it writes in a folder of that user's
    home, then moved into place: JMeter checks its output folder and the JTL with access(2), which ignores the read
    capability a closed run folder (a checkout in /root) needs."""
    with contextlib.ExitStack() as stack:
        where, said, env = out, log, None
        if account is not None:
            scratch = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=account.home, prefix="dashboard-")))
            account.give(scratch)
            where, said = scratch / machine, scratch / f"{machine}.log"
            jtl = _beside(jtl, scratch / jtl.name)      # JMeter checks it with access(2) too
        cmd = jmeter_command(home, "-g", str(jtl), "-o", str(where), "-q", str(LAB_PROPERTIES), "-j", str(said),
                             f"-Jjmeter.reportgenerator.report_title=Camel Tuning Lab: {machine}", java=java)
        if account is not None:
            cmd, env = account.command(cmd, [home, LAB_PROPERTIES, jtl]), account.environment()
        try:
            shell.run(cmd, f"dashboard {machine}", error=LoadError, lines=1, timeout=1800, cwd=where.parent, env=env)
        finally:
            for made, kept in ((said, log), (where, out)):
                if made != kept and made.exists():
                    shutil.move(made, kept)
            if account is not None and out.is_dir():
                unprivileged.disarm(out)        # made by the lab's user: no link into the run folder
    if not (out / "index.html").is_file():
        raise LoadError(f"dashboard {machine}: JMeter wrote no index.html")


def _beside(jtl: Path, there: Path) -> Path:
    """jtl reachable at there: a hard link (no copy of a large file) where both are on one file system, else a copy."""
    try:
        os.link(jtl, there)
    except OSError:
        shutil.copyfile(jtl, there)
    return there
