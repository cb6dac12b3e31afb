"""The report's load generators (report/stats/generators.py, report/render/generators.py) on the recorded fixture
run, made distributed: one generator busy enough to be saturated, one with no PCP data, and a run the controller
loaded itself."""
import csv
import json

from report.tests.conftest import run_report


def idle_times(folder):
    with open(folder / "default" / "pcp" / "metrics.csv", newline="") as f:
        return sorted({float(r["time"]) for r in csv.DictReader(f) if r["metric"] == "kernel.all.cpu.idle"})


def distribute(folder, busy_ms):
    """Two engines in run.json; gen1 recorded with `busy_ms` of 2000 ms of CPU per second busy, gen2 not."""
    data = json.loads((folder / "run.json").read_text())
    data["load"]["engines"] = [{"name": "gen1", "address": "10.0.0.21"}, {"name": "gen2", "address": "10.0.0.22"}]
    data["loadgen_problems"] = {"gen2": "not recorded: no pmlogger (PCP is not installed)"}
    (folder / "run.json").write_text(json.dumps(data))
    pcp = folder / "loadgen" / "gen1" / "pcp"
    pcp.mkdir(parents=True)
    with open(pcp / "metrics.csv", "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["time", "metric", "instance", "value"])
        for t in idle_times(folder):
            out.writerows([[t, "kernel.all.cpu.idle", "", 2000 - busy_ms],
                           [t, "kernel.all.cpu.user", "", busy_ms * 0.9],
                           [t, "kernel.all.cpu.sys", "", busy_ms * 0.1], [t, "hinv.ncpu", "", 2],
                           [t, "mem.util.available", "", 1024 * 700]])


def section(folder):
    done = run_report(folder)
    assert done.returncode == 0, done.stderr
    text = (folder / "summary.md").read_text()
    return text.split("## Load generators", 1)[1].split("\n## ", 1)[0] if "## Load generators" in text else None


def test_a_saturated_generator_and_one_without_data_are_said(run_copy):
    distribute(run_copy, busy_ms=1950)
    text = section(run_copy)
    assert "JMeter ran as 2 remote engine(s), each with 1/2 of the load" in text
    assert "| gen1 | 10.0.0.21 | 2 | 98 % | 98 % | 700 MB | **saturated** |" in text
    assert "| gen2 | 10.0.0.22 | — | — | — | — | not recorded: no pmlogger (PCP is not installed) |" in text
    assert "A load generator was saturated** (gen1)" in text


def test_a_generator_with_headroom_is_not_saturated(run_copy):
    distribute(run_copy, busy_ms=600)
    text = section(run_copy)
    assert "| gen1 | 10.0.0.21 | 2 | 30 % | 30 % | 700 MB | not saturated |" in text
    assert "was saturated" not in text


def test_a_run_loaded_by_the_controller_has_no_such_section(run_copy):
    assert section(run_copy) is None


def test_a_run_on_real_hosts_says_so_in_its_run_line(run_copy):
    data = json.loads((run_copy / "run.json").read_text())
    data.update(provider="hosts", inventory="my-hosts.yml")
    data.pop("accelerator", None)
    (run_copy / "run.json").write_text(json.dumps(data))
    assert run_report(run_copy).returncode == 0
    text = (run_copy / "summary.md").read_text()
    assert "real hosts from my-hosts.yml" in text and "hosts / ?" not in text
