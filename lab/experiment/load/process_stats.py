"""What a running process costs, sampled from /proc while it runs: JMeter's peak RSS, CPU time and user."""
from __future__ import annotations

import contextlib
import os
import re
from pathlib import Path


class ProcessStats:
    """Peak RSS and CPU time of a running process, sampled from /proc (gone once it exits)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.peak_rss_mb: float | None = None
        self.cpu_s: float | None = None
        self.uid: int | None = None         # its effective user, as the kernel saw it

    def sample(self) -> None:
        try:
            status = Path(f"/proc/{self.pid}/status").read_text()
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return
        match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.M)
        if match:
            self.peak_rss_mb = round(int(match.group(1)) / 1024, 1)
        uids = re.search(r"^Uid:\s+\d+\s+(\d+)", status, re.M)
        with contextlib.suppress(OSError):          # once the launcher (ip, setpriv) has become Java
            if uids and os.path.basename(os.readlink(f"/proc/{self.pid}/exe")).startswith("java"):
                self.uid = int(uids.group(1))
        fields = stat.rsplit(")", 1)[1].split()
        self.cpu_s = round((int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK"), 1)
