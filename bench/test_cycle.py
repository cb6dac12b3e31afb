"""The cycle-time benchmark's plan and table (bench/cycle.py), with stand-ins for ./start.sh."""
import json

import pytest

from bench import cycle
from lab import paths
from lab.provision import catalog


def trial(scenario, to_load=None, exit=0, wall=0, **phases):
    return {"scenario": scenario, "exit": exit, "wall_s": wall,
            "phases": {**({"to_load_s": to_load} if to_load is not None else {}), **phases}}


def rows_of(trials):
    return {line.split(" | ")[1]: line for line in cycle.table(trials).splitlines()[2:]}


def test_the_table_gives_min_median_max_and_the_phase_that_limits():
    trials = [{**trial("cold", 900, up_s=300, provision_s=500, restart_s=60, check_s=20), "host_calibration_s": 1.1,
               "to_requests_s": 908},
              {**trial("cold", 1000, up_s=320, provision_s=560, restart_s=70, check_s=20), "host_calibration_s": 1.5,
               "to_requests_s": 1010},
              {**trial("cold", 1, exit=1, up_s=5), "host_calibration_s": 1.2, "to_requests_s": 3},  # failed: apart
              trial("warm", 150, up_s=2, provision_s=30, restart_s=90, check_s=20),  # (a bench before calibration)
              trial("down", wall=40)]
    rows = rows_of(trials)
    assert rows["cold"] == "| auto | cold | 2 | 900 | 950 | 1000 | 959 | provision (530) | 1 | 1.20 |"
    assert rows["warm"] == "| auto | warm | 1 | 150 | 150 | 150 | – | restart (90) | 0 | – |"
    assert rows["down"] == "| auto | down | 1 | 40 | 40 | 40 | – | – | 0 | – |"
    assert list(rows) == ["cold", "warm", "down"], "scenarios in their order, none invented"


