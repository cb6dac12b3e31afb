"""Old, interrupted or damaged run folders: the report is still written and says what is missing."""
import json
import shutil
import subprocess
import sys

from .conftest import REPO, run_report


def summary_of(folder, *args):
    done = run_report(folder, *args)
    assert done.returncode == 0, done.stderr
    assert (folder / "report.html").stat().st_size > 0
    return (folder / "summary.md").read_text()


def test_interrupted_run_says_so_on_top_with_the_phase(run_copy):
    run = json.loads((run_copy / "run.json").read_text())
    run.update(status="interrupted", stopped_at="load", error="Ctrl-C after 95 s")
    (run_copy / "run.json").write_text(json.dumps(run))
    first = summary_of(run_copy).split("\n## ", 1)[0]
    assert "**Run interrupted** — stopped at phase `load`: Ctrl-C after 95 s" in first


def test_what_went_wrong_after_the_load_is_on_top(run_copy):
    """lab/run.py records a collection interrupted by Ctrl-C, a failed step, what a machine did not give."""
    run = json.loads((run_copy / "run.json").read_text())
    run.update(status="interrupted", stopped_at="collect",
               finish_errors={"collect": "interrupted (Ctrl-C)", "dashboards": "RuntimeError: out of memory"},
               collect_errors={"tuned": "ssh: connect to host 192.168.56.12 port 22: No route to host"},
               liveness={"default": {"probes": 90, "failed": 0, "dead_at": None, "back_at": None, "deaths": 0},
                         "tuned": {"probes": 90, "failed": 40, "dead_at": 1764000000.0, "back_at": None, "deaths": 1}})
    (run_copy / "run.json").write_text(json.dumps(run))
    first = summary_of(run_copy).split("\n## ", 1)[0]
    assert "**Run interrupted** — stopped at phase `collect`" in first
    assert "**After the load**: collect interrupted (Ctrl-C); dashboards RuntimeError: out of memory." in first
    assert "**Not collected from tuned**: ssh: connect to host 192.168.56.12 port 22: No route to host." in first
    assert ("**Machine tuned stopped answering during the load and never answered again**: no answer to the host's "
            "liveness probe from 16:00:00 UTC (40 of 90 probes failed).") in first and "Machine default" not in first


def test_a_machine_that_stopped_answering_and_came_back_is_not_called_dead(run_copy):
    run = json.loads((run_copy / "run.json").read_text())
    run["liveness"] = {"tuned": {"probes": 90, "failed": 5, "dead_at": 1764000000.0, "back_at": 1764000045.0,
                                 "deaths": 1},
                       "default": {"probes": 90, "failed": 9, "dead_at": 1764000300.0, "back_at": 1764000330.0,
                                   "deaths": 2}}
    (run_copy / "run.json").write_text(json.dumps(run))
    first = summary_of(run_copy).split("\n## ", 1)[0]
    assert ("**Machine tuned stopped answering for 45 s and came back**: no answer to the host's liveness probe "
            "from 16:00:00 UTC until 16:00:45 UTC (5 of 90 probes failed).") in first
    assert "**Machine default stopped answering for 30 s and came back** (2 outages; the last): " in first
    assert "died" not in first


def test_something_else_on_the_host_during_the_load_is_warned_on_top_naming_it(run_copy):
    """run.json host_outside (lab/experiment/host_watch.py): past its threshold, the top of the summary names the
    process and its share; below it, only the lab's own cost section mentions the host's other processes."""
    run = json.loads((run_copy / "run.json").read_text())
    heavy = {"seconds": 300.0, "host_cpus": 2, "outside_cpu_pct": 12.5, "kernel_cpu_pct": 1.2, "lab_cpu_pct": 84.0,
             "heaviest": [{"pid": 4242, "command": "gcc -O2 -c big.c", "cpu_pct": 11.9}], "warn": True,
             "threshold_pct": 2.0}
    run["host_outside"] = heavy
    (run_copy / "run.json").write_text(json.dumps(run))
    summary = summary_of(run_copy)
    first = summary.split("\n## ", 1)[0]
    assert ("**Something else ran on the host during the load**: processes outside the lab took 12.5 % of the "
            "host's CPU (the lab warns from 2.0 %): `gcc -O2 -c big.c` (pid 4242) 11.9 %.") in first
    assert "The host's other processes took 12.5 % of its CPU (2 cores) over 300 s of load" in summary
    run["host_outside"] = {**heavy, "outside_cpu_pct": 0.3, "warn": False,
                           "heaviest": [{"pid": 7, "command": "sshd: me", "cpu_pct": 0.3}]}
    (run_copy / "run.json").write_text(json.dumps(run))
    summary = summary_of(run_copy)
    assert "Something else ran" not in summary
    assert "The host's other processes took 0.3 % of its CPU" in summary and "`sshd: me` (pid 7) 0.3 %" in summary


