"""Data integrity: gaps in the PCP samples, metrics and logs the manifest named but that did not come back,
unreadable rows; checked, not assumed."""
import json

from report.read import integrity
from report.read.pcp import read_metrics
from report.render.integrity import machine_lines
from report.stats.figures import Window
from report.stats.machine import Machine

T0 = 1_800_000_000.0


def metrics_csv(path, rows):
    path.write_text("time,metric,instance,value\n" + "".join(f"{T0 + t},{m},{i},{v}\n" for t, m, i, v in rows))
    return read_metrics(path)


def machine_dir(tmp_path, manifest=None, knobs=None, logs=()):
    for folder in ("config", "logs", "pcp"):
        (tmp_path / folder).mkdir(exist_ok=True)
    if manifest is not None:
        (tmp_path / "config" / "manifest.json").write_text(json.dumps(manifest))
    if knobs is not None:
        (tmp_path / "config" / "knobs.json").write_text(json.dumps(knobs))
    for name in logs:
        (tmp_path / "logs" / name).write_text("a line\n")
    return tmp_path


def test_a_stretch_without_any_sample_is_a_gap(tmp_path):
    seconds = [*range(0, 60), *range(100, 160)]            # pmlogger restarted: 40 s without a record
    m = metrics_csv(tmp_path / "m.csv", [(t, "kernel.all.load", "1 minute", 1.0) for t in seconds]
                    + [(t, "openmetrics.app.x", "", 1.0) for t in range(0, 160, 10)])
    assert integrity.sample_gaps(m, 1.0) == [(T0 + 59, 41.0)]
    assert integrity.sample_gaps(m, 20.0) == []             # at a 20 s interval, 41 s is not 3 intervals


def test_one_agent_without_values_is_named(tmp_path):
    rows = [(t, "kernel.all.load", "1 minute", 1.0) for t in range(120)]
    rows += [(t, "hotproc.psinfo.rss", "000123 java", 5.0) for t in range(120) if not 30 <= t < 70]
    m = metrics_csv(tmp_path / "m.csv", rows)
    assert integrity.sample_gaps(m, 1.0) == []
    assert integrity.metric_gaps(m, 1.0) == {"hotproc.psinfo.rss": [(T0 + 29, 41.0)]}


def test_the_sampling_interval_is_the_machines_own(tmp_path):
    # nothing says it: unknown, not a default of the report's own (the knob catalog's is the run's snapshot)
    assert integrity.sampling_interval(machine_dir(tmp_path)) is None
    assert integrity.sampling_interval(machine_dir(tmp_path, knobs={"pcp_interval_s": 5})) == 5.0
    assert integrity.sampling_interval(machine_dir(tmp_path, manifest={"pcp": {"interval_s": 2}})) == 2.0


def test_the_sampling_interval_falls_back_on_the_runs_catalog_snapshot(tmp_path):
    (tmp_path / "knobs-catalog.json").write_text(json.dumps({"source": "ansible/knobs.yml",
                                                             "defaults": {"pcp_interval_s": 7}}))
    mdir = tmp_path / "default"
    mdir.mkdir()
    assert integrity.sampling_interval(machine_dir(mdir)) == 7.0
    assert integrity.sampling_interval(machine_dir(mdir, knobs={"pcp_interval_s": 3})) == 3.0


def test_without_any_interval_said_the_samples_tell_it(tmp_path):
    m = metrics_csv(tmp_path / "m.csv", [(t, "kernel.all.load", "1 minute", 1.0) for t in range(0, 60, 2)])
    assert integrity.measured_interval(m) == 2.0


MANIFEST = {"logs": {"app.log": "/x/app.log", "audit.log": "/x/audit.log", "gc.log": "/x/gc.log"},
            "journals": {"mock.log": "mock-service"}, "pcp": {"metrics": ["kernel.all.load", "mem.util.used"]}}


def test_logs_the_manifest_named_must_be_there(tmp_path):
    mdir = machine_dir(tmp_path, MANIFEST, knobs={"jvm_gc_log": False}, logs=("app.log", "audit.log.gz"))
    assert integrity.missing_logs(mdir) == ["mock.log"]            # gzipped counts; no GC log asked for
    (mdir / "config" / "knobs.json").write_text(json.dumps({"jvm_gc_log": True}))
    assert integrity.missing_logs(mdir) == ["gc.log", "mock.log"]


