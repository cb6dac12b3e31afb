"""How long the report (`python -m report run`) takes and how big report.html gets: for the recorded fixture, and
for a run scaled to the article-scale profile (150 users × 20 min by default) made by replicating the fixture's JTL
rows and metrics with shifted timestamps. A hand-run benchmark, not a test: prints figures, asserts nothing.

    .venv/bin/python -m bench.report_speed [--users 150] [--minutes 20] [--keep DIR]

(from the repository's root; the figures measured on the development host are in report/README.md, "Tests and
benchmark").
"""
from __future__ import annotations

import argparse
import csv
import math
import shutil
import tempfile
import time
from pathlib import Path

from report import MACHINES, build_report, read_jtl, read_metrics

FIXTURE = Path(__file__).resolve().parents[1] / "report" / "tests" / "fixtures" / "20261122T215957Z-fixture"
FIXTURE_USERS = 10


def scale_jtl(src: Path, dst: Path, time_copies: int, user_copies: int) -> tuple[int, float]:
    """Each row once per (time copy, user copy): time copies follow one another, user copies overlap,
    shifted by a few ms so their samples interleave like more threads."""
    with open(src, newline="") as f:
        rows = list(csv.reader(f))
    header, body = rows[0], rows[1:]
    i_ts = header.index("timeStamp")
    first = min(int(r[i_ts]) for r in body)
    span_ms = max(int(r[i_ts]) for r in body) - first + 1000
    with open(dst, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(header)
        for t in range(time_copies):
            for u in range(user_copies):
                shift = t * span_ms + u * 7
                for r in body:
                    r2 = list(r)
                    r2[i_ts] = str(int(r[i_ts]) + shift)
                    out.writerow(r2)
    return len(body) * time_copies * user_copies, span_ms / 1000


def scale_metrics(src: Path, dst: Path, time_copies: int, span_s: float) -> None:
    with open(src, newline="") as f:
        rows = list(csv.reader(f))
    with open(dst, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(rows[0])
        for t in range(time_copies):
            for r in rows[1:]:
                out.writerow([f"{float(r[0]) + t * span_s:.3f}", *r[1:]])


def make_scaled_run(folder: Path, users: int, minutes: float) -> None:
    shutil.copytree(FIXTURE, folder)
    for machine in MACHINES:
        starts = read_jtl(FIXTURE / machine / "jmeter.jtl").start
        time_copies = max(1, math.ceil(minutes * 60 / (starts[-1] - starts[0] + 1)))
        user_copies = max(1, round(users / FIXTURE_USERS))
        _, span_s = scale_jtl(FIXTURE / machine / "jmeter.jtl", folder / machine / "jmeter.jtl",
                              time_copies, user_copies)
        scale_metrics(FIXTURE / machine / "pcp" / "metrics.csv", folder / machine / "pcp" / "metrics.csv",
                      time_copies, span_s)


def measure(label: str, folder: Path) -> None:
    timings = {}
    for machine in MACHINES:
        t = time.perf_counter()
        read_jtl(folder / machine / "jmeter.jtl")
        timings[f"read {machine} JTL"] = time.perf_counter() - t
        t = time.perf_counter()
        read_metrics(folder / machine / "pcp" / "metrics.csv")
        timings[f"read {machine} metrics.csv"] = time.perf_counter() - t
    t = time.perf_counter()
    html, summary = build_report(folder)
    total = time.perf_counter() - t
    jtl_rows = sum(sum(1 for _ in open(folder / m / "jmeter.jtl")) - 1 for m in MACHINES)
    jtl_mb = sum((folder / m / "jmeter.jtl").stat().st_size for m in MACHINES) / 1e6
    print(f"{label}: {jtl_rows:,} JTL rows ({jtl_mb:.0f} MB), report in {total:.1f} s, "
          f"report.html {html.stat().st_size / 1024:.0f} KiB, summary.md {summary.stat().st_size / 1024:.1f} KiB")
    print("    of which " + ", ".join(f"{k} {v:.2f} s" for k, v in timings.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--users", type=int, default=150)
    parser.add_argument("--minutes", type=float, default=20)
    parser.add_argument("--keep", type=Path, help="build the scaled run in DIR and keep it")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        fixture_copy = Path(tmp) / "fixture" / FIXTURE.name
        shutil.copytree(FIXTURE, fixture_copy)
        measure("fixture", fixture_copy)
        scaled = (args.keep or Path(tmp) / "scaled") / "scaled-run"
        if scaled.exists():
            shutil.rmtree(scaled)
        make_scaled_run(scaled, args.users, args.minutes)
        measure(f"scaled to {args.users} users × {args.minutes:g} min", scaled)


if __name__ == "__main__":
    main()
