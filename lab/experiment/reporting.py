"""The reports of run folders: the report package (python -m report run|compare|combine|sweep) started from
the project root, and a report's outcome on the terminal (the verdict, the results table, where it is)."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from lab import confine, machines, paths, unprivileged
from lab.errors import BadInput
from runfolder import gates as runfolder_gates
from runfolder import read_json
from runfolder import summary as summary_md
from runfolder import verdict as runfolder_verdict

# The folder each report command writes (the position of its argument): lent to the lab's user while it runs; runs and
# history rebuild the index in results/.index/ (report/commands/runs.py INDEX), lent the same way: results/ itself
# stays root's alone, so nothing the user made can stand in place of a run folder root later reads
WRITES = {"run": 0, "combine": 0, "sweep": 0, "tune": 0, "gate": 0, "compare": 0, "history": 1}
INDEXES = {"runs": 0, "history": 0}         # the results/ whose index they rebuild
INDEX_FOLDER = ".index"


def report_command(command: str, *args, log=None, what: str = "report", own_session: bool = False) -> int:
    """`python -m report COMMAND ARGS` (run, compare, combine, sweep) from the project root; its exit code.
    Without log its output goes to the terminal; with log it is kept, and a failure is logged as 'the WHAT
    failed: ' and the output's end. Where the lab is root the report runs as the lab's user (it reads text of the
    customer's: labels, messages, a plan's names), in the folder it writes, lent for the while. own_session: out of
    the terminal's reach (a Ctrl-C there is for whoever waits on this report)."""
    cmd = [sys.executable, "-m", "report", command, *map(str, args)]
    with _as_lab_user(command, [Path(a) for a in map(str, args)], cmd) as (argv, env):
        if log is None:
            return subprocess.run(argv, cwd=paths.ROOT, env=env).returncode
        done = subprocess.run(argv, cwd=paths.ROOT, capture_output=True, text=True, env=env,
                              start_new_session=own_session)
    if done.returncode != 0:
        log(f"the {what} failed: {(done.stdout + done.stderr).strip()[-800:]}")
    return done.returncode


@contextlib.contextmanager
def _as_lab_user(command: str, args: list[Path], cmd: list[str]) -> Iterator[tuple[list[str], dict | None]]:
    """(argv, env) of the report as the lab's user, with the folder it writes lent to it (made first when a new
    folder is asked for: compare's); as it is where the lab is not root."""
    account = unprivileged.ensure()
    if account is None:
        yield cmd, None
        return
    written, results = (args[table[command]] if table.get(command, len(args)) < len(args) else None
                        for table in (WRITES, INDEXES))
    with contextlib.ExitStack() as stack:
        if results is not None and results.is_dir() and _the_labs(results):
            _root_only(results, account)
            (results / INDEX_FOLDER).mkdir(exist_ok=True)
            stack.enter_context(account.lent(results / INDEX_FOLDER))
        if written is not None:
            if command == "compare":
                written.mkdir(parents=True, exist_ok=True)
            if written.is_dir():
                if not _the_labs(written) and any(written.iterdir()):
                    raise BadInput(f"{written}: as root the lab writes reports only in its results/ ({paths.RESULTS}) "
                                   f"or a new folder: the report runs as the lab's user {account.name}, and a folder "
                                   "of yours is not the lab's to lend it; copy it under results/, or run "
                                   f"`./start.sh {command}` as the folder's owner (it needs no root)")
                stack.enter_context(account.lent(written))
        # shown: the Python, the checkout, results/ (a sweep's, a series' and a tune's reports read their trials'
        # folders beside them) and the folders named
        yield account.command(cmd, [*confine.python(), paths.ROOT, paths.RESULTS, *args]), account.environment()


def _root_only(results: Path, account: unprivileged.Account) -> None:
    """results/ writable by root alone: labs before this shared it with the user's group for the index."""
    st = results.stat()
    if st.st_gid == account.gid or st.st_mode & 0o022:
        os.chown(results, -1, 0, follow_symlinks=False)
        results.chmod(st.st_mode & ~0o022)


def _the_labs(folder: Path) -> bool:
    """folder is results/ or in it: the lab's own, which it may lend its user (never a folder of the host's: lent,
    its entries could be renamed or replaced)."""
    return folder.resolve().is_relative_to(paths.RESULTS.resolve())


