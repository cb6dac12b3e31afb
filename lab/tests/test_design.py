"""Trial designs: which machine runs which configuration (A/B, A/A, crossover), the overrides that make a
machine run another configuration, and where its files land in the run folder."""
import pytest

from lab.experiment import design, options, services
from lab.provision import catalog, knob_sets
from lab.provision.configuration import Configuration


def test_one_trial_is_an_ab_run_on_the_namesake_machines():
    [t] = design.plan()
    assert t.kind == "ab" and not t.swapped
    out_of_the_box = catalog.defaults()     # the tuned machine's own set is given to it as overrides, as data
    assert t.overrides() == {"default": {}, "tuned": {k: v for k, v in knob_sets.values("tuned").items()
                                                      if v != out_of_the_box[k]}}
    assert t.targets({"default": "10.0.0.1", "tuned": "10.0.0.2"}) == {"default": "http://10.0.0.1",
                                                                         "tuned": "http://10.0.0.2"}
    assert t.record()["trial"] is None


def test_repeats_alternate_the_machines_from_the_second_trial_on():
    trials = design.plan(repeat=4, series="S")
    assert [t.swapped for t in trials] == [False, True, False, True]
    assert [(t.number, t.of, t.series) for t in trials] == [(k, 4, "S") for k in range(1, 5)]
    swapped = trials[1]
    assert swapped.machines == {"default": "tuned", "tuned": "default"}
    assert swapped.folders() == {"tuned": "default", "default": "tuned"}   # files land under the configuration
    assert swapped.targets({"default": "a", "tuned": "b"}) == {"default": "http://b", "tuned": "http://a"}


def test_a_swap_gives_each_machine_the_other_configuration_exactly():
    tuned = Configuration("tuned").knobs()
    default = Configuration("default").knobs()
    differing = {k for k in tuned if tuned[k] != default[k]}
    assert differing, "knob_sets/tuned.yml changes nothing?"
    over = design.plan(repeat=2)[1].overrides()
    assert set(over["default"]) == differing and over["default"] == {k: tuned[k] for k in differing}
    assert over["tuned"] == {}      # machine tuned runs the catalog: Ansible gives it nothing of tuned.yml itself


def test_set_values_follow_their_configuration_across_the_swap():
    given = catalog.parse_overrides(["tuned:tomcat_threads_max=222", "jvm_heap_max_mb=200"])
    straight, swapped = design.plan(repeat=2, given=given)
    assert straight.overrides()["tuned"]["tomcat_threads_max"] == 222
    assert swapped.overrides()["default"]["tomcat_threads_max"] == 222
    assert "tomcat_threads_max" not in swapped.overrides()["tuned"], "the catalog's, as group_vars give it"
    assert all(o["jvm_heap_max_mb"] == 200 for o in swapped.overrides().values())


@pytest.mark.parametrize("config", ["default", "tuned"])
def test_aa_gives_both_machines_one_configuration(config):
    [t] = design.plan(aa=config)
    assert t.kind == "aa" and t.record()["configurations"] == {"default": config, "tuned": config}
    over = t.overrides()
    knobs = {vm: {**catalog.defaults(), **over[vm]} for vm in ("default", "tuned")}     # group_vars, then overrides
    assert knobs["default"] == knobs["tuned"] == Configuration(config).knobs()


def test_aa_repeats_are_not_swapped():
    assert [t.swapped for t in design.plan(repeat=3, aa="default")] == [False, False, False]


def test_bad_designs_are_refused():
    with pytest.raises(ValueError, match="--repeat"):
        design.plan(repeat=0)
    with pytest.raises(ValueError, match="--aa"):
        design.plan(aa="fast")


def test_service_start_times_are_read_from_systemctl_show():
    text = ("Id=mock-service.service\nActiveState=active\nActiveEnterTimestamp=Mon 2026-11-23 19:00:01 UTC\n\n"
            "Id=camel-app.service\nActiveState=active\nActiveEnterTimestamp=Mon 2026-11-23 19:00:02 UTC\n")
    assert services.parse_show(text) == {
        "mock-service": {"state": "active", "since": "Mon 2026-11-23 19:00:01 UTC"},
        "camel-app": {"state": "active", "since": "Mon 2026-11-23 19:00:02 UTC"}}


