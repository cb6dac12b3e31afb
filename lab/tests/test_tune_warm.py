"""A tune starts warm (lab/experiment/tune/warm.py): the past runs in results/ that asked its question join its study
as runs it made; a run of another question, or one the folders cannot vouch for, never does."""
from __future__ import annotations

import dataclasses
import json
import types
from pathlib import Path
from xml.sax.saxutils import quoteattr

import optuna
import pytest

from lab.experiment import load, options
from lab.experiment.tune import command, evidence, search, space, trials
from lab.provision import catalog
from lab.provision.configuration import Configuration

SPACE = space.parse({"tomcat_threads_max": {"low": 25, "high": 400, "log": True},
                     "jvm_gc": [None, "serial", "parallel", "g1"],
                     "httpd_proxy_protocol": ["http", "ajp"],
                     "tomcat_ajp_connector": {"values": ["nio", "apr"], "when": {"httpd_proxy_protocol": "ajp"}}},
                    catalog.specs())
OPTS = options.checked(profile=load.named("lab", users=150, ramp_up_s=60, duration_s=600))
HOLD = 180
SETTINGS = types.SimpleNamespace(memory_mb=512)
CONSTRAINTS = ("errors<=0.1%",)


def plan(**given) -> command.Plan:
    return command.Plan(SPACE, HOLD, 0.05, 3600, control="tuned", **given)


def past_run(results: Path, name: str, values: dict, ratio: float = 1.1, *, control: str = "tuned",
             swapped: bool = False, users: int = 150, provider: str = "containers", series: str | None = None,
             gates: tuple[str, ...] | None = CONSTRAINTS, failed: bool = False, extra: dict | None = None,
             steady_from: float = 20, cut: float | None = None, verdict_format: int = 6) -> Path:
    """A finished A/B run folder as the lab writes it (the parts warm.py reads): run.json with each side's knobs as
    the machine recorded them (the lab's own resolution), verdict.json, gates.xml."""
    folder = results / name
    (folder / "default").mkdir(parents=True)
    candidate = trials.candidate({**values, **(extra or {})}, "tuned", None)
    profile = dataclasses.replace(OPTS.profile, users=users, duration_s=HOLD)
    run = {"status": "complete", "provider": provider, "machine_memory_mb": 512, "service": {"name": "sample"},
           "design": {"kind": "ab", "configurations": {"default": control, "tuned": "default"},
                      "machines": {"default": "tuned", "tuned": "default"} if swapped else
                      {"default": "default", "tuned": "tuned"}, "series": series},
           "load": {**dataclasses.asdict(profile), "scheme": "http", "warmup_s": 60},
           "machines": {"default": {"knobs": Configuration(control).knobs(None)},
                        "tuned": {"knobs": candidate.knobs(None)}}}
    (folder / "run.json").write_text(json.dumps(run))
    (folder / "verdict.json").write_text(json.dumps({
        "format_version": verdict_format,
        "verdict": "past", "effects": {"tps": {"estimate": ratio, "low": ratio * 0.95, "high": ratio * 1.05,
                                               "intervals": "within-run"}},
        **({"method": {"warmup_s": cut}} if cut is not None else {}),      # the warm-up its report cut
        "steady": {side: {"settled": True, "start_s": steady_from} for side in ("default", "tuned")}}))
    if gates is not None:
        cases = "".join(f"<testcase name={quoteattr(g)}>" + ('<failure message="1.2 %"/>' if failed else "")
                        + "</testcase>" for g in gates)       # as report gate writes it (report/history/gates.py)
        (folder / "gates.xml").write_text(f'<testsuite name="gates">{cases}</testsuite>')
    return folder


def found(results: Path, **given) -> list[tuple[dict, evidence.Outcome]]:
    tune_folder = results / "20261201T000000Z-tune"
    tune_folder.mkdir(exist_ok=True)
    return command.past(OPTS, SETTINGS, plan(**given), tune_folder)


