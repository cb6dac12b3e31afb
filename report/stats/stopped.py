"""When a machine stopped answering, from its JTL alone.

The rule (also in README.md): cut the run into 10 s buckets of sample start time, from the machine's first
sample (warm-up included: a machine that never answered stopped at +0 s). The machine STOPPED ANSWERING when,
from some bucket on until the last sample, every bucket has a success rate under 5 % (an empty bucket counts
as no success), that stretch is at least 30 s long and at least 20 requests were attempted in it. The time it
stopped is the end of the last successful response that started before that stretch (the stretch's start
when there was none). A run that recovers before its end has no stop.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from report.read.jtl import Samples

BUCKET_S = 10.0
MAX_SUCCESS_RATE = 0.05
MIN_SPAN_S = 30.0
MIN_ATTEMPTS = 20


@dataclass
class Stop:
    at: float           # epoch s: the last successful answer before the silence
    silent_from: float  # epoch s: start of the first bucket of the silent stretch
    attempts: int       # requests started at or after `at`
    successes: int      # ... of which succeeded
    errors: Counter[str]  # error name -> count, over the failed requests started at or after `at`
    until: float        # epoch s: end of the last sample
    ever_answered: bool = True  # False: no request succeeded before the silence (it never worked)


def find_stop(samples: Samples) -> Stop | None:
    """A Stop, or None when the machine kept answering (or there are too few samples to say)."""
    if len(samples) == 0:
        return None
    t0 = samples.start[0]
    bucket = ((samples.start - t0) // BUCKET_S).astype(int)
    n = int(bucket[-1]) + 1
    attempts = np.bincount(bucket, minlength=n)
    successes = np.bincount(bucket, weights=samples.ok.astype(float), minlength=n)
    silent = (successes == 0) | (successes < MAX_SUCCESS_RATE * attempts)
    k = n
    while k > 0 and silent[k - 1]:
        k -= 1
    if k == n:
        return None
    silent_from = t0 + k * BUCKET_S
    until = float(samples.end.max())
    if until - silent_from < MIN_SPAN_S or attempts[k:].sum() < MIN_ATTEMPTS:
        return None
    answered_before = samples.ok & (samples.start < silent_from)
    at = float(samples.end[answered_before].max()) if answered_before.any() else silent_from
    after = samples.start >= at
    failed_after = after & ~samples.ok
    return Stop(at=at, silent_from=silent_from, attempts=int(after.sum()),
                successes=int((after & samples.ok).sum()), errors=Counter(samples.error[failed_after]),
                until=until, ever_answered=bool(answered_before.any()))
