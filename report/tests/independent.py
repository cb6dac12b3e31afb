"""The summary's figures computed again from the raw files with plain Python (csv, sorted lists, loops),
sharing no code with the report, for the tests to compare against."""
import csv
import math
import statistics
from collections import Counter, defaultdict


def jtl_rows(path):
    with open(path, newline="") as f:
        return [dict(r, ts=int(r["timeStamp"]), el=int(r["elapsed"])) for r in csv.DictReader(f)]


def window_rows(rows, warmup_s):
    """Rows that started after the warm-up, counted from the first sample; and the window in ms."""
    first = min(r["ts"] for r in rows)
    last = max(r["ts"] for r in rows)
    start = first + warmup_s * 1000
    return [r for r in rows if start <= r["ts"] <= last], start, last


def nearest_rank(values, p):
    ordered = sorted(values)
    k = math.ceil(p / 100 * len(ordered))
    return ordered[max(k, 1) - 1]


def load_figures(rows, warmup_s):
    inside, start, last = window_rows(rows, warmup_s)
    ok = [r for r in inside if r["success"] == "true"]
    lat = [r["el"] for r in ok]
    seconds = (last - start) / 1000
    per_second = Counter(int((r["ts"] - start) // 1000) for r in ok)
    whole = int(seconds)
    return {
        "tps_sd": statistics.stdev([per_second.get(s, 0) for s in range(whole)]),
        "sd": statistics.stdev(lat),
        "requests": len(inside),
        "tps": len(ok) / seconds,
        "error_pct": 100 * (len(inside) - len(ok)) / len(inside),
        "p50": nearest_rank(lat, 50), "p95": nearest_rank(lat, 95), "p99": nearest_rank(lat, 99),
        "mean": sum(lat) / len(lat),
        "window_s": seconds,
    }


def last_answer_before_silence(rows):
    """End (ms) of the last successful response: in the fixture no request succeeds after the stop."""
    return max(r["ts"] + r["el"] for r in rows if r["success"] == "true")


def metric_rows(path, metric):
    with open(path, newline="") as f:
        return [(float(r["time"]), r["instance"], float(r["value"])) for r in csv.DictReader(f)
                if r["metric"] == metric]


def summed_by_time(rows, keep=lambda instance: True):
    total = defaultdict(float)
    for t, instance, v in rows:
        if keep(instance):
            total[t] += v
    return total


def max_in(series, start_s, end_s):
    return max(v for t, v in series.items() if start_s <= t <= end_s)


def integral(series, start_s, end_s):
    """Sum of rate × time since the previous sample, for samples inside (start, end]."""
    times = sorted(series)
    return sum(series[b] * (b - a) for a, b in zip(times, times[1:], strict=False) if start_s < b <= end_s)
