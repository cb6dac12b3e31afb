"""JMeter's JTL (one CSV record per sample): read whole records while JMeter writes them, count them, cut a
half-written last one, read a finished file."""
from __future__ import annotations

import csv
import io
from pathlib import Path

JTL_COLUMNS = ("timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,"
               "failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect").split(",")


def split_records(buf: bytes) -> tuple[list[bytes], int]:
    """Complete CSV records at the start of buf (a quoted field may hold newlines) and where they end."""
    records, start, pos, quotes = [], 0, 0, 0
    while True:
        newline = buf.find(b"\n", pos)
        if newline < 0:
            return records, start
        quotes += buf.count(b'"', pos, newline)
        pos = newline + 1
        if quotes % 2 == 0:
            records.append(buf[start:pos])
            start, quotes = pos, 0


class JtlTail:
    """Reads a JTL while JMeter writes it: whole records only, counted in total and since the last look."""

    def __init__(self, path: Path, keep_starts: bool = False) -> None:
        self.path = path
        # each sample's start (epoch s) and success, where a rule on the throughput so far needs them (settle.py)
        self.starts: list[float] | None = [] if keep_starts else None
        self.oks: list[bool] = []
        self.offset = 0             # end of the last whole record read
        self.header: list[str] | None = None
        self.samples = self.errors = 0
        self.by_label: dict[str, int] = {}
        self.interval_samples = self.interval_errors = 0
        self.threads = 0            # grpThreads of the newest sample: the group's active threads

    def read(self) -> None:
        try:
            with open(self.path, "rb") as f:
                f.seek(self.offset)
                chunk = f.read()
        except FileNotFoundError:
            return
        records, used = split_records(chunk)
        if not records:
            return
        samples = errors = 0
        by_label = dict(self.by_label)
        threads = self.threads
        starts, oks = [], []
        for row in csv.reader(io.StringIO(b"".join(records).decode("utf-8", errors="replace"))):
            if self.header is None:
                self.header = row
                continue
            if len(row) != len(JTL_COLUMNS):
                continue
            samples += 1
            errors += row[7] != "true"
            if self.starts is not None and row[0].isdigit():
                starts.append(int(row[0]) / 1000)
                oks.append(row[7] == "true")
            by_label[row[2]] = by_label.get(row[2], 0) + 1
            threads = int(row[11]) if row[11].isdigit() else threads
        # all at once: an interrupt in the loop above leaves the counts as they were
        self.offset += used
        self.samples += samples
        self.errors += errors
        self.interval_samples += samples
        self.interval_errors += errors
        self.by_label, self.threads = by_label, threads
        if self.starts is not None:
            self.starts += starts
            self.oks += oks

    @property
    def header_ok(self) -> bool:
        return self.header is None or self.header == JTL_COLUMNS

    def take_interval(self) -> tuple[int, int]:
        counts = (self.interval_samples, self.interval_errors)
        self.interval_samples = self.interval_errors = 0
        return counts

    def trim_partial_tail(self) -> int:
        """Cuts a half-written last record off the file (JMeter was killed mid-line); returns bytes cut."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return 0
        if size > self.offset:
            with open(self.path, "r+b") as f:
                f.truncate(self.offset)
        return max(0, size - self.offset)


def read_jtl(path: Path) -> list[dict[str, str]]:
    """All samples of a JTL as dicts (column → text)."""
    with open(path, newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))