def report(run_dir: Path, warmup_s: int | str | None = None) -> int:
    """`./start.sh report`: (re)writes a run folder's report, the report's own words on the terminal."""
    if not (run_dir / "run.json").is_file() and not any((run_dir / m / "jmeter.jtl").is_file() for m in machines.NAMES):
        sides = " or ".join(f"{m}/jmeter.jtl" for m in machines.NAMES)      # /etc has a default/ of its own
        raise ValueError(f"{run_dir} is not a run folder (no run.json, no {sides})")
    return report_command("run", run_dir, *([] if warmup_s is None else ["--warmup", warmup_s]))


def index_add(folder: Path) -> None:
    """A finished run, series or sweep into results/index.sqlite (report/history/index.py; `./start.sh runs`
    rebuilds it from the folders anyway): a failure is said, never fatal."""
    report_command("runs", folder.parent, "--add", folder, log=lambda m: print(f"start.sh: {m}", file=sys.stderr),
                   what="run index")


def gate_args(gates: tuple[str, ...]) -> list[str]:
    return [a for g in gates for a in ("--gate", g)]


def check_gates(gates: tuple[str, ...]) -> None:
    """--gate's texts read before anything starts: ValueError naming a gate that cannot be read."""
    if not gates:
        return
    done = subprocess.run([sys.executable, "-m", "report", "gate", "--check", *gate_args(gates)], cwd=paths.ROOT,
                          capture_output=True, text=True)
    if done.returncode != 0:
        raise ValueError(done.stderr.strip().splitlines()[-1].removeprefix("python -m report: "))


def broken_gates(folder: Path, gates: tuple[str, ...]) -> list[str]:
    """The gates a run folder's verdict fails, each with what it read (`report gate` writes gates.xml, JUnit);
    a verdict the gates cannot judge fails them all, with why."""
    report_command("gate", folder, *gate_args(gates), log=lambda message: None)
    failed = runfolder_gates.failures(folder)
    return [f"{g}: not judged (no readable {runfolder_gates.FILE})" for g in gates] if failed is None else failed


def judge_gates(folder: Path, gates: tuple[str, ...], exit_code: int) -> int:
    """--gate on a finished run or series: the gates' outcome (report gate: gates.xml, summary.md); exit 3 when
    one fails, else the run's own exit code."""
    if not gates or exit_code != 0:
        return exit_code
    judged = report_command("gate", folder, *gate_args(gates))
    return judged if judged in (0, 3) else 1


def compare(run_dirs: list[Path], out: Path) -> int:
    """`./start.sh compare`: run folders side by side in a new folder `out`."""
    if len(run_dirs) < 2:
        raise ValueError("compare needs at least two run folders")
    for folder in run_dirs:
        if not (folder / "run.json").is_file():
            raise ValueError(f"{folder} is not a run folder (no run.json)")
    return report_command("compare", out, *run_dirs)


def _json(path: Path) -> dict:
    return read_json(path) or {}


def unfinished(folder: Path, record: dict) -> str:
    """'' for a run (or every trial of a series) that completed; else what the summary says on top, for the
    console: 'interrupted: stopped at phase load: Ctrl-C' (a series: the first trial that did not complete)."""
    runs = [(None, _json(folder / "run.json"))] if (folder / "run.json").exists() else [
        (name, _json(folder.parent / str(name) / "run.json")) for name in record.get("trials") or []
        if isinstance(record.get("trials"), list)]
    for trial, run in runs:
        status = run.get("status") or "unknown"
        if status != "complete":
            where = f"stopped at phase {run['stopped_at']}" if run.get("stopped_at") else ""
            if trial:
                where = f"trial {trial} {where or 'did not complete'}"
            said = ": ".join(str(x) for x in (where, run.get("error")) if x)
            return status + (f": {said}" if said else "")
    return ""


def print_outcome(folder: Path) -> None:
    """The verdict sentence, the results table, where the report is (what the README promises). A run that did
    not complete says so on the verdict's line, as its summary does on top: its figures cover only what was
    gathered."""
    verdict = folder / runfolder_verdict.FILE
    said = runfolder_verdict.read(folder)
    sentence = said.sentence if said else None
    summary = folder / summary_md.FILE
    if sentence:
        told = unfinished(folder, said.written)
        line = f"Verdict: {sentence}" + (f" ({told}; the figures cover only what was gathered)" if told else "")
    elif verdict.exists():
        line = f"No verdict: {verdict} cannot be read."
    else:
        line = "No verdict (the report was not written)."
    print("\n" + line + "\n", flush=True)
    if summary.exists():
        print(summary_md.results_table(summary.read_text()) + "\n", flush=True)
    if (folder / "report.html").exists():
        print(f"Report: {folder / 'report.html'}", flush=True)