# --- named knob sets (ansible/knob_sets/) -----------------------------------------------------------------------

def test_a_knob_set_on_the_tuned_side_gives_that_machine_the_set_exactly():
    [t] = design.plan(chosen={"tuned": "article-2018"})
    assert t.record()["configurations"] == {"default": "default", "tuned": "article-2018"} and t.kind == "ab"
    over = t.overrides()
    assert over["default"] == {}
    resolved = {**catalog.defaults(), **over["tuned"]}
    assert resolved == Configuration("article-2018").knobs()
    assert resolved["tomcat_threads_min_spare"] == 300 and resolved["jvm_heap_max_mb"] == 384
    assert t.record()["configurations"]["tuned"] == "article-2018"       # run.json names the set


def test_a_knob_set_follows_its_side_across_the_swap():
    straight, swapped = design.plan(repeat=2, chosen={"tuned": "article-2018"})
    assert swapped.machines == {"default": "tuned", "tuned": "default"}
    over = swapped.overrides()
    assert {**catalog.defaults(), **over["default"]} == Configuration("article-2018").knobs()
    assert {**catalog.defaults(), **over["tuned"]} == Configuration("default").knobs()


def test_set_values_name_the_knob_set_a_side_runs():
    sets = catalog.parse_overrides(["article-2018:tomcat_threads_max=280", "jvm_gc=serial"],
                                     ["article-2018", "default"], prefixes=knob_sets.names(), what="knob set")
    [t] = design.plan(chosen={"tuned": "article-2018"}, given=sets)
    over = t.overrides()
    assert over["tuned"]["tomcat_threads_max"] == 280 and over["tuned"]["jvm_gc"] == "serial"
    assert over["default"] == {"jvm_gc": "serial"}
    with pytest.raises(ValueError, match="no machine runs the tuned configuration"):
        design.plan(chosen={"tuned": "article-2018"},
                    given=catalog.parse_overrides(["tuned:tomcat_threads_max=5"], ["article-2018", "default"],
                                                  prefixes=knob_sets.names(), what="knob set"))


def test_an_aa_run_of_a_named_set():
    [t] = design.plan(aa="article-2018")
    over = t.overrides()
    for vm in ("default", "tuned"):
        assert {**catalog.defaults(), **over[vm]} == Configuration("article-2018").knobs()


@pytest.mark.parametrize("kwargs,message", [
    ({"chosen": {"tuned": "nosuch"}},
     "sets default, article-2018, camel4, camel4-virtual, tuned, tuned-camel4, tuned-camel4-java17, tuned-emulated, "
     "tuned-nio"),
    ({"chosen": {"middle": "tuned"}}, "sides are default, tuned"),
    ({"chosen": {"tuned": "default"}}, "both sides would run default: that is an A/A run"),
    ({"chosen": {"tuned": "article-2018"}, "aa": "default"}, "--aa and --knob-set"),
    ({"aa": "nosuch"}, "--aa 'nosuch': name a knob set"),
])
def test_bad_knob_set_choices_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        design.plan(**kwargs)


def test_knob_sets_are_listed_and_checked(tmp_path, monkeypatch):
    assert knob_sets.names()[0] == "default" and {"tuned", "article-2018"} <= set(knob_sets.names())
    assert knob_sets.values("default") == {}
    assert "article" in knob_sets.about("article-2018").lower()
    assert knob_sets.parse_choice("article-2018", ("default", "tuned")) == ("tuned", "article-2018")
    assert knob_sets.parse_choice("default=tuned", ("default", "tuned")) == ("default", "tuned")
    with pytest.raises(ValueError, match="unknown knob set 'x'"):
        knob_sets.parse_choice("x", ("default", "tuned"))
    monkeypatch.setattr(knob_sets, "DIR", tmp_path)
    (tmp_path / "typo.yml").write_text("tomcat_thread_max: 3\n")
    (tmp_path / "list.yml").write_text("- a\n")
    with pytest.raises(ValueError, match="typo.yml sets knobs the catalog does not have: tomcat_thread_max"):
        knob_sets.values("typo", catalog.defaults())
    with pytest.raises(ValueError, match="list.yml: must be a mapping"):
        knob_sets.values("list")


