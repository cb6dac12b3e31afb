"""The full run's host-side pieces without VMs: options, run ids, run.json, collection parsing, the CLI's
refusals (bad input changes nothing), and a whole run with the machines replaced by local stand-ins."""
import argparse
import datetime
import io
import json
import re
import subprocess
import sys
import tarfile
import time
from concurrent.futures import Future
from pathlib import Path

import pytest

from lab import cli, paths
from lab.errors import LabError
from lab.experiment import (
    check,
    collect,
    design,
    finish,
    load,
    options,
    record,
    reporting,
    run,
    services,
    trial,
)
from lab.machines import lifecycle, netns
from lab.provision import jars, playbook, scope
from runfolder import schema

# --- options and ids -----------------------------------------------------------------------------------


@pytest.mark.parametrize("text,want", [("90", 90), ("90s", 90), ("5m", 300), ("1h", 3600), ("1h30m", 5400),
                                       ("2m10s", 130)])
def test_durations(text, want):
    assert options.seconds(text) == want


@pytest.mark.parametrize("text", ["", "5x", "m", "-5", "1.5m", "h"])
def test_bad_durations(text):
    with pytest.raises(Exception, match="not a duration"):
        options.seconds(text)


def test_run_id_is_utc_stamp_and_label():
    now = datetime.datetime(2026, 11, 23, 10, 15, 0, tzinfo=datetime.UTC)
    assert record.new_run_id("quick", now) == "20261123T101500Z-quick"
    assert record.new_run_id("", now) == "20261123T101500Z"


@pytest.mark.parametrize("label", ["a b", "../x", "x/y", "-lead", "é", "x" * 41])
def test_bad_labels_are_refused(label):
    with pytest.raises(ValueError, match="--label"):
        options.checked(label=label)


def test_warmup_defaults_to_the_ramp_up_and_is_bounded():
    assert options.checked(profile=load.Profile(ramp_up_s=30, duration_s=60)).effective_warmup_s == 30
    assert options.checked(profile=load.Profile(ramp_up_s=30, duration_s=60), warmup_s=0).effective_warmup_s == 0
    with pytest.raises(ValueError, match="--warmup"):
        options.checked(profile=load.Profile(ramp_up_s=30, duration_s=60), warmup_s=91)


def test_knob_diff_names_only_what_differs():
    diff = record.knob_diff({"default": {"a": 1, "b": None, "c": [1]}, "tuned": {"a": 1, "b": 0, "c": [2]}})
    assert diff == {"b": {"default": None, "tuned": 0}, "c": {"default": [1], "tuned": [2]}}
    assert record.knob_diff({"default": None, "tuned": {"a": 1}}) == {}


# --- collection parsing -----------------------------------------------------------------------------------

def test_tidy_metrics_reshapes_pmrep_csv(tmp_path):
    wide = tmp_path / "pmrep.csv"
    wide.write_text('Time,hinv.ncpu,kernel.all.load-1 minute,kernel.all.load-5 minute,hotproc.psinfo.rss-001234 java\n'
                    '1795384803.5,2,0.5,0.2,\n'
                    '1795384804.5,2,N/A,0.3,1024\n')
    out = tmp_path / "metrics.csv"
    assert collect.tidy_metrics(wide, out) == 6
    rows = out.read_text().splitlines()
    assert rows[0] == "time,metric,instance,value"
    assert "1795384803.5,kernel.all.load,1 minute,0.5" in rows
    assert "1795384804.5,hotproc.psinfo.rss,001234 java,1024" in rows
    assert not any("N/A" in r for r in rows)


def _tar(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def test_unpack_keeps_members_inside(tmp_path):
    collect.unpack(_tar({"./logs/app.log": b"x\n", "./config/versions.txt": b"java=17\n"}), tmp_path)
    assert (tmp_path / "logs" / "app.log").read_bytes() == b"x\n"
    with pytest.raises(collect.CollectError, match="refusing"):
        collect.unpack(_tar({"../escape.txt": b"no"}), tmp_path / "m")
    assert not (tmp_path / "escape.txt").exists()


def test_versions_come_from_the_machine_files(tmp_path):
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "versions.txt").write_text("java=17.0.16\nhttpd=2.4.62\npcp=6.0.3-1\n")
    (tmp_path / "config" / "actuator-info.json").write_text(json.dumps({"lab": {
        "stack": "camel3", "java": "17.0.17", "springBoot": "2.7.18", "camel": "3.22.2", "tomcat": "9.0.113",
        "tcnative": "1.2.35", "connectors": {"AjpAprProtocol:8009": "org.apache.coyote.ajp.AjpAprProtocol"}}}))
    v = collect.read_versions(tmp_path)
    assert v["httpd"] == "2.4.62" and v["spring_boot"] == "2.7.18" and v["tcnative"] == "1.2.35"
    assert v["java"] == "17.0.17"           # what the running JVM says wins over `java -version`
    assert "AjpAprProtocol:8009" in v["connectors"]
    assert collect.read_versions(tmp_path / "nothing") == {}
    assert collect.read_knobs(tmp_path) is None
    # Java 21 with virtual threads: what served the requests, as the kit saw it (kit/README.md)
    (tmp_path / "config" / "actuator-info.json").write_text(json.dumps({"lab": {
        "java": "21.0.9", "javaRuntime": "Debian 21.0.9+10-1", "camelThreads": "virtual", "connectorExecutors": {
            "AjpNioProtocol:8009": {"executor": "virtual", "class": "org.apache.tomcat.util.threads.VirtualThread"},
            "Http11NioProtocol:8080": {"executor": "virtual", "class": "x"}}}}))
    v = collect.read_versions(tmp_path)
    assert v["request_threads"] == "AjpNioProtocol:8009 virtual, Http11NioProtocol:8080 virtual"
    assert (v["camel_threads"], v["java_runtime"]) == ("virtual", "Debian 21.0.9+10-1")


