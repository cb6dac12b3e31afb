"""Sweeps and ablations: the plan (values, products, cap, estimate), what each trial runs, and a sweep that is
interrupted keeps and reports its finished trials (stand-in trials: no machine)."""
import json

import pytest

from lab import paths
from lab.experiment import options, sweep
from lab.provision import catalog
from runfolder import schema


def test_one_axis_is_one_trial_per_value():
    plan = sweep.sweep_plan([sweep.parse_axis("tuned:tomcat_threads_max=100,150,200")])
    assert [p.values for p in plan.points] == [{"tomcat_threads_max": v} for v in (100, 150, 200)]
    assert [p.label for p in plan.points] == ["v1", "v2", "v3"] and plan.configuration == "tuned"


def test_several_axes_are_their_product_and_values_are_yaml():
    plan = sweep.sweep_plan([sweep.parse_axis("tomcat_threads_max=100,200"),
                             sweep.parse_axis("tuned:jvm_extra_options=[-Xss512k],[-Xss512k, -XX:+UseNUMA],[]")])
    assert len(plan.points) == 6
    assert plan.points[1].values == {"tomcat_threads_max": 100, "jvm_extra_options": ["-Xss512k", "-XX:+UseNUMA"]}
    assert plan.points[1].about == 'tomcat_threads_max=100, jvm_extra_options=["-Xss512k", "-XX:+UseNUMA"]'


def test_the_cap_refuses_a_plan_too_large():
    axes = [sweep.parse_axis("tomcat_threads_max=1,2,3,4"), sweep.parse_axis("tomcat_accept_count=1,2,3,4")]
    with pytest.raises(ValueError, match=r"4 × 4 = 16 trials, above the cap of 12 \(--max-trials N"):
        sweep.sweep_plan(axes)
    assert len(sweep.sweep_plan(axes, max_trials=16).points) == 16


@pytest.mark.parametrize("text,message", [
    ("default:tomcat_threads_max=1,2", "only the tuned side is swept"),
    ("tuned:no_such_knob=1,2", "unknown knob 'no_such_knob'"),
    ("tuned:tomcat_threads_max=100", "at least two values"),
    ("tuned:tomcat_threads_max=100,100", "a value is repeated"),
    ("tuned:tomcat_threads_max=1,,2", "an empty value"),
    ("tuned:tomcat_threads_max", "expected tuned:KNOB=v1,v2"),
    ("tuned:jvm_extra_options=[a,b", "not valid YAML"),
])
def test_bad_axes_are_refused(text, message):
    with pytest.raises(ValueError, match=message):
        sweep.parse_axis(text)


def test_the_estimate_counts_every_trials_load_and_overheads():
    plan = sweep.sweep_plan([sweep.parse_axis("tomcat_threads_max=100,150,200")])
    per_trial = 330 + sweep.PROVISION_S + sweep.RESTART_CHECK_S + sweep.FINISH_S
    assert sweep.estimate_s(plan, 330) == 3 * per_trial
    assert f"~{3 * per_trial // 60} min" in sweep.describe(plan, 330)


def test_ablation_reverts_one_tier_at_a_time_to_the_catalog():
    plan = sweep.ablation_plan("tuned")
    out_of_the_box = catalog.defaults()
    assert plan.points[0].label == "full" and plan.points[0].values == {}
    tiers = [p.tier for p in plan.points[1:]]
    assert {"httpd", "tomcat", "jvm", "logback", "base"} <= set(tiers)
    for p in plan.points[1:]:
        assert all(out_of_the_box[k] == v for k, v in p.values.items())
    httpd = next(p for p in plan.points if p.tier == "httpd")
    assert "tomcat_ajp_connector" in httpd.values        # APR goes with AJP, else validation refuses the trial
    tomcat = next(p for p in plan.points if p.tier == "tomcat")
    assert "app_tasks_max" in tomcat.values and not any(k.startswith("httpd_") for k in tomcat.values)


def test_a_trial_runs_the_sweeps_options_plus_its_values():
    opts = options.checked(label="thr", overrides=["tuned:tomcat_accept_count=50"])
    plan = sweep.sweep_plan([sweep.parse_axis("tomcat_threads_max=100,200")])
    o = sweep.trial_options(opts, plan, plan.points[1])
    assert o.label == "thr-v2"
    assert o.configurations["tuned"].values == {"tomcat_accept_count": 50, "tomcat_threads_max": 200}
    assert o.configurations["default"].values == {}          # the control is left alone


