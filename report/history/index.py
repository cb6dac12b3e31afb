"""The index of runs: one row per run, series, sweep and tune folder of results/, read from the folders (run.json,
verdict.json, sweep.json), kept in a SQLite file (results/.index/index.sqlite). The folders stay the truth: the index is
rebuilt from them at any time (`rebuild`), or brought up to date one folder at a time (`add`, at the end of a run);
both give the same rows. A folder that cannot be read is named and skipped, never fatal.

Several commands may write it at once (a run's end adds its folder while `runs` or `history` rebuild it): each
writer holds the index's lock, a file beside it (`.index.sqlite.lock`, flock: released when its process ends), and
a rebuild writes a file of its own name and moves it over the index, so a reader opens the old index or the new
one, each whole. A user who may not write results/ gets NotWritten, which the commands turn into a message.
"""
from __future__ import annotations

import fcntl
import json
import math
import os
import sqlite3
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path

# What a verdict's figure holds in the index: its kind (ratio or difference), the estimate and its interval, and
# each side's own level (a run's; a series' combined verdict has none).
FIGURE_KEYS = ("kind", "estimate", "low", "high", "default", "tuned")
# Of run.json's load, the profile the run was asked for (lab/experiment/load/profile.py Profile, with the scheme and
# the warm-up), not what it did (samples, times, JMeter's command and files): lab/tests checks it covers Profile.
PROFILE_KEYS = ("name", "model", "users", "ramp_up_s", "duration_s", "rate_per_s", "keep_alive", "step_rates",
                "step_s", "p99_target_ms", "connect_timeout_ms", "response_timeout_ms", "mix", "id_min", "id_max",
                "customers_path", "scheme", "warmup_s")
SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (id TEXT PRIMARY KEY, kind TEXT, label TEXT, status TEXT, started TEXT,
    design TEXT, configurations TEXT, load TEXT, cores TEXT, service TEXT, machine_kind TEXT, commit_id TEXT,
    knobs TEXT, versions TEXT, members TEXT);
CREATE TABLE IF NOT EXISTS figures (run_id TEXT, figure TEXT, kind TEXT, estimate REAL, low REAL, high REAL,
    default_level REAL, tuned_level REAL, PRIMARY KEY (run_id, figure));
