"""JMeter's own HTML dashboard of each machine's JTL, in <run-dir>/jmeter-dashboard/<machine>/."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from lab import shell
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
        out = out_root / machine
        log = out_root / f"{machine}.log"
        shutil.rmtree(out, ignore_errors=True)     # JMeter wants an empty or new folder; it is derived data
        out_root.mkdir(parents=True, exist_ok=True)
        cmd = jmeter_command(home, "-g", str(jtl), "-o", str(out), "-q", str(LAB_PROPERTIES), "-j", str(log),
                             f"-Jjmeter.reportgenerator.report_title=Camel Tuning Lab: {machine}", java=java)
        try:
            shell.run(cmd, f"dashboard {machine}", error=LoadError, lines=1, timeout=1800)
            if not (out / "index.html").is_file():
                raise LoadError(f"dashboard {machine}: JMeter wrote no index.html")
        except (LoadError, OSError, subprocess.TimeoutExpired) as e:
            progress(f"dashboard {machine}: failed ({e}); log {log}")
            continue
        made[machine] = out
        progress(f"dashboard {machine}: {out / 'index.html'}")
    return made