def test_a_machine_folder_missing_entirely(run_copy):
    shutil.rmtree(run_copy / "tuned")
    summary = summary_of(run_copy)
    assert "tuned has no load results" in summary.splitlines()[2]
    assert "- tuned/ (the whole machine folder)" in summary
    assert "default stopped answering" in summary


def test_missing_metrics_and_jtl_files_are_named(run_copy):
    (run_copy / "tuned" / "pcp" / "metrics.csv").unlink()
    (run_copy / "default" / "jmeter.jtl").unlink()
    summary = summary_of(run_copy)
    assert "- tuned/pcp/metrics.csv" in summary and "- default/jmeter.jtl" in summary
    rows = {line.split("|")[1].strip(): line for line in summary.splitlines() if line.startswith("| max load")}
    assert "—" in rows["max load average (1 min)"].split("|")[3]  # tuned's column: not measured


def test_no_run_json_and_a_truncated_jtl(run_copy):
    (run_copy / "run.json").unlink()
    jtl = run_copy / "default" / "jmeter.jtl"
    jtl.write_bytes(jtl.read_bytes()[:-40])  # the last line cut in the middle, as a killed JMeter leaves it
    summary = summary_of(run_copy, "--warmup", "30")
    assert "**Run status unknown**: run.json is missing" in summary
    assert "default: jmeter.jtl: 1 unreadable rows skipped" in summary
    assert "run.json has no knob_diff" in summary


def test_unreadable_files_are_reported_not_fatal(run_copy):
    (run_copy / "run.json").write_text("{not json")
    (run_copy / "tuned" / "pcp" / "metrics.csv").write_text("something else\n1,2\n")
    summary = summary_of(run_copy)
    assert "run.json is not valid JSON" in summary
    assert "tuned: pcp/metrics.csv unreadable" in summary
    assert "nothing excluded" in summary  # no warm-up known without run.json


def test_log_hints_name_the_oom_killer_crash_and_restarts(run_copy):
    # lines as journald, the JVM and systemd write them (synthetic: the fixture's JVM was frozen, not killed)
    logs = run_copy / "default" / "logs"
    (logs / "journal.txt").write_text(
        "Nov 22 22:01:50 default kernel: java invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE)\n"
        "Nov 22 22:01:50 default kernel: Out of memory: Killed process 4242 (java) total-vm:2000000kB\n"
        "Nov 22 22:01:51 default systemd[1]: camel-app.service: Main process exited, code=killed, status=9/KILL\n"
        "Nov 22 22:01:56 default systemd[1]: camel-app.service: Scheduled restart job, restart counter is at 1.\n")
    with open(logs / "app.log", "a") as f:
        f.write("2026-11-22 22:01:49.000 ERROR 1 --- [nio-8080-exec-1] o.a.c.c.C.[.[.[/] : "
                "Servlet.service() threw exception java.lang.OutOfMemoryError: Java heap space\n")
    (logs / "hs_err_pid4242.log").write_text(
        "#\n# A fatal error has been detected by the Java Runtime Environment:\n#\n"
        "#  SIGSEGV (0xb) at pc=0x00007f, pid=4242, tid=4243\n#\n# Problematic frame:\n"
        "# J 1234 c1 java.util.HashMap.get(Ljava/lang/Object;)Ljava/lang/Object; (23 bytes)\n")
    summary = summary_of(run_copy)
    stop_section = summary.split("## Stopped answering", 1)[1].split("\n## ", 1)[0]
    assert "`logs/journal.txt`: OOM killer ×2" in stop_section
    assert "`logs/journal.txt`: service failed or restarted ×2" in stop_section
    assert "`logs/app.log`: OutOfMemoryError ×1" in stop_section
    assert "`logs/hs_err_pid4242.log`: JVM crash (hs_err file)" in stop_section and "SIGSEGV" in stop_section
    assert "- default/logs/journal.txt" not in summary


