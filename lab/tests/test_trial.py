"""Trial designs: which machine runs which configuration (A/B, A/A, crossover), the overrides that make a
machine run another configuration, and where its files land in the run folder."""
import pytest

from lab import provision, services, trial


def test_one_trial_is_an_ab_run_on_the_namesake_machines():
    [t] = trial.plan()
    assert t.kind == "ab" and not t.swapped
    assert t.overrides({}) == {"default": {}, "tuned": {}}
    assert t.targets({"default": "10.0.0.1", "tuned": "10.0.0.2"}) == {"default": "http://10.0.0.1",
                                                                         "tuned": "http://10.0.0.2"}
    assert t.record()["trial"] is None


def test_repeats_alternate_the_machines_from_the_second_trial_on():
    trials = trial.plan(repeat=4, series="S")
    assert [t.swapped for t in trials] == [False, True, False, True]
    assert [(t.number, t.of, t.series) for t in trials] == [(k, 4, "S") for k in range(1, 5)]
    swapped = trials[1]
    assert swapped.machines == {"default": "tuned", "tuned": "default"}
    assert swapped.folders() == {"tuned": "default", "default": "tuned"}   # files land under the configuration
    assert swapped.targets({"default": "a", "tuned": "b"}) == {"default": "http://b", "tuned": "http://a"}


def test_a_swap_gives_each_machine_the_other_configuration_exactly():
    tuned = trial.config_knobs("tuned")
    default = trial.config_knobs("default")
    differing = {k for k in tuned if tuned[k] != default[k]}
    assert differing, "host_vars/tuned.yml changes nothing?"
    over = trial.plan(repeat=2)[1].overrides({})
    assert set(over["default"]) == differing and set(over["tuned"]) == differing
    assert all(over["default"][k] == tuned[k] for k in differing)      # machine default runs tuned's set
    assert all(over["tuned"][k] == default[k] for k in differing)      # and machine tuned the catalog's


def test_set_values_follow_their_configuration_across_the_swap():
    sets = provision.parse_overrides(["tuned:tomcat_threads_max=222", "jvm_heap_max_mb=200"])
    straight, swapped = trial.plan(repeat=2)
    assert straight.overrides(sets)["tuned"]["tomcat_threads_max"] == 222
    assert swapped.overrides(sets)["default"]["tomcat_threads_max"] == 222
    assert swapped.overrides(sets)["tuned"]["tomcat_threads_max"] == trial.config_knobs("default")["tomcat_threads_max"]
    assert all(o["jvm_heap_max_mb"] == 200 for o in swapped.overrides(sets).values())


@pytest.mark.parametrize("config", ["default", "tuned"])
def test_aa_gives_both_machines_one_configuration(config):
    [t] = trial.plan(aa=config)
    assert t.kind == "aa" and t.configurations == {"default": config, "tuned": config}
    over = t.overrides({})
    knobs = {vm: {**trial.config_knobs(vm), **over[vm]} for vm in ("default", "tuned")}
    assert knobs["default"] == knobs["tuned"] == trial.config_knobs(config)


def test_aa_repeats_are_not_swapped():
    assert [t.swapped for t in trial.plan(repeat=3, aa="default")] == [False, False, False]


def test_bad_designs_are_refused():
    with pytest.raises(ValueError, match="--repeat"):
        trial.plan(repeat=0)
    with pytest.raises(ValueError, match="--aa"):
        trial.plan(aa="fast")


def test_service_start_times_are_read_from_systemctl_show():
    text = ("Id=mock-service.service\nActiveState=active\nActiveEnterTimestamp=Mon 2026-11-23 19:00:01 UTC\n\n"
            "Id=camel-app.service\nActiveState=active\nActiveEnterTimestamp=Mon 2026-11-23 19:00:02 UTC\n")
    assert services.parse_show(text) == {
        "mock-service": {"state": "active", "since": "Mon 2026-11-23 19:00:01 UTC"},
        "camel-app": {"state": "active", "since": "Mon 2026-11-23 19:00:02 UTC"}}
