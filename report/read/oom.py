"""What the kernel's OOM killer logged when a machine's memory ran out: whom it killed, and what held the memory.

Before it kills, the kernel writes a table of every process with its resident memory ("Tasks state (memory values
in pages)", one "[  pid  ]   uid  tgid total_vm      rss … name" row per process), then "Out of memory: Killed
process PID (NAME) … anon-rss:…kB, file-rss:…kB, shmem-rss:…kB". The process killed is the one with the worst
OOM score, not always the one that grew: the table says which held the memory. Read from journal.txt (dated) or,
for a machine whose journal did not come back, the serial console (kernel lines: `[  123.456789] …`)."""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

PAGE_KB = 4     # the table's memory is in pages; the guests (x86-64) and the hosts the lab supports use 4 KiB ones

# the message after a journal line's "<time> <host> kernel: " or a console line's "[  123.456789] "
KERNEL = re.compile(r"^(?:\S+\s+\S+\s+kernel:\s?|[A-Z][a-z]{2}\s+\d{1,2} [\d:]{8}\s+\S+\s+kernel:\s?|\[\s*\d+\.\d+\]\s)"
                    r"(.*)$")
INVOKED = re.compile(r"^(.+?) invoked oom-killer:")
HEADER = re.compile(r"^\[\s*pid\s*\]\s+(.*\bname)\s*$")
ROW = re.compile(r"^\[\s*(\d+)\]\s+(.*)$")
KILLED = re.compile(r"Killed process (\d+) \(([^)]*)\)(.*)$")
RSS_KB = re.compile(r"\b(?:anon|file|shmem)-rss:(\d+)kB")


@dataclass
class Task:
    pid: int
    name: str
    rss_kb: int


@dataclass
class OomKill:
    pid: int                    # the process killed
    name: str
    killed_kb: int | None       # its resident memory (anon + file + shmem) as the kill line says
    invoked_by: str = ""        # the process whose allocation found no memory
    tasks: list[Task] = field(default_factory=list)    # the kernel's table; empty when the log lacks it

    def largest(self) -> Task | None:
        return max(self.tasks, key=lambda t: t.rss_kb, default=None)

    def words(self) -> str:
        """'java (pid 7376) was killed holding 274 MiB; the largest process was python3 (pid 8021) with 300 MiB
        (of 620 MiB all processes held); 150 apache2 processes held 160 MiB together'."""
        own = next((t.rss_kb for t in self.tasks if t.pid == self.pid), None)
        held = self.killed_kb if self.killed_kb is not None else own
        text = f"{self.name} (pid {self.pid}) was killed" + (f" holding {_mib(held)}" if held is not None else "")
        top = self.largest()
        if top is None:
            return text + "; the kernel's process table is not in the log"
        total = sum(t.rss_kb for t in self.tasks)
        if top.pid == self.pid:
            text += f"; it was the largest process ({_mib(top.rss_kb)} of the {_mib(total)} all processes held)"
        else:
            text += (f"; the largest process was {top.name} (pid {top.pid}) with {_mib(top.rss_kb)} "
                     f"(of the {_mib(total)} all processes held)")
        groups: dict[str, list[int]] = {}
        for t in self.tasks:
            groups.setdefault(t.name, []).append(t.rss_kb)
        name, sizes = max(groups.items(), key=lambda g: sum(g[1]))
        if len(sizes) > 1 and sum(sizes) > top.rss_kb:      # many small ones that together held the most
            text += f"; {len(sizes)} {name} processes held {_mib(sum(sizes))} together"
        return text


def _mib(kb: int) -> str:
    return f"{kb / 1024:,.0f} MiB"


def _row(columns: list[str], rest: str, pid: int) -> Task | None:
    values = rest.split()
    if "rss" not in columns or len(values) < len(columns):
        return None
    try:
        pages = int(values[columns.index("rss")])
    except ValueError:
        return None
    return Task(pid, " ".join(values[len(columns) - 1:]), pages * PAGE_KB)


def oom_kills(lines: Iterable[str]) -> list[OomKill]:
    """Every kill of the OOM killer in these log lines (journal or console), in order, each with the process
    table the kernel wrote before it (when it is there)."""
    kills: list[OomKill] = []
    columns: list[str] = []
    tasks: list[Task] = []
    invoked = ""
    for line in lines:
        found = KERNEL.match(line.rstrip("\n"))
        if not found:
            continue
        message = found.group(1).strip()
        if started := INVOKED.match(message):
            invoked, columns, tasks = started.group(1), [], []
        elif header := HEADER.match(message):
            columns, tasks = header.group(1).split(), []
        elif (row := ROW.match(message)) and columns:
            task = _row(columns, row.group(2), int(row.group(1)))
            if task is not None:
                tasks.append(task)
        elif killed := KILLED.search(message):
            sizes = [int(kb) for kb in RSS_KB.findall(killed.group(3))]
            kills.append(OomKill(int(killed.group(1)), killed.group(2), sum(sizes) if sizes else None, invoked,
                                 tasks))
            invoked, columns, tasks = "", [], []
    return kills


def read_kills(path: Path) -> list[OomKill]:
    """oom_kills of a log file; [] when it is absent."""
    if not path.is_file():
        return []
    with open(path, encoding="utf-8", errors="replace") as f:
        return oom_kills(f)