def test_guest_script_is_valid_bash():
    assert subprocess.run(["bash", "-n", str(collect.GUEST_SCRIPT)]).returncode == 0


def test_guest_script_refuses_bad_run_ids():
    for bad in ("../x", ".hidden", "a/b"):
        done = subprocess.run(["bash", str(collect.GUEST_SCRIPT), "mark", bad], capture_output=True, text=True)
        assert done.returncode == 2 and "bad run id" in done.stderr


# --- the command line refuses bad input before anything starts -----------------------------------------------

@pytest.mark.parametrize("argv,message", [
    (["--label", "a b"], "--label"),
    (["--users", "0"], "users"),
    (["--set", "tuned:no_such_knob=1"], "unknown knob"),
    (["--set", "nomachine:tomcat_threads_max=1"], "unknown knob set 'nomachine'"),
    (["--duration", "1m", "--ramp-up", "10s", "--warmup", "5m"], "--warmup"),
    (["--repeat", "0"], "--repeat"),
    (["--repeat", "21"], "--repeat"),
    (["--aa", "fast"], "--aa"),
    (["--aa", "--set", "tuned:tomcat_threads_max=300"], "no machine runs the tuned configuration"),
    (["--knob-set", "tuned=nosuch"], "unknown knob set 'nosuch'"),
    (["sweep", "default:tomcat_threads_max=1,2"], "only the tuned side is swept"),
    (["--model", "steps"], "--model steps needs --rates"),
    (["--rates", "10,20"], "apply to the steps model only"),
    (["--model", "steps", "--rates", "10,20", "--duration", "5m"], "do not apply to the steps model"),
    (["--model", "steps", "--rates", "20,10"], "step_rates: must rise from stage to stage"),
    (["sweep", "tomcat_threads_max=100,200", "--repeat", "2"], "--repeat and --aa do not combine"),
    (["sweep", "tomcat_threads_max=100,6000"], "sweep trial v2 (tomcat_threads_max=6000)"),
    (["--rate", "5", "ablate"], "--rate applies to the open model only"),
    (["--knob-set", "middle=article-2018"], "'middle' is not a side"),
    (["--knob-set", "tuned=default"], "that is an A/A run"),
    (["--aa", "--knob-set", "article-2018"], "--aa and --knob-set"),
    (["--knob-set", "article-2018", "--set", "tuned:tomcat_threads_max=5"], "no machine runs the tuned configuration"),
    (["--knob-set", "article-2018", "--set", "article-2018:tomcat_threads_min_spare=400"],
     "tomcat_threads_min_spare (400) must be ≤ tomcat_threads_max (300)"),
    # contradictory options, options that would do nothing
    (["--rate", "10"], "--rate applies to the open model only"),
    (["--model", "open", "--no-keep-alive"], "--no-keep-alive applies to the closed model only"),
    (["--model", "open", "--users", "5"], "--users applies to the closed model only"),
    (["--profile", "--set", "tuned:profiler_events=[cpu]"], "--profile and --set profiler_events"),
    (["--users", "5", "up"], "--users is a run option: it does nothing with `./start.sh up`"),
    # knob values, checked by ansible/validate.yml on this host (types, rules, the kernel's names, the JVM)
    (["--set", "tuned:tomcat_threads_max=many"], 'tuned: knob tomcat_threads_max = "many": must be an integer'),
    (["--set", "tuned:jvm_heap_max_mb=700"], "jvm_heap_max_mb (700) must be below the machine's memory"),
    (["--set", "mock_customers=10"], "mock_customers (10) must be ≥ the load's highest customer id (1000)"),
    (["--set", "default:jvm_extra_options=[-XX:TieredStopAtLevel=7]"], "TieredStopAtLevel=7 is outside the allowed"),
    (["--repeat", "2", "--set", "default:base_sysctl={net.core.nosuch: 1}"], "net.core.nosuch"),
])
@pytest.mark.parametrize("foreign_lab", [None, "/another/checkout"])
def test_bad_run_options_change_nothing(argv, message, foreign_lab, capsys, monkeypatch, tmp_path):
    # bad input is named first, whether or not another checkout's lab holds the namespace
    monkeypatch.setattr(netns, "foreign_owner", lambda: foreign_lab)
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(lifecycle, "ensure_up", lambda s, suites: pytest.fail("must not bring anything up"))
    assert cli.main(argv) == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "results").exists()