@pytest.fixture
def stand_ins(monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    done = []
    monkeypatch.setattr(cycle, "forget_caches", lambda log=print, packages=False:
                        done.append(("forget", "packages") if packages else ("forget",)) or [])
    monkeypatch.setattr(cycle, "timed_down", lambda log=print, provider="auto": done.append(("down",))
                        or {**trial("down", wall=30), "provider": provider})
    monkeypatch.setattr(cycle, "timed_run", lambda scenario, overrides, log=print, provider="auto":
                        done.append((scenario, dict(overrides))) or {**trial(scenario, 100), "provider": provider})
    monkeypatch.setattr(cycle.subprocess, "run", lambda *a, **k: done.append(("down between kinds",)))
    return done


def test_each_kind_runs_the_sequence_in_turn_with_a_block_of_its_own(stand_ins):
    out = cycle.execute(1, ["warm", "scenario"], log=lambda *a: None, providers=("containers", "libvirt"))
    assert stand_ins == [("down between kinds",), ("warm", {}), ("scenario", {}),
                         ("down between kinds",), ("warm", {}), ("scenario", {})]
    trials = json.loads((out / "cycle.json").read_text())["trials"]
    assert [(t["provider"], t["scenario"]) for t in trials] == [("containers", "warm"), ("containers", "scenario"),
                                                                 ("libvirt", "warm"), ("libvirt", "scenario")]
    trials[1]["wall_s"] = 1400      # the scenario is judged by its whole wall time
    rows = [line.split(" | ")[:3] for line in cycle.table(trials).splitlines()[2:]]
    assert rows == [["| containers", "warm", "1"], ["| containers", "scenario", "1"], ["| libvirt", "warm", "1"],
                    ["| libvirt", "scenario", "1"]]
    assert "| 1400 | 1400 | 1400 |" in cycle.table(trials)


def test_each_knob_step_changes_one_knob_and_a_run_after_down_is_fresh(stand_ins):
    out = cycle.execute(2, ["warm", "httpd", "tomcat", "down", "jvm"], log=lambda *a: None)
    runs = [d for d in stand_ins if d[0] not in ("down", "forget")]
    assert runs[0] == ("warm", {})
    assert runs[1] == ("httpd", {"httpd_start_servers": 2})
    assert runs[2] == ("tomcat", {"httpd_start_servers": 2, "tomcat_accept_count": 101})
    assert runs[3] == ("fresh", {"httpd_start_servers": 2, "tomcat_accept_count": 101, "jvm_exit_on_oom": True})
    # the second repetition flips each knob to its other value, one step at a time
    assert runs[5] == ("httpd", {"httpd_start_servers": 3, "tomcat_accept_count": 101, "jvm_exit_on_oom": True})
    recorded = json.loads((out / "cycle.json").read_text())
    assert [t["scenario"] for t in recorded["trials"]] == ["warm", "httpd", "tomcat", "down", "fresh"] * 2


def test_a_knob_step_listed_twice_changes_its_knob_each_time(stand_ins):
    """Not a warm run in disguise: the second jvm step of one repetition flips jvm_exit_on_oom back (an earlier
    bench chose the value by repetition, and its second jvm step provisioned nothing)."""
    cycle.execute(1, ["jvm", "warm", "jvm"], log=lambda *a: None)
    assert [o.get("jvm_exit_on_oom") for _, o in stand_ins] == [True, True, False]


def test_cold_forgets_the_caches_first_and_fresh_downs_the_lab_first(stand_ins):
    cycle.execute(1, ["cold", "fresh"], log=lambda *a: None)
    assert stand_ins == [("forget",), ("cold", {}), ("down",), ("fresh", {})]


def test_uncached_also_forgets_the_package_cache_and_is_asked_for_by_name(stand_ins):
    cycle.execute(1, ["uncached", "warm"], log=lambda *a: None)
    assert stand_ins == [("forget", "packages"), ("uncached", {}), ("warm", {})]
    assert "uncached" not in cycle.SCENARIOS
    rows = cycle.table([{**trial("uncached", 200, up_s=90), "host_calibration_s": 0.27}]).splitlines()[2:]
    assert rows == ["| auto | uncached | 1 | 200 | 200 | 200 | – | up (90) | 0 | 0.27 |"], "judged to the load, as cold"


def test_forgetting_removes_the_package_cache_only_when_asked(tmp_path, monkeypatch):
    monkeypatch.setattr(cycle.subprocess, "run", lambda *a, **k: cycle.subprocess.CompletedProcess(a, 0, "", ""))
    monkeypatch.setattr(paths, "BOX_DIR", tmp_path / "box")
    monkeypatch.setattr(paths, "VAGRANT_HOME", tmp_path / "vagrant")
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    monkeypatch.setattr(cycle.containers, "DATA_ROOT", tmp_path / "docker")
    monkeypatch.setattr(cycle.debcache, "CACHE_DIR", tmp_path / "apt")
    (tmp_path / "apt" / "bookworm").mkdir(parents=True)
    assert cycle.forget_caches(log=lambda *a: None) == []
    assert (tmp_path / "apt").is_dir()
    assert cycle.forget_caches(log=lambda *a: None, packages=True) == [str(tmp_path / "apt")]
    assert not (tmp_path / "apt").exists()


def test_every_knob_change_is_a_knob_of_its_tier_and_comes_back_to_the_tuned_value():
    """(That Ansible's validation accepts the changed values on tuned: ansible/tests/test_validation.py.)"""
    from lab.provision import knob_sets
    out_of_the_box = catalog.defaults()
    tuned = knob_sets.values("tuned")
    for tier, (knob, values) in cycle.KNOB_CHANGES.items():
        assert knob in out_of_the_box and knob.startswith(tier), knob
        assert values[0] != values[1]
        assert tuned.get(knob, out_of_the_box[knob]) in values, f"{knob}: the second value restores the tuned one"


def test_the_host_calibration_takes_longer_for_more_work():
    """A fixed amount of work, timed: twice the loop takes longer (it measures the host, not a constant)."""
    small, large = cycle.host_calibration_s(200_000), cycle.host_calibration_s(2_000_000)
    assert 0 < small < large


def test_unknown_scenarios_are_refused(capsys):
    with pytest.raises(SystemExit) as refused:
        cycle.main(["--scenarios", "warm,hot"])
    assert refused.value.code == 2 and "unknown scenario hot" in capsys.readouterr().err


def test_the_slowest_provisioning_tasks_come_from_the_timed_log():
    log = """[    0.5 s] PLAY [Provision the lab machines] ****
[    1.0 s] TASK [Gathering Facts] ****
[   31.0 s] ok: [default]
[   31.5 s] TASK [base : Install the base packages] ****
[   90.0 s] ok: [tuned]
[   91.5 s] TASK [app : Wait for the app] ****
[  211.5 s] ok: [default]
[  212.0 s] PLAY RECAP ****
"""
    assert cycle.slowest_tasks(log, n=2) == [("app : Wait for the app", 120.5),
                                             ("base : Install the base packages", 60.0)]
    assert cycle.slowest_tasks("") == []


def test_the_steps_come_from_the_console_of_start_sh():
    console = ("[00:00] >> base box\n[00:00]    building bookworm\n[02:51] ok base box (171 s)\n"
               "[02:51] ok lab network namespace and libvirt (0 s)\n[04:33] !! boot both machines: failed after 102 s\n"
               "    default: ok not a step (3 s)\n")
    assert cycle.steps_taken(console) == {"base box": 171, "lab network namespace and libvirt": 0}


def test_a_scenario_is_judged_from_the_command_where_the_trial_says_when_it_began(tmp_path, monkeypatch):
    """The cold figure left out what ran before the trial's folder (the options checked, the app's jar built)."""
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    monkeypatch.setattr(cycle, "host_calibration_s", lambda: 0.2)

    def start_sh(argv, **kwargs):
        folder = tmp_path / "20261129T000000Z-cycle-cold"
        folder.mkdir()
        began = (cycle.datetime.datetime.now(cycle.datetime.UTC) + cycle.datetime.timedelta(seconds=30)).replace(
            microsecond=0)
        jmeter_began_ms = int(began.timestamp() * 1000) + 97_000
        (folder / "run.json").write_text(json.dumps({"started": began.strftime("%Y-%m-%dT%H:%M:%SZ"), "status":
                                                     "complete", "phases": {"up_s": 50, "to_load_s": 90},
                                                     "load": {"test_start_ms": jmeter_began_ms}}))
        (tmp_path / ".index").mkdir(exist_ok=True)          # a folder results/ gets with its first run
        return cycle.subprocess.CompletedProcess(argv, 0, "", "")
    monkeypatch.setattr(cycle.subprocess, "run", start_sh)
    done = cycle.timed_run("cold", {}, log=lambda line: None, provider="containers")
    assert done["folder"] == "20261129T000000Z-cycle-cold"
    assert 29 <= done["before_trial_s"] <= 31 and done["from_command_s"] == done["before_trial_s"] + 90
    assert cycle.seconds_of(done) == done["from_command_s"]
    assert done["to_requests_s"] == done["from_command_s"] + 7, "JMeter's test start, 7 s into the load phase"
