"""Input the command line must refuse with a message (exit 2) and the host's errors it must name (exit 1), never a
traceback, with nothing created: times that are no time, folders that cannot be made, run ids taken in the same
second, users that do not divide between the load generators."""
import datetime
import json

import pytest

from lab import cli, paths
from lab.experiment import options, record, run, trial
from lab.machines import lifecycle, netns
from lab.provision import hosts, hosts_down, playbook

FIXTURE = paths.ROOT / "report" / "tests" / "fixtures" / "20261122T215957Z-fixture"


@pytest.mark.parametrize("value", ["inf", "nan", "-1s", "0ms", "1e400", "-inf"])
def test_a_p99_target_that_is_no_time_is_refused_by_name(value, capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    with pytest.raises(SystemExit) as refused:
        cli.main(["--model", "steps", "--rates", "10,20", f"--p99-target={value}"])
    assert refused.value.code == 2
    assert f"argument --p99-target: {value!r} is not a time of at least 1 ms" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("text,ms", [("2s", 2000), ("2", 2000), ("1500ms", 1500), ("0.5s", 500), ("1ms", 1)])
def test_p99_targets_in_seconds_or_milliseconds(text, ms):
    assert options.milliseconds(text) == ms


def test_a_folder_that_cannot_be_made_is_named_without_a_traceback(tmp_path, monkeypatch, capfd):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setattr(paths, "RESULTS", blocker / "results")
    assert cli.main(["compare", str(FIXTURE), str(FIXTURE)]) == 1
    err = capfd.readouterr().err
    assert f"start.sh: {blocker / 'results'}: Not a directory" in err and "Traceback" not in err


def test_runs_started_in_one_second_get_folders_of_their_own(tmp_path):
    now = datetime.datetime(2026, 11, 27, 12, 0, 0, tzinfo=datetime.UTC)
    made = [record.make_run_dir("quick", tmp_path, now).name for _ in range(3)]
    assert made == ["20261127T120000Z-quick", "20261127T120000Z-quick-2", "20261127T120000Z-quick-3"]
    assert record.make_run_dir("", tmp_path, now).name == "20261127T120000Z"


def taken_for(label: str, folder) -> list:
    """The folders a run labelled `label` could be given in the next few seconds, made already."""
    now = datetime.datetime.now(datetime.UTC)
    taken = [folder / record.new_run_id(label, now + datetime.timedelta(seconds=k)) for k in range(-1, 6)]
    for path in taken:
        path.mkdir(parents=True)
    return taken


def test_a_trial_never_shares_the_folder_of_one_started_in_the_same_second(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    taken = taken_for("same", tmp_path)
    opts = options.checked(label="same")
    t = trial.TrialRun(opts, opts.trials()[0], None, "same", log=lambda line: None)
    assert t.run_dir.parent == tmp_path and t.run_dir not in taken and t.run_dir.name.endswith("-same-2")
    assert json.loads((t.run_dir / "run.json").read_text())["run_id"] == t.run_dir.name == t.run_id
    assert all(not any(path.iterdir()) for path in taken), "another run's folder was written into"
    t.record.release_reserve()


def test_two_comparisons_in_one_second_get_folders_of_their_own(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    taken = taken_for("compare", tmp_path)
    assert cli.main(["compare", str(FIXTURE), str(FIXTURE)]) == 0
    made = [d for d in tmp_path.iterdir() if d not in taken]
    assert len(made) == 1 and (made[0] / "compare.html").exists() and made[0].name.endswith("-compare-2")
    assert all(not any(path.iterdir()) for path in taken)


def test_a_comparison_of_folders_that_are_not_runs_leaves_no_folder(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    assert cli.main(["compare", str(FIXTURE), str(tmp_path)]) == 2
    assert "not a run folder" in capsys.readouterr().err
    assert not (tmp_path / "results").exists() or not any((tmp_path / "results").iterdir())


def test_users_that_do_not_divide_between_the_generators_are_refused_before_anything(tmp_path, monkeypatch, capsys):
    """Real hosts with two load generators: each engine runs the plan with its share of the users, so 5 users
    are refused once the generators are known (hosts.prepare; here its stand-in), before provisioning."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("# the stand-in for hosts.prepare reads nothing\n")
    reached = {"mode": "hosts", "inventory_source": str(inventory), "inventory": str(tmp_path / "site.yml"),
               "machines": {"default": "192.0.2.1", "tuned": "192.0.2.2"}, "hosts": {"default": "d", "tuned": "t"},
               "memory_mb": {"default": 2048, "tuned": 2048}, "facts": {"default": {}, "tuned": {}},
               "ssh_ports": {"default": 22, "tuned": 22},
               "loadgens": {"gen1": {"address": "192.0.2.21", "connection": "ssh"},
                            "gen2": {"address": "192.0.2.22", "connection": "ssh"}}}
    monkeypatch.setattr(hosts, "prepare", lambda path, log: reached)
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(playbook, "run", lambda *a, **k: pytest.fail("provisioned before the users were checked"))
    assert cli.main(["--hosts", str(inventory), "--users", "5", "--duration", "1m"]) == 2
    assert "5 users per machine do not divide between 2 load generators" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()


def test_down_with_hosts_takes_the_lab_off_them_and_up_with_hosts_is_refused(tmp_path, monkeypatch, capsys):
    """`down --hosts INV` (either order) runs hosts_down.down on that inventory, never the VMs' down nor the namespace
    check; `up --hosts` is refused (exit 2), and --down is a run option that works with --hosts."""
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("# read by the stand-in only\n")
    calls = []
    monkeypatch.setattr(hosts_down, "down", lambda path, log: calls.append(("hosts.down", path)))
    monkeypatch.setattr(lifecycle, "down", lambda: calls.append(("vms.down",)))
    monkeypatch.setattr(netns, "foreign_owner", lambda: calls.append(("netns",)))
    assert cli.main(["down", "--hosts", str(inventory)]) == 0
    assert cli.main(["--hosts", str(inventory), "down"]) == 0
    assert calls == [("hosts.down", inventory)] * 2
    assert cli.main(["--hosts", str(inventory), "up"]) == 2
    assert "`./start.sh up` brings the lab's VMs up" in capsys.readouterr().err
    args = cli.parser().parse_args(["--hosts", str(inventory), "--down"])
    assert cli.contradictions(args, cli.parser()) == []
    opts = options.checked(hosts=inventory, down=True)
    run.take_down(opts, log=lambda line: None)
    assert calls[-1] == ("hosts.down", inventory)


def test_a_gate_that_cannot_be_read_is_refused_before_anything_starts(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    assert cli.main(["--users", "5", "--gate", "tps>=+10%", "--gate", "tps>>1"]) == 2
    assert "start.sh: gate 'tps>>1': expected FIGURE<=VALUE or FIGURE>=VALUE" in capsys.readouterr().err
    assert not (tmp_path / "results").exists()


def test_a_gate_on_a_sweep_is_refused(capsys):
    assert cli.main(["sweep", "tuned:tomcat_threads_max=5,10", "--gate", "tps>=+1%"]) == 2
    assert "--gate judges one run or one series" in capsys.readouterr().err


def test_runs_and_history_before_any_run_say_so(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    assert cli.main(["runs"]) == 0 and cli.main(["history"]) == 0
    assert capsys.readouterr().out.count("no runs yet") == 2 and not (tmp_path / "results").exists()


def test_the_index_names_the_run_profile_as_the_lab_asks_for_it():
    """report/history/index.py PROFILE_KEYS: every field of the load profile (what makes runs comparable)."""
    import dataclasses

    from lab.experiment import load
    from report.history.index import PROFILE_KEYS
    assert {f.name for f in dataclasses.fields(load.Profile)} <= set(PROFILE_KEYS)
