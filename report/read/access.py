"""Reads HTTPD's access log (logs/httpd-access.log, LogFormat `%h %l %u %t "%r" %>s %b %D`): when each request
arrived and its %D, the time HTTPD spent on it in µs — the whole request, waiting for the backend included.
The /server-status polls of PCP's apache agent are left out: they are not the load."""
from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import numpy as np

ACCESS_LOG = "logs/httpd-access.log"
NOT_THE_LOAD = "/server-status"
LINE = re.compile(r'\[([^\]]+)\] "([^"]*)" \d{3} \S+ (\d+)\s*$')


@dataclass
class Requests:
    time: np.ndarray         # epoch s when HTTPD received the request (%t: whole seconds)
    duration_ms: np.ndarray  # %D in ms
    skipped: int = 0         # lines not in the format (e.g. the fixture's "trimmed" marker)

    def __len__(self) -> int:
        return len(self.time)


def read_access_log(path: str | Path) -> Requests | None:
    """Requests of the log, in file order; None when the file is absent or unreadable."""
    times: list[float] = []
    durations: list[float] = []
    skipped = 0
    seen: dict[str, float | None] = {}  # %t → epoch: one strptime per distinct second
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                found = LINE.search(line)
                if not found:
                    skipped += 1
                    continue
                if NOT_THE_LOAD in found.group(2):
                    continue
                stamp = found.group(1)
                if stamp not in seen:
                    try:
                        seen[stamp] = datetime.strptime(stamp, "%d/%b/%Y:%H:%M:%S %z").timestamp()
                    except ValueError:
                        seen[stamp] = None
                if seen[stamp] is None:
                    skipped += 1
                    continue
                times.append(seen[stamp])
                durations.append(int(found.group(3)) / 1000.0)
    except OSError:
        return None
    return Requests(np.asarray(times, dtype=float), np.asarray(durations, dtype=float), skipped)
