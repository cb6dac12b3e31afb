"""Reads a JMeter CSV JTL into column arrays, one row per sample, and names each failure's error type."""
from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

NON_HTTP_CODE = "Non HTTP response code: "
NON_HTTP_MESSAGE = "Non HTTP response message: "


@dataclass
class Samples:
    """One machine's samples, sorted by start time. Times in epoch seconds, latencies in ms."""
    start: np.ndarray       # float, sample start (JMeter's timeStamp)
    elapsed_ms: np.ndarray  # float, JMeter's elapsed (request sent → last byte)
    ok: np.ndarray          # bool, JMeter's success
    label: np.ndarray       # str
    error: np.ndarray       # str, "" for successes, else error_name() of the sample
    bad_rows: int = 0       # rows that could not be parsed (e.g. a line cut by an interrupted run)

    def __len__(self) -> int:
        return len(self.start)

    @property
    def end(self) -> np.ndarray:
        return self.start + self.elapsed_ms / 1000.0


def error_name(code: str, message: str, failure_message: str) -> str:
    """A short, groupable name for a failed sample, e.g. 'java.net.SocketTimeoutException: Read timed out',
    'HTTP 502 Bad Gateway', or the assertion's message for a 2xx that failed an assertion."""
    code, message, failure_message = code.strip(), message.strip(), failure_message.strip()
    if code.startswith(NON_HTTP_CODE):
        exception = code[len(NON_HTTP_CODE):]
        detail = message[len(NON_HTTP_MESSAGE):] if message.startswith(NON_HTTP_MESSAGE) else message
        return f"{exception}: {detail}" if detail and detail != exception else exception
    if code.isdigit():
        if code.startswith(("4", "5")) or not failure_message:
            reason = "" if message == code else message     # a reason phrase that only repeats the code
            return f"HTTP {code} {reason}".rstrip()
        return f"assertion: {failure_message[:80]}"
    return code or failure_message[:80] or "unknown error"


def read_jtl(path: str | Path) -> Samples:
    """Reads a CSV JTL with a header line. Rows with fewer columns than the header (a line cut by a killed
    JMeter) or non-numeric times are skipped and counted. Columns are found by name."""
    start: list[float] = []
    elapsed: list[float] = []
    ok: list[bool] = []
    label: list[str] = []
    error: list[str] = []
    bad = 0
    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        rows = csv.reader(f)
        header = next(rows, None)
        if not header:
            return _samples(start, elapsed, ok, label, error, bad)
        col = {name: i for i, name in enumerate(header)}
        try:
            i_ts, i_el, i_ok = col["timeStamp"], col["elapsed"], col["success"]
        except KeyError as missing:
            raise ValueError(f"{path}: not a CSV JTL with a header (no column {missing})") from None
        i_label, i_code = col.get("label"), col.get("responseCode")
        i_msg, i_fail = col.get("responseMessage"), col.get("failureMessage")
        width = len(header)  # JMeter writes every column; fewer means a line cut short

        def field(row: list[str], i: int | None) -> str:
            return row[i] if i is not None and i < len(row) else ""

        for row in rows:
            if len(row) < width:
                bad += 1
                continue
            try:
                ts, el = float(row[i_ts]), float(row[i_el])
            except ValueError:
                bad += 1
                continue
            success = row[i_ok].strip().lower() == "true"
            start.append(ts / 1000.0)
            elapsed.append(el)
            ok.append(success)
            label.append(field(row, i_label))
            error.append("" if success else
                         error_name(field(row, i_code), field(row, i_msg), field(row, i_fail)))
    return _samples(start, elapsed, ok, label, error, bad)


def _samples(start: list[float], elapsed: list[float], ok: list[bool], label: list[str], error: list[str],
             bad: int) -> Samples:
    start = np.asarray(start, dtype=float)
    order = np.argsort(start, kind="stable")  # JMeter writes in completion order, not start order
    return Samples(start=start[order], elapsed_ms=np.asarray(elapsed, dtype=float)[order],
                   ok=np.asarray(ok, dtype=bool)[order], label=np.asarray(label, dtype=object)[order],
                   error=np.asarray(error, dtype=object)[order], bad_rows=bad)