def test_diagnose_names_each_units_state_and_the_journal_of_the_stopped_ones(monkeypatch, tmp_path):
    # the guest's command run here, with stand-ins for systemctl, journalctl and sudo and the manifest in tmp_path
    import json
    import subprocess
    (tmp_path / "manifest.json").write_text(json.dumps({"services": ["mock-service", "camel-app"]}))
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    stand_ins = {"systemctl": 'quiet=; [ "$2" = --quiet ] && { quiet=1; shift; }; '     # is-active [--quiet] UNIT
                              'state=active; [ "$2" = camel-app ] && state=failed; '
                              '[ -z "$quiet" ] && echo $state; [ $state = active ]',
                 "journalctl": 'echo "journal of $2: Error: Could not find or load main class"',
                 "sudo": '"$@"'}
    for name, body in stand_ins.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)

    def ssh(name, command, timeout=120):
        command = command.replace(str(services.paths.GUEST_MANIFEST), str(tmp_path / "manifest.json"))
        return subprocess.run(["bash", "-c", command], capture_output=True, text=True, timeout=timeout,
                              env={"PATH": f"{bin_dir}:/usr/bin:/bin"})
    monkeypatch.setattr(services.reach, "ssh", ssh)
    assert services.diagnose("tuned").splitlines() == [
        "mock-service: active", "camel-app: failed", "journal of camel-app: Error: Could not find or load main class"]


def test_the_catalog_and_each_knob_set_are_read_once_per_command(monkeypatch):
    """A run resolves its configurations about twenty times (options, every trial's overrides, its boxes, what a
    service leaves out): the catalog's file and each knob set's are read once while they stay as they were."""
    from pathlib import Path

    from lab.provision import catalog as catalog_module
    catalog_module._read.cache_clear()
    reads = []
    real = Path.read_text

    def counted(self, *args, **kwargs):
        if self.suffix == ".yml" and (self == catalog_module.CATALOG or self.parent == knob_sets.DIR):
            reads.append(self.name)
        return real(self, *args, **kwargs)
    monkeypatch.setattr(Path, "read_text", counted)
    opts = options.checked(overrides=("tuned:tomcat_threads_max=222",), repeat=2)
    for t in opts.trials():
        t.overrides(opts.service)
        t.suites(opts.service)
        for c in t.configurations.values():
            c.left_out(opts.service)
    design.own_suites()
    assert reads.count("knobs.yml") == 1, reads
    assert reads.count("tuned.yml") == 1, reads
    assert len(reads) == len(set(reads)), reads


def test_one_value_against_its_own_set_the_prefix_naming_a_side():
    # both sides start from the catalog: tuned: names the tuned side (its set's name would name both)
    opts = options.checked(knob_sets={"tuned": "default"}, overrides=("tuned:jvm_gc=parallel",))
    assert opts.configurations == {"default": Configuration("default"),
                                   "tuned": Configuration("default", {"jvm_gc": "parallel"})}
    [t] = opts.trials()
    assert t.kind == "ab" and t.given() == {"tuned": {"jvm_gc": "parallel"}}
    over = t.overrides()
    wanted = Configuration("default", {"jvm_gc": "parallel"}).knobs()
    assert {**catalog.defaults(), **over["tuned"]} == wanted
    assert over["default"] == {}
    # default: names the default side alone, a value without a prefix both
    opts = options.checked(knob_sets={"tuned": "default"},
                           overrides=("default:jvm_gc=serial", "tomcat_threads_max=150"))
    assert opts.configurations["default"].values == {"jvm_gc": "serial", "tomcat_threads_max": 150}
    assert opts.configurations["tuned"].values == {"tomcat_threads_max": 150}


@pytest.mark.parametrize("knob_sets,overrides,aa,message", [
    ({"tuned": "default"}, ("jvm_gc=parallel",), None,
     "both sides would run default with the same values: that is an A/A run .--aa default.; to measure a value"),
    ({"tuned": "default"}, ("middle:jvm_gc=parallel",), None, "unknown side 'middle' .sides: default, tuned."),
    ({}, ("tuned:jvm_gc=parallel",), "default", "no machine runs the tuned configuration in this A/A run"),
])
def test_one_set_on_both_sides_is_refused_where_nothing_tells_them_apart(knob_sets, overrides, aa, message):
    with pytest.raises(ValueError, match=message):
        options.checked(knob_sets=knob_sets, overrides=overrides, aa=aa)
