"""The machines' memory while they were provisioned: each machine's watch (site.yml writes it every 2 s) read
back and summarised (available at the start and at its lowest, swap), for run.json and the console."""
from __future__ import annotations

import subprocess

from lab import machines, paths
from lab.machines import reach


def memory_summary(samples: str) -> dict | None:
    """What a machine's memory watch (site.yml: "epoch MemAvailable SwapTotal SwapFree", kB, every 2 s) saw:
    available memory at its start (before the app was stopped) and at its lowest, when, and the most swap in
    use. None without a whole sample."""
    rows = []
    for line in samples.splitlines():
        fields = line.split()
        if len(fields) == 4 and all(f.isdigit() for f in fields):
            rows.append([int(f) for f in fields])
    if not rows:
        return None
    start = rows[0][0]
    lowest = min(rows, key=lambda r: r[1])
    return {"samples": len(rows), "seconds": rows[-1][0] - start,
            "available_at_start_mb": rows[0][1] // 1024, "available_min_mb": lowest[1] // 1024,
            "available_min_at_s": lowest[0] - start,
            "swap_used_max_mb": max(r[2] - r[3] for r in rows) // 1024}


def memory_during(names=machines.NAMES) -> dict[str, dict | str]:
    """Each machine's memory summary of its last provisioning, or why there is none."""
    found = {}
    for name in names:
        try:
            read = reach.ssh(name, f"cat {paths.GUEST_PROVISION_MEMORY}", timeout=60)
        except subprocess.TimeoutExpired:
            found[name] = "not read: SSH timed out"
            continue
        summary = memory_summary(read.stdout) if read.returncode == 0 else None
        found[name] = summary or f"not read: {(read.stderr.strip() or 'no samples')[-200:]}"
    return found


def report_memory(names, log=print) -> dict[str, dict | str]:
    """memory_during, each machine's line logged: after a provisioning that ran (a skipped one left the last
    provisioning's samples)."""
    found = memory_during(names)
    for name, summary in found.items():
        log(describe_memory(name, summary))
    return found


def describe_memory(name: str, summary: dict | str) -> str:
    if isinstance(summary, str):
        return f"{name}: memory while provisioning {summary}"
    return (f"{name}: memory while provisioning: {summary['available_at_start_mb']} MB available at the start, "
            f"lowest {summary['available_min_mb']} MB at +{summary['available_min_at_s']} s, "
            f"swap used at most {summary['swap_used_max_mb']} MB ({summary['samples']} samples)")