"""


@dataclass(frozen=True)
class Entry:
    """One folder as the index holds it."""
    id: str
    kind: str                       # run, series, sweep, tune
    label: str
    status: str
    started: str                    # ISO time (UTC), '' when unknown
    design: str                     # ab, aa, aa-series, ab-series, sweep, ablation, …
    configurations: dict = field(default_factory=dict)    # side -> configuration name
    load: dict = field(default_factory=dict)
    cores: str = ""                 # swap or fixed (the twins' host cores)
    service: str = "sample"         # the descriptor's name, or the lab's sample app
    machine_kind: dict = field(default_factory=dict)      # provider, accelerator, memory, host CPUs
    commit: str = ""
    knobs: dict = field(default_factory=dict)             # side -> {knob: value}
    versions: dict = field(default_factory=dict)          # side -> {component: version}
    members: list = field(default_factory=list)           # a series' trials, a sweep's points
    figures: dict = field(default_factory=dict)           # figure -> {kind, estimate, low, high, default, tuned}


class Unreadable(Exception):
    """A folder the index skips, and why."""


class NotWritten(Exception):
    """The index could not be written (results/ is another user's, a read-only or full disk, another writer that
    never lets go); str(): the file and why. The index is as it was."""


LOCK_WAIT_S = 120.0         # a rebuild of hundreds of folders takes seconds: longer is a writer that hangs
BUSY_TIMEOUT_S = 30.0       # how long a reader waits for an add's commit (SQLite's own lock)


def _json(path: Path) -> dict:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as e:
        raise Unreadable(f"{path.name}: {e}") from None
    if not isinstance(data, dict):
        raise Unreadable(f"{path.name}: not a JSON object")
    return data


VOLATILE = ("uptime_s",)     # of a machine's versions, what differs from run to run without changing anything


def as_change(figure: dict) -> tuple[float, float, float, str]:
    """A verdict figure's (estimate, low, high) as a change and its unit: a ratio in % (1.42 → +42), a difference
    as it is, in points; NaN for what it lacks."""
    values = [math.nan if figure.get(k) is None else float(figure[k]) for k in ("estimate", "low", "high")]
    if figure.get("kind") == "ratio":
        return (*(100 * (v - 1) for v in values), "%")
    return (*values, "pt")


def profile(load: dict) -> dict:
    return {k: load[k] for k in PROFILE_KEYS if k in load}


def _figures(verdict: dict) -> dict:
    out = {}
    for name, effect in (verdict.get("effects") or {}).items():
        if isinstance(effect, dict) and effect.get("estimate") is not None:
            out[name] = {k: effect.get(k) for k in FIGURE_KEYS}
    return out


def read_folder(folder: Path) -> Entry | None:
    """The folder's entry; None for a folder that is no run, series, sweep or tune (a compare, a stray folder);
    Unreadable when it is one but cannot be read."""
    if (folder / "run.json").is_file():
        return _run(folder)
    if (folder / "sweep.json").is_file():
        return _sweep(folder)
    if (folder / "tune.json").is_file():
        return _tune(folder)
    if folder.name.endswith("-series") and (folder / "verdict.json").is_file():
        return _series(folder)
    return None


def _run(folder: Path) -> Entry:
    run = _json(folder / "run.json")
    verdict = _json(folder / "verdict.json") if (folder / "verdict.json").is_file() else {}
    design = run.get("design") or {}
    machines = run.get("machines") or {}
    service = (run.get("service") or {}).get("name") or "sample"
    return Entry(
        id=folder.name, kind="run", label=run.get("label") or "", status=run.get("status") or "",
        started=run.get("started") or "", design=design.get("kind") or "ab",
        configurations=design.get("configurations") or {}, load=profile(run.get("load") or {}),
        cores=(run.get("core_swap") or {}).get("mode") or "", service=service,
        machine_kind={"provider": run.get("provider"), "accelerator": run.get("accelerator"),
                      "memory_mb": run.get("machine_memory_mb"), "host_cpus": (run.get("host") or {}).get("cpus")},
        commit=run.get("git_commit") or "",
        knobs={side: m.get("knobs") or {} for side, m in machines.items() if isinstance(m, dict)},
        versions={side: {k: v for k, v in (m.get("versions") or {}).items() if k not in VOLATILE}
                  for side, m in machines.items() if isinstance(m, dict)},
        members=[], figures=_figures(verdict))


def _series(folder: Path) -> Entry:
    verdict = _json(folder / "verdict.json")
    trials = [t if isinstance(t, str) else (t or {}).get("run_id", "") for t in verdict.get("trials") or []]
    return Entry(id=folder.name, kind="series", label=folder.name.split("-", 1)[-1], status="complete",
                 started=_stamp_time(folder.name), design=(verdict.get("design") or {}).get("kind") or "series",
                 members=[t for t in trials if t], figures=_figures(verdict))


def _sweep(folder: Path) -> Entry:
    sweep = _json(folder / "sweep.json")
    points = [Path(p.get("run_dir") or "").name for p in sweep.get("points") or [] if isinstance(p, dict)]
    return Entry(id=folder.name, kind="sweep", label=folder.name.split("-", 1)[-1], status=sweep.get("status") or "",
                 started=sweep.get("started") or _stamp_time(folder.name), design=sweep.get("kind") or "sweep",
                 load=profile(sweep.get("load") or {}), service=(sweep.get("service") or {}).get("name") or "sample",
                 members=[str(p) for p in points if p])


def _tune(folder: Path) -> Entry:
    tune = _json(folder / "tune.json")
    return Entry(id=folder.name, kind="tune", label=folder.name.split("-", 1)[-1], status=tune.get("status") or "",
                 started=tune.get("started") or _stamp_time(folder.name), design="tune", load=tune.get("load") or {},
                 members=[str(t) for t in tune.get("trials") or [] if isinstance(t, str)])


def _stamp_time(name: str) -> str:
    """20261128T020200Z-… → 2026-11-28T02:02:00Z (the folder's stamp), '' when it has none."""
    stamp = name.split("-", 1)[0]
    if len(stamp) == 16 and stamp[8] == "T" and stamp.endswith("Z"):
        return f"{stamp[:4]}-{stamp[4:6]}-{stamp[6:8]}T{stamp[9:11]}:{stamp[11:13]}:{stamp[13:15]}Z"
    return ""


def scan(results: Path) -> tuple[list[Entry], dict[str, str]]:
    """Every folder of results/ as an entry, oldest first, and the folders skipped with why."""
    entries, skipped = [], {}
    # a hidden folder is none of the runs' (.index: the index's own)
    for folder in sorted(p for p in results.iterdir() if p.is_dir() and not p.name.startswith(".")) \
            if results.is_dir() else []:
        try:
            entry = read_folder(folder)
        except Unreadable as why:
            skipped[folder.name] = str(why)
            continue
        if entry is not None:
            entries.append(entry)
    return sorted(entries, key=lambda e: (e.started, e.id)), skipped


def _connect(db: Path | str) -> sqlite3.Connection:
    con = sqlite3.connect(db, timeout=BUSY_TIMEOUT_S)
    con.executescript(SCHEMA)
    return con


def _put(con: sqlite3.Connection, e: Entry) -> None:
    con.execute("DELETE FROM figures WHERE run_id = ?", (e.id,))
    con.execute("INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                (e.id, e.kind, e.label, e.status, e.started, e.design, json.dumps(e.configurations, sort_keys=True),
                 json.dumps(e.load, sort_keys=True), e.cores, e.service, json.dumps(e.machine_kind, sort_keys=True),
                 e.commit, json.dumps(e.knobs, sort_keys=True), json.dumps(e.versions, sort_keys=True),
                 json.dumps(e.members)))
    for name, f in e.figures.items():
        con.execute("INSERT INTO figures VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (e.id, name, f["kind"], f["estimate"], f["low"], f["high"], f["default"], f["tuned"]))


def _fill(con: sqlite3.Connection, entries: Iterable[Entry]) -> None:
    """The entries written in one transaction: all of them or none."""
    with con:
        for e in entries:
            _put(con, e)


def _write(db: Path, entries: Iterable[Entry]) -> None:
    """The entries into the SQLite file db (made with its tables when missing), in one transaction."""
    con = _connect(db)
    try:
        _fill(con, entries)
    finally:
        con.close()


def _lock_path(db: Path) -> Path:
    return db.with_name(f".{db.name}.lock")


def _wait_for_lock(fd: int, db: Path) -> None:
    deadline = time.monotonic() + LOCK_WAIT_S
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError:
            if time.monotonic() > deadline:
                raise NotWritten(f"{db} is still being written by another process after {LOCK_WAIT_S:.0f} s "
                                 f"(its lock: {_lock_path(db)})") from None
            time.sleep(0.05)


@contextmanager
def _not_written(db: Path) -> Iterator[None]:
    """What the system says when the index cannot be written (EACCES, EROFS, a full disk), as NotWritten."""
    try:
        yield
    except (OSError, sqlite3.Error) as e:
        raise NotWritten(f"cannot write {db}: {getattr(e, 'strerror', None) or e}") from e


@contextmanager
def _locked(db: Path) -> Iterator[None]:
    """The index's lock held: one writer at a time, across processes and threads (each open of the lock file
    holds its own flock; the system releases it when its process ends)."""
    with _not_written(db):
        db.parent.mkdir(exist_ok=True)
        fd = os.open(_lock_path(db), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        _wait_for_lock(fd, db)
        yield
    finally:
        os.close(fd)


def _replace(db: Path, entries: list[Entry]) -> None:
    """The entries into a file of this writer's own name beside db, then moved over db (atomic: a reader that
    opens db finds the whole old index or the whole new one). Under the lock: any other such file is a killed
    writer's."""
    for stale in db.parent.glob(f".{db.name}.*.new"):
        stale.unlink(missing_ok=True)
    work = db.with_name(f".{db.name}.{uuid.uuid4().hex}.new")
    try:
        _write(work, entries)
        # an add cut short leaves its rollback journal for the old file: SQLite would play it into the new one
        db.with_name(f"{db.name}-journal").unlink(missing_ok=True)
        work.replace(db)
    finally:
        work.unlink(missing_ok=True)


def rebuild(results: Path, db: Path) -> dict[str, str]:
    """The index made anew from every folder, under the lock (the folders read after any writer before it, so the
    last one leaves what they hold); the folders skipped, with why. NotWritten when it cannot be written."""
    with _locked(db):
        entries, skipped = scan(results)
        with _not_written(db):
            _replace(db, entries)
    return skipped


def add(db: Path, folder: Path) -> Entry | None:
    """One folder into the index (a finished run, series, sweep or tune); None when it is none of those.
    NotWritten when the index cannot be written."""
    entry = read_folder(folder)
    if entry is not None:
        with _locked(db), _not_written(db):
            _write(db, [entry])
    return entry


def in_memory(results: Path) -> tuple[list[Entry], dict[str, str]]:
    """What a rebuild and load would give, for a user who may not write the index: the folders through an index
    in memory (the same rows, the same types), and the folders skipped."""
    entries, skipped = scan(results)
    con = _connect(":memory:")
    try:
        _fill(con, entries)
        return _entries(con), skipped
    finally:
        con.close()


def _entries(con: sqlite3.Connection) -> list[Entry]:
    figures: dict[str, dict] = {}
    for row in con.execute("SELECT run_id, figure, kind, estimate, low, high, default_level, tuned_level "
                           "FROM figures"):
        figures.setdefault(row[0], {})[row[1]] = dict(zip(FIGURE_KEYS, row[2:], strict=True))
    entries = [Entry(id=r[0], kind=r[1], label=r[2], status=r[3], started=r[4], design=r[5],
                     configurations=json.loads(r[6]), load=json.loads(r[7]), cores=r[8], service=r[9],
                     machine_kind=json.loads(r[10]), commit=r[11], knobs=json.loads(r[12]),
                     versions=json.loads(r[13]), members=json.loads(r[14]), figures=figures.get(r[0], {}))
               for r in con.execute("SELECT * FROM runs")]
    return sorted(entries, key=lambda e: (e.started, e.id))


def load(db: Path) -> list[Entry]:
    """The index's entries, oldest first. Opened read-only: a reader creates nothing (no empty index where there
    was none) and needs no right to write."""
    con = sqlite3.connect(f"{db.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
    try:
        return _entries(con)
    finally:
        con.close()


def as_dicts(entries: Iterable[Entry]) -> list[dict]:
    return [asdict(e) for e in entries]