def test_not_a_folder_is_a_usage_error(tmp_path):
    done = run_report(tmp_path / "nope")
    assert done.returncode == 2 and "no such run folder" in done.stderr


def test_the_report_never_imports_the_lab_package(run_copy):
    # run folders outlive the lab's code: the report must work with report/ alone
    code = ("import runpy, sys; sys.argv = ['report', 'run', sys.argv[1]]\n"
            "try:\n    runpy.run_module('report', run_name='__main__')\nexcept SystemExit:\n    pass\n"
            "assert not [m for m in sys.modules if m == 'lab' or m.startswith('lab.')], 'lab imported'")
    done = subprocess.run([sys.executable, "-c", code, str(run_copy)], cwd=REPO, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


def test_load_profile_nested_as_lab_load_writes_it(run_copy):
    # lab/load/runner.py's LoadResult.to_dict() nests the profile: {"jmeter_version": ..., "profile": {...}}
    run = json.loads((run_copy / "run.json").read_text())
    run["load"] = {"jmeter_version": "5.6.3", "profile": dict(run["load"], warmup_s=45), "ended_by": "completed"}
    (run_copy / "run.json").write_text(json.dumps(run))
    summary = summary_of(run_copy)
    assert "Figures exclude the first 45 s of warm-up" in summary
    assert "load: closed model, 10 users" in summary


def test_a_machine_that_never_answered_is_called_so(run_copy):
    # every tuned request failed: keep its rows, turn each into a 503 from httpd
    jtl = run_copy / "tuned" / "jmeter.jtl"
    lines = jtl.read_text().splitlines()
    failed = [line.replace(",200,,", ",503,Service Unavailable,").replace(",201,,", ",503,Service Unavailable,")
                  .replace(",204,,", ",503,Service Unavailable,").replace(",404,,", ",503,Service Unavailable,")
                  .replace(",true,", ",false,") for line in lines[1:]]
    jtl.write_text("\n".join([lines[0], *failed]) + "\n")
    first = summary_of(run_copy).splitlines()[2]
    assert "tuned never answered successfully (from " in first and "+0 s): 100 % HTTP 503 Service Unavailable" in first


def test_log_hints_name_a_stopped_backend_and_the_calls_that_failed(run_copy):
    """Lines as a backend outage left them (run 20261127T155529Z-fault-backend-outage): systemd stopping the mock,
    Apache HttpClient's retry handler logging the failed calls at INFO; the lab's own recorder stopping at
    collection is not a hint."""
    from report.read.logs import log_hints
    logs = run_copy / "tuned" / "logs"
    (logs / "journal.txt").write_text(
        "2026-11-27T16:00:57+0000 lab-tuned systemd[1]: Stopped mock-service.service - Mock of the external "
        "service the Camel routes call.\n"
        "2026-11-27T16:02:40+0000 lab-tuned systemd[1]: Stopped lab-pmlogger.service - PCP archive of lab run x.\n")
    with open(logs / "app.log", "a") as f:
        f.write("2026-11-27 16:00:52,527 INFO  [Camel (camel-tuning-app) thread #4 - compose] o.a.http.impl.execchain."
                "RetryExec - I/O exception (org.apache.http.NoHttpResponseException) caught when processing request "
                "to {}->http://127.0.0.1:9080: The target server failed to respond\n")
    hints = {h.what: h for h in log_hints(run_copy / "tuned")}
    assert hints["service stopped during the run"].count == 1
    assert "mock-service.service" in hints["service stopped during the run"].first
    assert hints["calls to the backend failed"].count >= 1 and "9080" in hints["calls to the backend failed"].first
