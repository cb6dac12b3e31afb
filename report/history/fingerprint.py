"""Which runs belong to one history (Horreum's fingerprint): runs are comparable when their design, load, service,
machine kind, host cores mode and every configuration's knobs agree. The fingerprint can be widened (`ignore`: a
knob, or a part such as `load.users` or `cores`) or narrowed (`also`: `versions`, `commit`)."""
from __future__ import annotations

import hashlib
import json

from report.history.index import Entry

PARTS = ("design", "load", "service", "machine_kind", "cores", "knobs")
NARROWERS = ("versions", "commit")


def parts(entry: Entry, ignore: frozenset[str] = frozenset(), also: frozenset[str] = frozenset()) -> dict:
    """The fingerprint's parts of one entry, without what `ignore` names and with what `also` adds."""
    fp = {"design": entry.design, "load": dict(entry.load), "service": entry.service,
          "machine_kind": dict(entry.machine_kind), "cores": entry.cores,
          "knobs": {side: {k: v for k, v in knobs.items() if k not in ignore} for side, knobs in entry.knobs.items()}}
    if "versions" in also:
        fp["versions"] = entry.versions
    if "commit" in also:
        fp["commit"] = entry.commit
    for name in ignore:
        part, _, key = name.partition(".")
        if part in fp and not key:
            del fp[part]
        elif part in fp and isinstance(fp[part], dict):
            fp[part].pop(key, None)
    return fp


def key(fp: dict) -> str:
    """A short name of a fingerprint (its parts' hash)."""
    return hashlib.sha256(json.dumps(fp, sort_keys=True, default=str).encode()).hexdigest()[:10]


def check_names(ignore: frozenset[str], also: frozenset[str], known_knobs: set[str]) -> list[str]:
    """What --ignore and --also name that is neither a part, a part's key, a narrower nor a knob: each with why."""
    bad = [f"--also {n}: expected one of {', '.join(NARROWERS)}" for n in sorted(also - set(NARROWERS))]
    for name in sorted(ignore):
        part = name.partition(".")[0]
        if part not in PARTS and name not in known_knobs:
            bad.append(f"--ignore {name}: neither a knob of these runs nor a fingerprint part ({', '.join(PARTS)}, "
                       "or part.key such as load.users)")
    return bad


def differences(before: Entry, after: Entry) -> list[str]:
    """What changed from one run to the next: commit, each configuration's knobs and versions, the machines, the
    load, the service (a change point is listed with these)."""
    out = []
    if before.commit != after.commit:
        out.append(f"commit {before.commit[:10] or '?'} → {after.commit[:10] or '?'}")
    for what in ("knobs", "versions"):
        a, b = getattr(before, what), getattr(after, what)
        for side in sorted(set(a) | set(b)):
            x, y = a.get(side, {}), b.get(side, {})
            for name in sorted(set(x) | set(y)):
                if x.get(name) != y.get(name):
                    out.append(f"{side}: {name} {_short(x.get(name))} → {_short(y.get(name))}")
    for what in ("machine_kind", "load"):
        a, b = getattr(before, what), getattr(after, what)
        out += [f"{what}.{k} {_short(a.get(k))} → {_short(b.get(k))}" for k in sorted(set(a) | set(b))
                if a.get(k) != b.get(k)]
    if before.service != after.service:
        out.append(f"service {before.service} → {after.service}")
    return out


def _short(value) -> str:
    text = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else str(value)
    return text if len(text) <= 40 else text[:37] + "…"