def test_a_past_run_of_the_same_question_is_found_with_its_values_and_outcome(tmp_path):
    values = {"tomcat_threads_max": 150, "jvm_gc": "g1", "httpd_proxy_protocol": "ajp", "tomcat_ajp_connector": "apr"}
    past_run(tmp_path, "20261130T100000Z-a", values, 1.12)
    past_run(tmp_path, "20261130T110000Z-b", {"tomcat_threads_max": 60, "jvm_gc": None,
                                             "httpd_proxy_protocol": "http"}, 0.9, swapped=True)
    got = found(tmp_path)
    assert [v for v, _, _ in got] == [values, {"tomcat_threads_max": 60, "jvm_gc": None,
                                               "httpd_proxy_protocol": "http"}]
    first, second = (o for _, o, _ in got)
    assert (first.ratio, first.run, first.swapped, first.settled, first.feasible) == (
        1.12, "20261130T100000Z-a", False, True, True)
    assert second.swapped and second.ratio == 0.9


@pytest.mark.parametrize(("why", "given"), [
    ("another load", {"users": 20}),
    ("another machines' kind", {"provider": "libvirt"}),
    ("another control", {"control": "article-2018"}),
    ("a knob outside the space changed", {"extra": {"tomcat_accept_count": 50}}),
    ("a value outside the space", {"extra": {"tomcat_threads_max": 500}}),
    ("the tune's own run", {"series": "20261201T000000Z-tune"}),
    ("no gates.xml", {"gates": None}),
    ("gates.xml of other gates", {"gates": ("p99<=2s",)}),
    ("a ratio with a warm-up in it (settled at +90 s, its report cut 60 s)", {"steady_from": 90}),
    ("a connector over HTTP is not the base's", {"extra": {"tomcat_ajp_connector": "nio2"}}),
    ("a steady state judged before the JIT counted (verdict.json format 5)", {"verdict_format": 5}),
])
def test_a_run_of_another_question_or_unvouched_for_stays_out(tmp_path, why, given):
    past_run(tmp_path, "20261130T100000Z-a", {"tomcat_threads_max": 150, "jvm_gc": "g1",
                                             "httpd_proxy_protocol": "http"}, **given)
    assert found(tmp_path) == [], why


def test_a_cold_tune_finds_nothing_and_a_past_folder_is_left_as_it_was(tmp_path):
    folder = past_run(tmp_path, "20261130T100000Z-a", {"tomcat_threads_max": 150, "jvm_gc": "g1",
                                                       "httpd_proxy_protocol": "http"}, failed=True)
    before = {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}
    assert found(tmp_path, cold=True) == []
    (_, outcome, _), = found(tmp_path)
    assert not outcome.feasible and outcome.violations == ("errors<=0.1%: 1.2 %",)    # its gates.xml, as judged then
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()} == before


def test_a_report_rendered_again_from_the_steady_state_makes_a_past_run_count(tmp_path):
    """A tune's run whose machines settled after the warm-up is rendered again from there (--warmup auto): its
    verdict says what it cut, and the run counts."""
    past_run(tmp_path, "20261130T100000Z-a", {"tomcat_threads_max": 150, "jvm_gc": "g1",
                                             "httpd_proxy_protocol": "http"}, steady_from=90, cut=90)
    (_, outcome, _), = found(tmp_path)
    assert outcome.steady_from_s == 90


def test_an_earlier_studys_space_without_the_later_fields_is_the_same_question(tmp_path):
    """A study begun by a lab whose space had no define-by-run fields resumes (they are at their defaults)."""
    storage = f"sqlite:///{tmp_path / 'study.sqlite'}"
    search.Tuner(SPACE, storage, "tune", HOLD, 0.05)
    study = optuna.load_study(study_name="tune", storage=storage)
    older = [{k: v for k, v in p.items() if k not in ("at_most", "at_least", "unset") and (k != "when" or v)}
             for p in study.user_attrs["space"]]
    study.set_user_attr("space", older)
    search.Tuner(SPACE, storage, "tune", HOLD, 0.05)          # not refused
    narrower = space.parse({"tomcat_threads_max": {"low": 25, "high": 200, "log": True}}, catalog.specs())
    with pytest.raises(search.TuneError, match="another space"):
        search.Tuner(narrower, storage, "tune", HOLD, 0.05)


