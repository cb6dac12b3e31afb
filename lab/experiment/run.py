"""The full run (`./start.sh` with no command): up if needed → build and provision → restart both machines'
services together (equal start) → check that each machine answers → the same load on both at once →
collect → JMeter dashboards → report. `--repeat N` runs N such trials, the machines' roles swapped on every
second one (lab/experiment/design.py), and writes a combined report over them; `--aa` gives both machines one
configuration (an A/A calibration).

Everything lands in results/<UTC timestamp>[-label]/ and run.json is rewritten after every phase, so an
interrupted or failed run still leaves what it gathered and says where it stopped. Ctrl-C during the load
stops JMeter, then collection and the report still run (exit 130 afterwards). The machines stay up for
the next try unless --down.
"""
from __future__ import annotations

import sys
from pathlib import Path

import runfolder
from lab import lock, paths, steps
from lab.experiment import disk, record, reporting, service
from lab.experiment.options import Options
from lab.experiment.trial import run_trial
from lab.machines import lifecycle, settings
from lab.provision import hosts_down, playbook


def validate(opts: Options, s: settings.Settings) -> None:
    """Every knob of every trial's machines checked (ansible/validate.yml, on this host) before anything is
    built, booted or changed; ValueError naming each bad value. Real hosts are checked first (opts.reached):
    their memory is what the knobs must fit."""
    generators = len((opts.reached or {}).get("loadgens") or {})
    if generators:      # each remote engine runs the whole plan with its share (engines.py): refused now, not
        opts.profile.per_engine(generators)     # after provisioning, the equal start and the engines' start
    known = opts.reached or {"machines": s.machines, "management_network": s.management_network,
                             "memory_mb": s.memory_mb}
    checked = []
    for t in opts.trials():
        overrides = t.overrides(opts.service)
        if overrides not in checked:        # a series repeats at most two designs (roles swapped or not)
            checked.append(overrides)
            playbook.validate(known, overrides, load_id_max=opts.profile.id_max, insist_memory=opts.insist_memory,
                              service_vars=service.ansible_vars(opts.service, overrides))


def execute(opts: Options, s: settings.Settings, log=steps.note) -> int:
    """The whole run, one trial or a series, on the lab made with settings s (brought up when it is not);
    returns the exit code (0, 1 failed, 130 interrupted). The knobs are validated before (validate())."""
    if opts.repeat == 1:
        exit_code, folder = run_trial(opts, opts.trials(repeat=1)[0], s, opts.label, log)
    else:
        exit_code, folder = run_series(opts, s, log)
    take_down(opts, log)
    return reporting.judge_gates(folder, opts.gates, exit_code)


def take_down(opts: Options, log=steps.note) -> None:
    """--down: the VMs destroyed; real hosts (--hosts) keep everything but lose the lab's firewall table and HTTPD
    (hosts_down.down), as `./start.sh down --hosts` does."""
    if not opts.down:
        return
    if opts.hosts is None:
        lifecycle.down()
        return
    with steps.step(f"the lab off the hosts of {opts.hosts} (its firewall table, HTTPD)"):
        hosts_down.down(opts.hosts, log)


def run_series(opts: Options, s: settings.Settings, log=steps.note) -> tuple[int, Path]:
    """--repeat N: N trials (each its own run folder), then the combined report in the series folder (returned
    with the exit code). An interrupted or failed trial ends the series; the trials done so far are still
    combined."""
    series_dir = record.make_run_dir(f"{opts.label}-series" if opts.label else "series", paths.RESULTS)
    series_id = series_dir.name
    lock.note(series_id)
    trials = opts.trials(series_id)
    print(f"series {series_id}: {opts.repeat} trials, the machines' roles swapped on every second one; "
          f"combined report in {series_dir}", flush=True)
    done, exit_code = [], 0
    for t in trials:
        print(f"\n==== trial {t.number} of {t.of}" + (" (roles swapped)" if t.swapped else ""), flush=True)
        label = f"{opts.label}-t{t.number}" if opts.label else f"t{t.number}"
        exit_code, run_dir = run_trial(opts, t, s, label, log)
        done.append(run_dir)
        if exit_code != 0:
            print(f"start.sh: trial {t.number} did not complete; the series stops here", file=sys.stderr)
            break
    with steps.step(f"combined report over {len(done)} trial(s)"):
        reporting.report_command("combine", series_dir, *done, log=log, what="combined report")
    reporting.print_outcome(series_dir)
    if not disk.low(series_dir):            # on a full disk nothing more is written
        reporting.index_add(series_dir)
    return exit_code, series_dir


def trials_of(series: Path) -> list[Path]:
    """A series' trial folders: those beside it whose run.json names it (design.series), in the order they ran (a
    series whose combined report failed still has them)."""
    return [r.parent for r in sorted(series.parent.glob("*/run.json"))
            if ((runfolder.read_json(r) or {}).get("design") or {}).get("series") == series.name]


def combine_series(label: str, series: list[Path], log=steps.note) -> Path:
    """Several series of one question as one (a tune's later looks at its confirmation): every series' trials,
    combined into a new folder results/<stamp>-<label>/ (returned)."""
    folder = record.make_run_dir(label, paths.RESULTS)
    trials = [t for s in series for t in trials_of(s)]
    with steps.step(f"combined report over {len(trials)} trial(s) of {len(series)} series"):
        reporting.report_command("combine", folder, *trials, log=log, what="combined report")
    reporting.print_outcome(folder)
    if not disk.low(folder):
        reporting.index_add(folder)
    return folder