class StandInRun:
    """lab.experiment.trial.run_trial for sweep.execute, without machines: each trial writes a run folder with a
    verdict."""
    def __init__(self, results, interrupt_at=None):
        self.results, self.interrupt_at, self.ran = results, interrupt_at, []

    def run_trial(self, opts, t, s, label, log):
        if len(self.ran) + 1 == self.interrupt_at:
            raise KeyboardInterrupt
        folder = self.results / f"20261125T00000{len(self.ran)}Z-{label}"
        folder.mkdir(parents=True)
        ratio = 1 + opts.configurations["tuned"].values["tomcat_threads_max"] / 1000
        (folder / "verdict.json").write_text(json.dumps({"effects": {
            "tps": {"default": 10.0, "tuned": 10 * ratio, "estimate": ratio, "low": ratio - 0.05, "high": ratio + 0.05},
            "error_pct": {"default": 0.0, "tuned": 0.0, "estimate": 0.0},
            "p99": {"default": 900, "tuned": 800, "estimate": 0.89, "low": 0.8, "high": 0.95}}}))
        self.ran.append((label, t.series, opts.configurations["tuned"].values))
        return 0, folder


def test_a_sweep_runs_every_trial_and_reports_the_best(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    stand_in = StandInRun(tmp_path)
    plan = sweep.sweep_plan([sweep.parse_axis("tomcat_threads_max=100,150,200")])
    assert sweep.execute(plan, options.checked(), None, log=lambda m: None, run_trial=stand_in.run_trial) == 0
    [folder] = [p for p in tmp_path.iterdir() if p.name.endswith("-sweep")]
    record = json.loads((folder / "sweep.json").read_text())
    assert schema.problems("sweep.json", record) == [], "sweep.json as the run folder's contract says"
    assert record["status"] == "complete" and [p["exit_code"] for p in record["points"]] == [0, 0, 0]
    assert {series for _, series, _ in stand_in.ran} == {folder.name}     # the trials name their sweep
    summary = (folder / "sweep.md").read_text()
    assert "**Best value: tomcat_threads_max=200**" in summary and "cannot tell the two apart" in summary
    assert (folder / "sweep.html").read_text().count("data:image/png;base64,") == 1


def test_an_interrupted_sweep_keeps_and_reports_its_finished_trials(tmp_path, monkeypatch):
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    plan = sweep.sweep_plan([sweep.parse_axis("tomcat_threads_max=100,150,200")])
    stand_in = StandInRun(tmp_path, interrupt_at=3)
    code = sweep.execute(plan, options.checked(), None, log=lambda m: None, run_trial=stand_in.run_trial)
    assert code == 130
    [folder] = [p for p in tmp_path.iterdir() if p.name.endswith("-sweep")]
    record = json.loads((folder / "sweep.json").read_text())
    assert record["status"] == "interrupted"
    assert [p["run_dir"] is not None for p in record["points"]] == [True, True, False]
    summary = (folder / "sweep.md").read_text()
    assert "2 of 3 trials reported" in summary and "v3 (not run)" in summary
    assert "**Best value: tomcat_threads_max=150**" in summary


def test_sweep_options_may_stand_before_or_after_the_command(monkeypatch):
    from lab import cli
    for argv in (["--duration", "3m", "sweep", "tomcat_threads_max=1,2"],
                 ["sweep", "tomcat_threads_max=1,2", "--duration", "3m"]):
        args = cli.parser().parse_args(argv)
        assert not cli.contradictions(args, cli.parser())
        assert cli.run_options(args).profile.duration_s == 180, argv


@pytest.mark.parametrize("label, ends", [("sweep", "Z-sweep"), ("threads", "Z-threads-sweep")])
def test_the_sweep_folder_names_its_label_once(tmp_path, monkeypatch, label, ends):
    monkeypatch.setattr(paths, "RESULTS", tmp_path)
    plan = sweep.sweep_plan([sweep.parse_axis("tomcat_threads_max=100,150")])
    stand_in = StandInRun(tmp_path)
    opts = options.checked(label=label)
    assert sweep.execute(plan, opts, None, log=lambda m: None, run_trial=stand_in.run_trial) == 0
    assert [p.name[len("20261125T000000"):] for p in tmp_path.iterdir() if (p / "sweep.json").is_file()] == [ends]