def test_past_runs_join_the_study_once_and_its_leader_is_run_again_swapped(tmp_path):
    values = {"tomcat_threads_max": 150, "jvm_gc": "g1", "httpd_proxy_protocol": "ajp", "tomcat_ajp_connector": "apr"}
    past_run(tmp_path, "20261130T100000Z-a", values, 1.3)
    past_run(tmp_path, "20261130T110000Z-b", {"tomcat_threads_max": 40, "jvm_gc": None,
                                             "httpd_proxy_protocol": "http"}, 0.8)
    past_run(tmp_path, "20261130T120000Z-c", values, 1.26, swapped=True)      # the earlier tune's replicate
    storage = f"sqlite:///{tmp_path / 'study.sqlite'}"
    for _ in range(2):      # a resumed tune: the same runs, not twice
        tuner = search.Tuner(SPACE, storage, "tune", HOLD, 0.05, past=found(tmp_path), seed=1)
    results = tuner.results()
    assert [(r.past, r.outcome.run, r.replicate_of) for r in results] == [
        (True, "20261130T100000Z-a", None), (True, "20261130T110000Z-b", None), (True, "20261130T120000Z-c", 0)]
    assert command.ran(tuner) == 0          # made before this tune: not its runs
    best = tuner.best()                     # the earlier tune's leader and its replicate: one candidate, counted
    assert best is not None and best.values == values and len(best.runs) == 2 and best.orientations == 2
    leader_values = {"tomcat_threads_max": 40, "jvm_gc": None, "httpd_proxy_protocol": "http"}
    past_run(tmp_path, "20261130T130000Z-d", {**leader_values, "tomcat_threads_max": 41}, 1.5)
    tuner = search.Tuner(SPACE, storage, "tune", HOLD, 0.05, past=found(tmp_path), seed=1)
    asked = []

    def evaluate(v, hold_s, swapped):
        asked.append((v, swapped))
        return evidence.Outcome(1.45, 1.38, 1.52, run="new", settled=True, swapped=swapped)
    tuner.step(evaluate)
    assert asked == [({**leader_values, "tomcat_threads_max": 41}, True)]   # the past leader again, swapped, first
    sampled = optuna.load_study(study_name="tune", storage=storage).get_trials()
    assert len(sampled) == 5 and all(t.state == optuna.trial.TrialState.COMPLETE for t in sampled)


def test_the_catalogs_space_is_fitted_to_a_service_of_the_users(tmp_path):
    """A tune of a Spring Boot 3 service (Tomcat 10.1, no template): the sample app's own knobs and the APR
    connector (Tomcat ≤ 9.0.113) leave the catalog's space, each said with why; the rest stays as it was."""
    from service_parts import BOOT32, boot_jar
    from service_parts import plan as jmx

    from lab.cli.commands import tune as tune_cli
    from lab.experiment import service
    boot_jar(tmp_path / "shop.jar", BOOT32, ("spring-boot-3.5.7.jar", "tomcat-embed-core-10.1.48.jar"))
    jmx(tmp_path)
    (tmp_path / "shop.yml").write_text("name: shop\njar: shop.jar\nport: 9966\nproxy_path: /shop/\nhealth: /h\n"
                                       "load: {plan: my.jmx}\n")
    opts = options.checked(service=service.load(str(tmp_path / "shop.yml")))
    catalog_space = space.from_catalog(catalog.specs())
    said = []
    fitted = tune_cli.fit(command.Plan(catalog_space, HOLD, 0.05, 3600), opts, log=said.append).space
    left = set(catalog_space.knobs) - set(fitted.knobs)
    assert left == {"app_backend_max_connections", "app_compose_pool_size", "app_compose_max_pool_size",
                    "logback_audit_appender", "tomcat_ajp_connector"}
    assert any(line.startswith("tune: tomcat_ajp_connector left out of the space") for line in said)
    assert any("template" in line for line in said if "logback_audit_appender" in line)
    assert {p.knob: p for p in fitted.params}["httpd_max_request_workers"] == \
        {p.knob: p for p in catalog_space.params}["httpd_max_request_workers"]
    study = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=2))
    for _ in range(50):
        trials.candidate(fitted.suggest(study.ask()), "default", opts.service)     # never refused