def test_report_of_a_folder_that_is_not_a_run(tmp_path, capsys):
    assert cli.main(["report", str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err


def _no_jar_build(monkeypatch):
    """run_trial starts the kit's build (and JMeter's assembly) on a thread of its own: a test that never provisions
    must not leave one running into the next test (it would call that test's stand-in for ensure_kit)."""
    done = Future()
    done.set_result([])
    monkeypatch.setattr(jars, "jars_beside", lambda log=print: done)
    monkeypatch.setattr(load, "jmeter_beside", lambda log=print: done)     # nor JMeter's assembly


def test_a_run_that_cannot_come_up_is_recorded_reported_and_torn_down(monkeypatch, tmp_path, capsys):
    """run.execute brings the lab up and (--down) tears it down through lab.machines.lifecycle, not the command line."""
    calls = []

    def not_up(s, suites):
        raise LabError("the machines are up but were made with other settings")

    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(lifecycle, "ensure_up", not_up)
    _no_jar_build(monkeypatch)
    monkeypatch.setattr(lifecycle, "down", lambda: calls.append("down"))
    monkeypatch.setattr(reporting, "report_command", lambda module, *args, **kw: calls.append((module, *args)) or 1)
    assert run.execute(options.checked(label="x", down=True), s=None, log=lambda line: None) == 1
    [run_dir] = (tmp_path / "results").iterdir()
    record = json.loads((run_dir / "run.json").read_text())
    assert schema.problems("run.json", record) == [], "run.json as the run folder's contract says, failed or not"
    assert (record["status"], record["stopped_at"]) == ("failed", "up")
    assert "made with other settings" in record["error"]
    assert "up_s" in record["phases"]          # a phase that failed still says how long it took
    assert calls == [("run", run_dir), ("runs", run_dir.parent, "--add", run_dir), "down"]   # indexed, then down
    assert "No verdict" in capsys.readouterr().out


# --- provisioning is skipped when nothing changed ------------------------------------------------------------

@pytest.fixture
def fake_provisioning(monkeypatch, tmp_path):
    """playbook.run without Ansible or machines: counts the playbook runs; the stamp in tmp_path."""
    jar = tmp_path / "app.jar"
    jar.write_bytes(b"jar v1")
    calls = []

    class Done:
        returncode = 0
        stdout = iter(["PLAY RECAP\n"])

        def wait(self):
            return 0

    monkeypatch.setattr(playbook, "STAMP", tmp_path / "provisioned.json")
    # the service the machines run, its jar this one (lab/experiment/service.py ansible_vars)
    service_vars = {"lab_service": {"name": "sample", "builds": {"camel3": {"jar": str(jar)}}}}
    run = playbook.run
    monkeypatch.setattr(playbook, "run", lambda *a, **kw: run(*a, **{"service_vars": service_vars, **kw}))
    kit = tmp_path / "lab-kit.jar"
    kit.write_bytes(b"kit v1")
    monkeypatch.setattr(jars, "ensure_kit", lambda log=print: kit)
    profiler_home = tmp_path / "profiler"
    profiler_home.mkdir()
    (profiler_home / playbook.profiler.LIBRARY).write_bytes(b"agent")
    monkeypatch.setattr(playbook.profiler, "ensure", lambda log=print: profiler_home)
    monkeypatch.setattr(scope, "machine_ids", lambda: {"default": "id-d", "tuned": "id-t"})
    monkeypatch.setattr(playbook, "write_inventory", lambda resolved: tmp_path / "inventory.yml")
    monkeypatch.setattr(playbook.paths, "LOG_DIR", tmp_path / "log")
    monkeypatch.setattr(playbook.subprocess, "Popen", lambda *a, **k: calls.append(a) or Done())
    return playbook, calls, jar


def test_provisioning_takes_the_kit_built_beside_it_and_fingerprints_the_services_jar(fake_provisioning, monkeypatch):
    """The full run starts Maven for the kit and async-profiler's agent before the machines are up (jars_beside)
    and provisioning waits for them: it builds or fetches neither itself; the kit's content and the service's
    jar's are what it fingerprints."""
    provision, calls, jar = fake_provisioning
    built = []
    kit, agent = jars.ensure_kit(), jars.profiler.ensure() / jars.profiler.LIBRARY
    monkeypatch.setattr(jars, "ensure_kit", lambda log=print: built.append("kit") or kit)
    home = jars.profiler.ensure()
    monkeypatch.setattr(jars.profiler, "ensure", lambda log=print: built.append("agent") or home)
    resolved = {"machines": {"default": "192.168.56.11", "tuned": "192.168.56.12"}, "memory_mb": 512}
    beside = jars.jars_beside()
    assert beside.result(timeout=30) == [kit, agent] and built == ["kit", "agent"]
    quiet = dict(log=lambda *a: None, out=io.StringIO())
    assert playbook.run(resolved, {}, force=False, jars=beside, **quiet).roles is None
    assert built == ["kit", "agent"] and len(calls) == 1                        # no second build, no second fetch
    assert playbook.run(resolved, {}, force=False, jars=jars.jars_beside(), **quiet) is None
    jar.write_bytes(b"jar v2")                                                  # the service's jar changed
    assert playbook.run(resolved, {}, force=False, jars=jars.jars_beside(), **quiet).roles is None


def test_provisioning_runs_only_what_changed(fake_provisioning):
    provision, calls, jar = fake_provisioning
    resolved = {"machines": {"default": "192.168.56.11", "tuned": "192.168.56.12"}, "memory_mb": 512}
    quiet = dict(log=lambda *a: None, out=io.StringIO())
    first = playbook.run(resolved, {}, force=False, **quiet)                   # first time: everything
    assert first.machines == ("default", "tuned") and first.roles is None and first.arguments() == []
    assert playbook.run(resolved, {}, force=False, **quiet) is None            # unchanged: skipped
    assert playbook.run(resolved, {}, force=True, **quiet).roles is None      # ./start.sh provision
    threads = {"tuned": {"tomcat_threads_max": 250}}
    one = playbook.run(resolved, threads, force=False, **quiet)                # one Tomcat knob on tuned
    assert (one.machines, one.roles) == (("tuned",), ("app",))
    assert calls[-1][0][-5:] == ["--limit", "tuned", "-e", '{"lab_only_roles": ["app"]}', calls[-1][0][-1]]
    assert playbook.run(resolved, threads, force=False, **quiet) is None
    back = playbook.run(resolved, {}, force=False, **quiet)                    # the override dropped: back
    assert (back.machines, back.roles) == (("tuned",), ("app",))
    jar.write_bytes(b"jar v2")                                                  # a new build of the app
    assert playbook.run(resolved, {}, force=False, **quiet).roles is None
    assert len(calls) == 5


SAMPLE_TEMPLATE = paths.ROOT / "services" / "sample" / "application.yml.j2"


def test_a_knob_only_the_services_template_reads_provisions_the_app_role(fake_provisioning):
    """The sample app's compose pool lands through its template, which the app role renders into application.yml:
    a change of it alone ran no role, and the machines kept the values of the run before (the swapped trial of
    results/20261205T050609Z-s87-compose40-x-t2 kept each machine's pool while run.json said they traded it)."""
    provision, calls, jar = fake_provisioning
    resolved = {"machines": {"default": "192.168.56.11", "tuned": "192.168.56.12"}, "memory_mb": 512}
    sample = {"lab_service": {"name": "sample", "builds": {"camel3": {"jar": str(jar)}},
                              "template": str(SAMPLE_TEMPLATE)}}
    quiet = dict(log=lambda *a: None, out=io.StringIO(), service_vars=sample)
    assert "app_compose_pool_size" in SAMPLE_TEMPLATE.read_text()
    assert playbook.run(resolved, {}, force=False, **quiet).roles is None
    pool = playbook.run(resolved, {"tuned": {"app_compose_pool_size": 40}}, force=False, **quiet)
    assert (pool.machines, pool.roles) == (("tuned",), ("app",))
    swapped = playbook.run(resolved, {"default": {"app_compose_pool_size": 40}}, force=False, **quiet)
    assert (swapped.machines, swapped.roles) == (("default", "tuned"), ("app",))
    # a template that does not read it: nothing of the app's changes, so no role runs for it
    assert scope.scope({"base": "b1", "overrides": {}}, "b1", {"tuned": {"app_compose_pool_size": 40}}).roles == ()


def test_the_scope_of_a_change_is_the_roles_that_read_its_knobs():
    stamp = {"base": "b1", "overrides": {"tuned": {"tomcat_threads_max": 50}}}
    assert scope.scope(stamp, "b1", {"tuned": {"tomcat_threads_max": 50}, "default": {}}) is None
    assert scope.scope(stamp, "b2", {"tuned": {"tomcat_threads_max": 50}}).roles is None    # ansible/ changed
    assert scope.scope(None, "b1", {}).roles is None
    httpd = scope.scope(stamp, "b1", {"tuned": {"tomcat_threads_max": 50},
                                         "default": {"httpd_max_request_workers": 60}})
    assert (httpd.machines, httpd.roles) == (("default",), ("httpd",)) and "httpd_max_request_workers" in httpd.why
    both = scope.scope(stamp, "b1", {"default": {"tomcat_threads_max": 50}})    # moved from tuned to default
    assert (both.machines, both.roles) == (("default", "tuned"), ("app",))
    assert scope.scope(stamp, "b1", {"tuned": {"base_timezone": "UTC", "tomcat_threads_max": 50}}).roles == ("base",)
    assert scope.scope(stamp, "b1", {"tuned": {"tomcat_threads_max": 50, "mock_latency": "0"}}).roles == \
        ("mock_service",)
    # a knob other roles reach through shared variables: the AJP port is HTTPD's proxy target and one of the
    # ports the lab's firewall table (base role) admits from the lab's networks only
    assert scope.scope(stamp, "b1", {"tuned": {"tomcat_threads_max": 50, "tomcat_ajp_port": 8010}}).roles == \
        ("base", "app", "httpd")


def test_a_role_depends_on_the_knobs_inside_the_variables_it_reads(tmp_path, monkeypatch):
    ansible = tmp_path / "ansible"
    for role, task in (("one", "msg: '{{ lab_made_of_knobs }}'"), ("two", "msg: '{{ two_own }}'")):
        (ansible / "roles" / role / "tasks").mkdir(parents=True)
        (ansible / "roles" / role / "tasks" / "main.yml").write_text(f"- ansible.builtin.debug:\n    {task}\n")
    (ansible / "roles" / "two" / "defaults").mkdir()
    (ansible / "roles" / "two" / "defaults" / "main.yml").write_text("two_own: \"{{ httpd_timeout_s * 2 }}\"\n")
    (ansible / "group_vars" / "all").mkdir(parents=True)
    (ansible / "group_vars" / "all" / "lab.yml").write_text("lab_made_of_knobs: \"{{ tomcat_threads_max }}\"\n")
    (ansible / "site.yml").write_text("- name: Provision the lab machines\n  hosts: all\n  roles:\n"
                                      "    - {role: one, when: x}\n    - two\n")
    monkeypatch.setattr(scope, "ANSIBLE_DIR", ansible)
    readers = scope.knob_readers()
    assert "tomcat_threads_max" in readers["one"] and "tomcat_threads_max" not in readers["two"]
    assert "httpd_timeout_s" in readers["two"] and "httpd_timeout_s" not in readers["one"]


def test_only_the_full_run_leaves_the_app_for_its_equal_start(fake_provisioning):
    provision, calls, _ = fake_provisioning
    resolved = {"machines": {"default": "192.168.56.11", "tuned": "192.168.56.12"}, "memory_mb": 512}
    quiet = dict(log=lambda *a: None, out=io.StringIO())
    playbook.run(resolved, {}, **quiet)                                      # ./start.sh provision
    playbook.run(resolved, {}, start_services=False, **quiet)                # the full run
    started, deferred = (" ".join(c[0]) for c in calls)
    assert "lab_start_services" not in started
    assert '-e {"lab_start_services": false}' in deferred


def test_the_full_run_provisions_without_starting_the_app(monkeypatch, tmp_path):
    # the run restarts every service together right after provisioning: a start in Ansible too is one more
    # JVM start (~4 min under TCG) thrown away
    asked = {}
    monkeypatch.setattr(trial.playbook, "run", lambda *a, **k: asked.update(k) or (_ for _ in ()).throw(
        RuntimeError("stop here")))
    monkeypatch.setattr(trial.lifecycle, "ensure_up", lambda s, suites: {"machines": {"default": "a", "tuned": "b"}})
    _no_jar_build(monkeypatch)
    monkeypatch.setattr(trial.finish, "finish", lambda *a, **k: None)
    monkeypatch.setattr(trial.paths, "RESULTS", tmp_path)
    opts = options.checked()
    code, _ = trial.run_trial(opts, opts.trials()[0], None, "", log=lambda *a: None)
    assert code == 1 and asked.get("start_services") is False


def test_fingerprint_follows_ansible_files_and_machine_identity(fake_provisioning, tmp_path, monkeypatch):
    provision, _, jar = fake_provisioning
    ansible = tmp_path / "ansible"
    (ansible / "roles" / "app").mkdir(parents=True)
    (ansible / "tests").mkdir()
    (ansible / "roles" / "app" / "main.yml").write_text("a: 1\n")
    monkeypatch.setattr(scope, "ANSIBLE_DIR", ansible)
    ids = {"default": "id-d", "tuned": "id-t"}
    first = scope.fingerprint({}, {}, [jar], ids)
    (ansible / "tests" / "test_x.py").write_text("changed\n")
    assert scope.fingerprint({}, {}, [jar], ids) == first, "tests do not reach the machines"
    assert scope.fingerprint({}, {}, [jar], {**ids, "tuned": "re-created"}) != first
    (ansible / "roles" / "app" / "main.yml").write_text("a: 2\n")
    assert scope.fingerprint({}, {}, [jar], ids) != first


def test_a_failed_provisioning_is_not_remembered(fake_provisioning, monkeypatch):
    provision, calls, _ = fake_provisioning

    class Failed:
        returncode = 2
        stdout = iter(["fatal: [tuned]: FAILED!\n"])

        def wait(self):
            return 2

    monkeypatch.setattr(playbook.subprocess, "Popen", lambda *a, **k: Failed())
    with pytest.raises(playbook.ProvisionError):
        playbook.run({}, {}, force=False, log=lambda *a: None, out=io.StringIO())
    assert not playbook.STAMP.exists()


def test_the_labs_ansible_keeps_one_python_per_machine(tmp_path):
    """playbook.ansible_env() selects Mitogen's strategy (a no-change provisioning went from 18 to 3.5 min
    under TCG): two tasks' commands share one parent, where plain Ansible starts a Python per task."""
    ppid_play = tmp_path / "ppid.yml"
    ppid_play.write_text("""
- hosts: all
  gather_facts: false
  tasks:
    - {ansible.builtin.command: "sh -c 'echo $PPID'", register: first, changed_when: false}
    - {ansible.builtin.command: "sh -c 'echo $PPID'", register: second, changed_when: false}
    - ansible.builtin.debug: {msg: "parents {{ first.stdout }} {{ second.stdout }}"}
""")
    command = [str(Path(sys.executable).parent / "ansible-playbook"), "-i", "localhost,", "-c", "local", str(ppid_play)]
    done = subprocess.run(command, env=playbook.ansible_env(), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    first, second = re.search(r"parents (\d+) (\d+)", done.stdout).groups()
    assert first == second, f"each task ran in its own Python ({first}, {second}): Mitogen is not in use"


def test_guest_warnings_reach_the_run_log(monkeypatch):
    """A metric source the guest's PCP never read is named in the run's output, not only in the archive."""
    warning = b"lab-pmlogger: warning: openmetrics.app has no metrics after 90 s (http://127.0.0.1:8080/x)\n"
    monkeypatch.setattr(collect, "_guest", lambda name, args, timeout: subprocess.CompletedProcess(
        args, 0, b"", warning if name == "tuned" else b"Created symlink ...\n"))
    lines = []
    collect.mark("20261123T000000Z-x", log=lines.append)
    assert lines == ["tuned: " + warning.decode().strip()]


def test_an_interrupted_provisioning_stops_ansible(fake_provisioning, monkeypatch):
    provision, _, _ = fake_provisioning

    class Interrupted:
        returncode = None
        terminated = False

        @property
        def stdout(self):
            raise KeyboardInterrupt

        def poll(self):             # still running when Ctrl-C comes (Popen's own API, which lab/procs.end reads)
            return None

        def terminate(self):
            Interrupted.terminated = True

        def wait(self, timeout=None):
            return -15

    monkeypatch.setattr(playbook.subprocess, "Popen", lambda *a, **k: Interrupted())
    resolved = {"machines": {"default": "192.168.56.11", "tuned": "192.168.56.12"}, "memory_mb": 512}
    with pytest.raises(KeyboardInterrupt):
        playbook.run(resolved, {}, log=lambda *a: None, out=io.StringIO())
    assert Interrupted.terminated, "Ansible left running after Ctrl-C"
    assert not playbook.STAMP.exists()


def test_profile_is_the_profiler_knob_on_for_both_configurations():
    args = cli.parser().parse_args(["--profile", "--set", "tuned:tomcat_threads_max=250"])
    opts = cli.run_options(args)
    given = {side: c.values for side, c in opts.configurations.items()}
    assert given["default"]["profiler_events"] == ["cpu", "alloc", "lock"] == given["tuned"]["profiler_events"]
    assert opts.configurations["tuned"].values["tomcat_threads_max"] == 250
    # a --set after it picks the events
    args = cli.parser().parse_args(["--profile", "--set", "profiler_events=[cpu]"])
    assert cli.run_options(args).configurations["tuned"].values["profiler_events"] == ["cpu"]
    assert "profiler_events" not in cli.run_options(cli.parser().parse_args([])).configurations["tuned"].values


# --- after the load: each step on its own, Ctrl-C and failures recorded ------------------------------------

@pytest.fixture
def finishing(monkeypatch, tmp_path):
    """finish.finish on an empty run folder whose load ended; the steps after it replaced by `steps`:
    {"collect" | "dashboards" | "report" | "index": what it does (None, or an exception to raise)}. Returns
    (finish(), the calls made, run.json as read afterwards)."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    for side in ("default", "tuned"):
        (run_dir / side).mkdir()
        (run_dir / side / "jmeter.jtl").write_text("timeStamp,elapsed\n")
    rec = record.Record(run_dir, {"run_id": "r", "status": "running", "phase": "load", "stopped_at": None})
    calls, effects = [], {}

    def doing(name):
        def act(*args, **kwargs):
            calls.append(name)
            if effects.get(name):
                raise effects[name]
            return {} if name == "collect" else 0      # pull: {machine: problem}; report_command: exit status
        return act

    monkeypatch.setattr(collect, "pull", doing("collect"))
    monkeypatch.setattr(load, "dashboards", doing("dashboards"))
    monkeypatch.setattr(reporting, "report_command", doing("report"))
    monkeypatch.setattr(reporting, "index_add", doing("index"))
    monkeypatch.setattr(reporting, "print_outcome", lambda run_dir: None)

    def finish_with(make_dashboards=True, **steps_effects):
        effects.update(steps_effects)
        finish.finish(design.plan()[0], rec, run_dir, "r", marked_at=1.0, log=lambda line: None,
                      dashboards=make_dashboards)
        return calls, json.loads((run_dir / "run.json").read_text())
    return finish_with


def test_ctrl_c_during_collection_still_writes_the_report(finishing):
    calls, record = finishing(collect=KeyboardInterrupt())
    assert calls == ["collect", "report", "index"], "the dashboards are skipped, the report is written"
    assert (record["status"], record["stopped_at"], record["phase"]) == ("interrupted", "collect", "index")
    assert record["finish_errors"] == {"collect": "interrupted (Ctrl-C)"}


def test_ctrl_c_again_during_the_report_is_recorded_too(finishing):
    calls, record = finishing(collect=KeyboardInterrupt(), report=KeyboardInterrupt())
    assert calls == ["collect", "report", "index"]
    assert (record["status"], record["stopped_at"]) == ("interrupted", "collect")
    assert record["finish_errors"] == {"collect": "interrupted (Ctrl-C)", "report": "interrupted (Ctrl-C)"}


def test_a_failed_step_after_the_load_does_not_stop_the_others(finishing):
    calls, record = finishing(dashboards=RuntimeError("JMeter ran out of memory"))
    assert calls == ["collect", "dashboards", "report", "index"]
    assert record["status"] == "complete", "the data is all there; only the dashboards are missing"
    assert record["finish_errors"] == {"dashboards": "RuntimeError: JMeter ran out of memory"}


def test_a_clean_finish_records_no_errors(finishing):
    calls, record = finishing()
    assert calls == ["collect", "dashboards", "report", "index"]
    assert record["status"] == "complete" and "finish_errors" not in record
    assert set(record["phases"]) == {"collect_s", "dashboards_s", "report_s", "index_s"}   # each step's duration


def test_a_tunes_search_run_leaves_the_dashboards_for_later_and_says_how(finishing):
    calls, record = finishing(make_dashboards=False)
    assert calls == ["collect", "report", "index"]
    assert record["dashboards"] == finish.DEFERRED and "--dashboards" in record["dashboards"]


def test_tls_loads_through_the_https_front_and_is_recorded(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    opts = cli.run_options(cli.parser().parse_args(["--tls", "--users", "5", "--warmup", "7s"]))
    assert opts.scheme == "https"
    assert design.plan()[0].targets({"default": "192.168.56.11", "tuned": "192.168.56.12"}, opts.scheme) == \
        {"default": "https://192.168.56.11", "tuned": "https://192.168.56.12"}
    props = load.target_properties(design.plan()[0].targets({"default": "10.0.0.1", "tuned": "10.0.0.2"}, "https"))
    assert (props["tuned_scheme"], props["tuned_port"], props["default_host"]) == ("https", "443", "10.0.0.1")
    plain = cli.run_options(cli.parser().parse_args([]))
    for asked, scheme, warmup_s in ((opts, "https", 7), (plain, "http", plain.profile.ramp_up_s)):
        t = trial.TrialRun(asked, asked.trials()[0], None, scheme, log=lambda line: None)
        t.resolved = {"machines": {"default": "10.0.0.1", "tuned": "10.0.0.2"}}
        said = json.loads((t.run_dir / "run.json").read_text())["load"]     # what run.json says before the load
        assert (said["scheme"], said["warmup_s"], said["users"]) == (scheme, warmup_s, asked.profile.users)
        assert set(t.targets().values()) == {f"{scheme}://10.0.0.1", f"{scheme}://10.0.0.2"}
        t.record.release_reserve()


def test_sigterm_and_an_inherited_ignored_sigint_stop_the_lab_like_ctrl_c():
    import os
    import signal
    saved = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    try:
        signal.signal(signal.SIGINT, signal.SIG_IGN)          # as a background job or nohup leaves it
        cli.interruptible()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with pytest.raises(KeyboardInterrupt):
                os.kill(os.getpid(), sig)
                time.sleep(1)                                 # the handler runs between bytecodes
    finally:
        signal.signal(signal.SIGINT, saved[0])
        signal.signal(signal.SIGTERM, saved[1])


def test_a_run_stopped_before_the_load_keeps_the_machines_serial_consoles(monkeypatch, tmp_path):
    """Nothing to collect over SSH (no archive was started), but the host's copy of each console is there."""
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rec = record.Record(run_dir, {"run_id": "r", "status": "interrupted", "phase": "provision",
                                  "stopped_at": "provision"})
    copied = []
    monkeypatch.setattr(collect, "pull", lambda *a, **k: pytest.fail("nothing was marked: no collection"))
    monkeypatch.setattr(collect, "copy_serial_console", lambda vm, target: copied.append((vm, target.name)) or True)
    monkeypatch.setattr(reporting, "report_command", lambda *a, **k: 0)
    monkeypatch.setattr(reporting, "print_outcome", lambda run_dir: None)
    finish.finish(design.plan()[0], rec, run_dir, "r", marked_at=None, log=lambda line: None)
    assert sorted(copied) == [("default", "default"), ("tuned", "tuned")]
    assert json.loads((run_dir / "run.json").read_text())["status"] == "interrupted"


def test_every_help_page_formats():
    # argparse formats help with %-interpolation: a bare '%' in any help text crashed --help
    p = cli.parser()
    pages = [p] + [sp for a in p._actions if isinstance(a, cli.argparse._SubParsersAction)
                   for sp in a.choices.values()]
    for page in pages:
        assert page.prog in page.format_help()


def test_a_machine_that_does_not_answer_is_diagnosed(monkeypatch):
    def probe(cmd, what, error, **kw):
        if "192.168.56.12" in " ".join(cmd):
            raise error(f"{what}: python exited 1\n  timed out")
        return subprocess.CompletedProcess(cmd, 0, "200 3.5\n", "")
    monkeypatch.setattr(check.shell, "run", probe)
    said = []
    with pytest.raises(check.RunError) as failed:
        check.check_answers({"default": "http://192.168.56.11", "tuned": "http://192.168.56.12"},
                            "/api/customers/1", log=said.append, timeout_s=0, looping=lambda name: None,
                            diagnose=lambda name: f"{name}: camel-app: failed\nError: Could not find main class")
    assert "tuned does not answer http://192.168.56.12/api/customers/1" in str(failed.value)
    assert "tuned: camel-app: failed\n  Error: Could not find main class" in str(failed.value)


def test_a_machine_whose_app_keeps_dying_fails_the_check_at_once_and_a_slow_one_is_waited_for(monkeypatch):
    """A JVM that died at every start (its log root's: Permission denied) held the check for its whole 10 minutes;
    between the probe's slices the units' restarts are read, and a crash loop ends the wait."""
    probes = {"default": 0, "tuned": 0}

    def probe(cmd, what, error, **kw):
        name = "tuned" if "192.168.56.12" in " ".join(cmd) else "default"
        probes[name] += 1
        if name == "tuned" or probes[name] < 3:            # default answers in its third slice
            raise error(f"{what}: python exited 1\n  connection refused")
        return subprocess.CompletedProcess(cmd, 0, "200 3.5\n", "")
    monkeypatch.setattr(check.shell, "run", probe)
    asked = []

    def looping(name):
        asked.append(name)
        return "camel-app: restarted 3 times since the equal start" if name == "tuned" and probes["tuned"] >= 2 \
            else None
    with pytest.raises(check.RunError) as failed:
        check.check_answers({"default": "http://192.168.56.11", "tuned": "http://192.168.56.12"}, "/x",
                            log=lambda line: None, looping=looping, diagnose=lambda name: f"{name}: camel-app: failed")
    said = str(failed.value)
    assert "tuned does not answer" in said and "camel-app: restarted 3 times since the equal start" in said
    assert probes == {"default": 3, "tuned": 2}, "failed at the second slice, not at the timeout"
    assert check.check_answers({"default": "http://192.168.56.11"}, "/x", log=lambda line: None,
                               looping=lambda name: None)["default"] >= 0


def test_a_units_restarts_are_read_from_systemctl_show(monkeypatch):
    shown = "Id=camel-app.service\nNRestarts=81\n\nId=apache2.service\nNRestarts=0\n"
    monkeypatch.setattr(services.reach, "ssh", lambda name, command, timeout: subprocess.CompletedProcess(
        command, 0, shown, ""))
    assert services.crash_looping("tuned") == "camel-app: restarted 81 times since the equal start"
    monkeypatch.setattr(services.reach, "ssh", lambda name, command, timeout: subprocess.CompletedProcess(
        command, 0, shown.replace("81", "2"), ""))
    assert services.crash_looping("tuned") is None


def test_a_process_pcp_named_before_it_execd_is_named_as_it_runs(tmp_path):
    """systemd ≥ 255 (the trixie box) spawns a service through systemd-executor; PCP names the process when it
    first sees it and keeps that name: the JVM's peak RSS was missing from the report (results/…-s49-aa-trixie)."""
    pcp = tmp_path / "pcp"
    pcp.mkdir()
    stale = "001294 /usr/lib/systemd/systemd-executor"
    (pcp / "metrics.csv").write_text(f"time,metric,instance,value\n1,hotproc.psinfo.rss,{stale},215000\n"
                                     "1,hotproc.psinfo.rss,001298 /usr/sbin/apache2,29000\n"
                                     "1,kernel.all.load,1 minute,3\n")
    (pcp / "processes.csv").write_text(f"instance,psargs\n{stale},/usr/lib/systemd/systemd-executor --deserialize 64\n")
    (pcp / "argv0.csv").write_text("1294,/usr/bin/java\n1298,/usr/sbin/apache2\n77,\n")
    assert collect.rename_stale_processes(pcp, pcp / "argv0.csv") == [stale]
    metrics = (pcp / "metrics.csv").read_text()
    assert "001294 /usr/bin/java,215000" in metrics and "systemd-executor" not in metrics
    assert "001298 /usr/sbin/apache2" in metrics
    assert (pcp / "processes.csv").read_text().splitlines()[1].startswith("001294 /usr/bin/java,/usr/bin/java (PCP saw")


def test_site_yml_skips_the_checks_only_for_knobs_this_command_validated(monkeypatch):
    """lab_knobs_checked goes to site.yml only for the very knobs, machines and service validate() passed."""
    monkeypatch.setattr(playbook, "_CHECKED", set())
    resolved = {"machines": {"default": "192.168.56.11", "tuned": "192.168.56.12"}, "memory_mb": 512}
    threads = {"tuned": {"tomcat_threads_max": 250}}
    assert playbook.checked_vars(resolved, threads, False, None) == []
    refused = "fatal: [tuned]: FAILED! => " + json.dumps({"msg": "tomcat_threads_max: too many"})
    outcome = {"code": 2, "out": refused}
    monkeypatch.setattr(playbook.subprocess, "run", lambda command, **kw: subprocess.CompletedProcess(
        command, outcome["code"], outcome["out"], ""))
    with pytest.raises(ValueError, match="tomcat_threads_max"):
        playbook.validate(resolved, threads)
    assert playbook.checked_vars(resolved, threads, False, None) == []             # refused: checked again
    outcome.update(code=0, out="")
    playbook.validate(resolved, threads)
    assert playbook.checked_vars(resolved, threads, False, None) == ["-e", '{"lab_knobs_checked": true}']
    assert playbook.checked_vars(resolved, {"tuned": {"tomcat_threads_max": 251}}, False, None) == []
    assert playbook.checked_vars({**resolved, "memory_mb": 1024}, threads, False, None) == []
    assert playbook.checked_vars(resolved, threads, True, None) == []
    assert playbook.checked_vars(resolved, threads, False, {"lab_service": {"name": "shop"}}) == []


def test_report_dashboards_makes_the_dashboards_a_search_run_left_then_the_report(monkeypatch, tmp_path):
    from lab.cli.commands import report as report_command
    done = []
    monkeypatch.setattr(load, "dashboards", lambda run_dir: done.append(("dashboards", run_dir)))
    monkeypatch.setattr(reporting, "report", lambda run_dir, warmup: done.append(("report", run_dir)) or 0)
    parser = argparse.ArgumentParser()
    report_command.add_arguments(parser)
    assert report_command.main(parser.parse_args([str(tmp_path), "--dashboards"])) == 0
    assert done == [("dashboards", tmp_path), ("report", tmp_path)]
    done.clear()
    report_command.main(parser.parse_args([str(tmp_path)]))
    assert done == [("report", tmp_path)]