def test_metrics_the_manifest_named_must_have_values(tmp_path):
    mdir = machine_dir(tmp_path, MANIFEST)
    m = metrics_csv(tmp_path / "m.csv", [(t, "kernel.all.load", "1 minute", 1.0) for t in range(5)])
    assert integrity.missing_metrics(mdir, m) == ["mem.util.used"]
    assert integrity.missing_metrics(mdir, None) == ["kernel.all.load", "mem.util.used"]


PMLOGGER_CONFIG = """log mandatory on every 5 second {
\tkernel.all.load
\tmem.util
}
log mandatory on every 30 second {
\thotproc.psinfo.rss
}
log mandatory on every 20 second {
\topenmetrics.app
}
"""


def absent_line(tmp_path, seconds, present, named):
    mdir = machine_dir(tmp_path, {"pcp": {"metrics": named}})
    (mdir / "config" / "pmlogger.config").write_text(PMLOGGER_CONFIG)
    m = metrics_csv(tmp_path / "m.csv", [(t, name, "", 1.0) for t in seconds for name in present])
    lines = machine_lines(Machine("tuned", metrics=m, window=Window(T0, 0.0, T0 + seconds[-1])), mdir)
    return next(line for line in lines if line.startswith("- metrics the manifest names"))


def test_a_run_too_short_for_a_group_says_it_was_not_sampled_yet_not_missing(tmp_path):
    """A 10 s run exports two 5 s rows: groups logged every 20 and 30 s have no values, and that is the run's
    length, not a lost metric; a 5 s metric without values is still missing, in bold."""
    named = ["kernel.all.load", "mem.util.used", "hotproc.psinfo.rss", "openmetrics.app.jvm_x", "openmetrics.app.y"]
    line = absent_line(tmp_path, [0, 5], ["kernel.all.load"], named)
    assert line == ("- metrics the manifest names: **no values for mem.util.used**; 3 logged every 20–30 s, longer "
                    "than this run's PCP values span (5 s), have none yet: hotproc.psinfo.rss, openmetrics.app.jvm_x, "
                    "openmetrics.app.y")
    line = absent_line(tmp_path, [0, 5], ["kernel.all.load", "mem.util.used"], named[:2] + ["openmetrics.app.y"])
    assert line.endswith("none missing; 1 logged every 20 s, longer than this run's PCP values span (5 s), have "
                         "none yet: openmetrics.app.y")


def test_a_run_long_enough_for_every_group_calls_each_absent_metric_missing(tmp_path):
    named = ["kernel.all.load", "hotproc.psinfo.rss", "openmetrics.app.y"]
    line = absent_line(tmp_path, list(range(0, 65, 5)), ["kernel.all.load"], named)
    assert line == "- metrics the manifest names: **no values for hotproc.psinfo.rss, openmetrics.app.y**"
    # no values at all (metrics.csv lost): every metric is missing, none merely not sampled yet
    line = absent_line(tmp_path, [0], [], named)
    assert line == f"- metrics the manifest names: **no values for {', '.join(named)}**"
    # a folder without pmlogger's configuration: nothing is known to be logged less often
    (tmp_path / "config" / "pmlogger.config").unlink()
    m = metrics_csv(tmp_path / "m.csv", [(t, "kernel.all.load", "", 1.0) for t in (0, 5)])
    assert integrity.too_short_for(tmp_path, ["openmetrics.app.y"], m) == ({}, 5.0)


def test_a_folder_from_before_the_manifest_says_what_it_did_not_check(tmp_path):
    mdir = machine_dir(tmp_path)
    m = metrics_csv(tmp_path / "m.csv", [(t, "kernel.all.load", "1 minute", 1.0) for t in range(10)])
    lines = machine_lines(Machine("default", metrics=m, window=Window(T0, 0.0, T0 + 10)), mdir)
    assert integrity.missing_logs(mdir) is None and integrity.missing_metrics(mdir, m) is None
    assert lines == ["- jmeter.jtl: **absent or unreadable**", "- PCP samples every 1 s: no gap longer than 3 s",
                     "- no config/manifest.json (a run from before it): metrics and logs not checked against it"]


def test_every_finding_is_said_with_where_it_happened(tmp_path):
    mdir = machine_dir(tmp_path, MANIFEST, logs=("app.log", "audit.log", "mock.log"))
    seconds = [*range(0, 60), *range(100, 160)]
    m = metrics_csv(tmp_path / "m.csv", [(t, "kernel.all.load", "1 minute", 1.0) for t in seconds]
                    + [(t, "mem.util.used", "", "bad") for t in range(3)])
    text = "\n".join(machine_lines(Machine("tuned", metrics=m, window=Window(T0, 0.0, T0 + 160)), mdir))
    assert "**1 gap(s) longer than 3 s** at +59 s (41 s)" in text
    assert "**3 unreadable rows** in metrics.csv" in text
    assert "**no values for mem.util.used**" in text
    assert "logs the manifest names: all collected; gc.log not checked: jvm_gc_log unknown" in text


def test_metrics_with_the_same_hole_are_said_once_with_where(tmp_path):
    """One agent dropped by pmcd: its metrics lack the same stretch, said once, with where (not one per metric)."""
    mdir = machine_dir(tmp_path, MANIFEST)
    linux = [f"kernel.all.cpu.{k}" for k in ("idle", "sys", "user", "wait.total", "steal", "nice", "intr")]
    rows = [(t, "hotproc.psinfo.rss", "000123 java", 5.0) for t in range(120)]
    rows += [(t, name, "", 1.0) for name in linux for t in range(120) if not 30 <= t < 70]
    rows += [(t, "apache.busy_servers", "", 1.0) for t in range(120) if not 80 <= t < 90]
    m = metrics_csv(tmp_path / "m.csv", rows)
    text = "\n".join(machine_lines(Machine("default", metrics=m, window=Window(T0, 0.0, T0 + 120)), mdir))
    line = next(x for x in text.splitlines() if "gaps of their own" in x)
    assert line == ("- **metrics with gaps of their own**: kernel.all.cpu.idle, kernel.all.cpu.intr, "
                    "kernel.all.cpu.nice, kernel.all.cpu.steal, kernel.all.cpu.sys, kernel.all.cpu.user and 1 more "
                    "at +29 s (41 s); apache.busy_servers at +79 s (11 s)"), line


def test_the_report_has_the_section(fixture_report):
    _, summary = fixture_report
    section = summary.split("## Data integrity")[1].split("\n## ")[0]
    assert section.count("no gap longer than 3 s") == 2 and "samples read, no unreadable row" in section


def test_the_files_a_machine_should_hold_come_from_its_manifest_and_knobs(tmp_path):
    mdir = machine_dir(tmp_path, MANIFEST, knobs={"jvm_gc_log": False}, logs=("app.log", "audit.log.gz", "mock.log"))
    assert integrity.missing_files(mdir) == ["jmeter.jtl", "pcp/metrics.csv", "logs/journal.txt"]
    assert integrity.not_written(mdir) == {"gc.log": "not written: jvm_gc_log is false"}
    (mdir / "config" / "knobs.json").write_text(json.dumps({"jvm_gc_log": True}))
    assert "logs/gc.log" in integrity.missing_files(mdir) and integrity.not_written(mdir) == {}
    (mdir / "config" / "knobs.json").unlink()      # nothing says what the machine was given: not claimed missing
    assert "logs/gc.log" not in integrity.missing_files(mdir)
    assert integrity.not_written(mdir) == {"gc.log": "not checked: jvm_gc_log unknown"}


def test_a_folder_from_before_the_manifest_is_held_to_the_old_list_less_what_its_knobs_turned_off(run_copy):
    (run_copy / "default" / "logs" / "gc.log").unlink()
    # the fixture's knobs come from its run.json and its catalog snapshot: jvm_gc_log false
    assert integrity.missing_files(run_copy / "default") == ["logs/journal.txt"]
    (run_copy / "default" / "config" / "knobs.json").write_text(json.dumps({"jvm_gc_log": True}))
    assert integrity.missing_files(run_copy / "default") == ["logs/gc.log", "logs/journal.txt"]
