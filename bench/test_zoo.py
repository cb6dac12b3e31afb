"""The zoo's file, its plan and its table (bench/zoo.py), with a stand-in for ./start.sh."""
import json

import pytest

from bench import zoo, zoo_table
from lab import paths
from lab.experiment import service
from lab.experiment.options import LABEL_RE
from lab.provision import catalog, knob_sets

GOOD = """members:
  a: {service: sample, stands_for: "the sample", load: {users: 150, ramp_up: 30s, steady: 2m, cap: 5m}}
  b: {service: examples/petclinic-rest, stands_for: "JPA", load: {users: 50, ramp_up: 20s, steady: 90s, cap: 4m}}
"""


def write(tmp_path, text):
    p = tmp_path / "zoo.yml"
    p.write_text(text, encoding="utf-8")
    return p


def test_the_zoo_file_reads_in_its_order_with_each_load(tmp_path):
    a, b = zoo.read_zoo(write(tmp_path, GOOD))
    assert (a.name, a.users, a.ramp_up_s, a.steady_s, a.cap_s) == ("a", 150, 30, 120, 300)
    assert b.load_argv() == ["--service", "examples/petclinic-rest", "--users", "50", "--ramp-up", "20s",
                             "--until-settled", "90s", "--duration", "240s"]


@pytest.mark.parametrize("bad, named", [
    (GOOD.replace("users: 50", "users: 0"), "members.b.load.users"),
    (GOOD.replace("steady: 90s", "steady: 30s"), "members.b.load"),
    (GOOD.replace("cap: 4m", "cap: 1m"), "members.b.load"),
    (GOOD.replace("ramp_up: 20s", "ramp_up: soon"), "members.b.load.ramp_up"),
    (GOOD.replace(', stands_for: "JPA"', ""), "members.b"),
    (GOOD.replace("cap: 4m", "cap: 4m, rate: 3"), "members.b.load"),
    ("members: []", "members:"),
    ("members: {a: [", "not valid YAML"),
])
def test_a_wrong_zoo_file_is_refused_naming_the_field(tmp_path, bad, named):
    with pytest.raises(zoo.ZooError, match=named.replace(".", r"\.")):
        zoo.read_zoo(write(tmp_path, bad))


def test_the_lab_zoo_names_descriptors_the_lab_has():
    members = zoo.read_zoo()
    assert {"sample", "testapp", "petclinic-rest", "tripbooking", "rest-jpa"} <= {m.name for m in members}
    for m in members:
        assert service.find(m.service).is_file(), m.service


def test_series_are_crossovers_of_a_set_against_default_or_aa_runs():
    m = zoo.read_zoo()[0]
    argv = zoo.series_argv(m, zoo.Variant("tuned", "tuned"), 2, "zoo-sample-tuned")
    assert argv[argv.index("--knob-set") + 1] == "tuned=tuned" and argv[argv.index("--repeat") + 1] == "2"
    aa = zoo.series_argv(m, None, 4, "zoo-sample-aa")
    assert "--aa" in aa and "--knob-set" not in aa and aa[aa.index("--repeat") + 1] == "4"
    label = zoo.label_of("a-member-with-a-rather-long-name", "article-2018", "night")
    assert LABEL_RE.fullmatch(label) and len(label) <= 40


def verdict(folder, tps, low, high, errors=0.0, intervals="random-effects (2 trials, pooled with A/A runs x)"):
    folder.mkdir(parents=True)
    effects = {"tps": {"kind": "ratio", "estimate": tps, "low": low, "high": high, "intervals": intervals},
               "error_pct": {"kind": "difference", "estimate": errors, "low": errors - 0.1, "high": errors + 0.1},
               "p99": {"kind": "ratio", "estimate": 0.9, "low": 0.8, "high": 1.0},
               "cpu": {"kind": "ratio", "estimate": 1.58, "low": 1.55, "high": 1.62}}
    (folder / "verdict.json").write_text(json.dumps({"format_version": 6, "verdict": "…", "effects": effects,
                                                     "design": {"kind": "crossover", "trials": 2}}))


@pytest.fixture
def lab(monkeypatch, tmp_path):
    """A zoo of three members (one not built) and a start.sh that writes a series folder with a verdict, or fails."""
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    monkeypatch.setattr(zoo, "built", lambda m: "jar: no such file" if m.name == "c" else None)
    calls = []
    outcomes = {"zoo-a-aa": None, "zoo-a-tuned": (0.97, 0.95, 0.99), "zoo-b-tuned": (0.54, 0.48, 0.61, 0.3)}

    def start(argv, label, log):
        calls.append(argv)
        if label == "zoo-b-aa":
            return None, 1                       # failed before it made its folder
        folder = paths.RESULTS / f"20261207T000000Z-{label}-series"
        if outcomes.get(label):
            verdict(folder, *outcomes[label])
        else:
            folder.mkdir(parents=True)
        return folder, 0
    monkeypatch.setattr(zoo, "run_series", start)
    p = write(tmp_path, GOOD + '  c: {service: testapp, stands_for: "t", load: {users: 5, ramp_up: 1s, '
                               'steady: 60s, cap: 60s}}\n')
    return p, calls


def test_the_zoo_runs_every_built_member_keeps_going_and_tables_the_verdicts(lab, capsys):
    zoo_file, calls = lab
    assert zoo.main(["--zoo", str(zoo_file), "--aa", "2"]) == 0
    assert [c[c.index("--label") + 1] for c in calls] == ["zoo-a-aa", "zoo-a-tuned", "zoo-b-aa", "zoo-b-tuned"]
    folder = next(paths.RESULTS.glob("*-bench-zoo"))
    record = json.loads((folder / "zoo.json").read_text())
    assert record["skipped"] == {"c": "jar: no such file"}
    assert record["aa_series"]["b"] == {"series": None, "exit": 1}
    a, b = record["rows"]
    assert a["effects"]["tps"] == {"estimate": 0.97, "low": 0.95, "high": 0.99}
    assert b["series"] == "20261207T000000Z-zoo-b-tuned-series" and b["effects"]["cpu"]["estimate"] == 1.58
    md = (folder / "zoo.md").read_text()
    assert ("| a | the sample | closed, 150 users, 30 s ramp-up, 120 s steady (hold ≤ 300 s) | tuned | "
            "−3.0 % (−5.0 % … −1.0 %)") in md
    assert "−46.0 %" in md and "+58.0 %" in md and "+0.00 pt (−0.10 … +0.10)" in md
    assert ("lower bound of successful TPS ≥ 0.95 on 1 of 2; clearly under 0.95 on b; clearly less than default on "
            "a, b; ≥ 1.05 on 0 of 2; errors clearly more on b.") in md
    assert "Not run: **c**: jar: no such file" in md
    assert zoo.main(["--table", str(folder / "zoo.json")]) == 0
    assert "clearly under 0.95 on b" in capsys.readouterr().out
    later = paths.RESULTS / "later.json"       # another zoo that ran c, which the first skipped
    later.write_text(json.dumps({"rows": [{**a, "member": "c"}], "skipped": {}}))
    assert zoo.main(["--table", str(folder / "zoo.json"), str(later)]) == 0
    out = capsys.readouterr().out
    assert "on 3 members" in out and "Not run" not in out


def test_a_series_without_a_verdict_is_listed_as_such(lab, monkeypatch):
    zoo_file, _ = lab
    folder = paths.RESULTS / "x"
    folder.mkdir(parents=True)
    row = zoo.row_of(zoo.read_zoo(zoo_file)[0], "tuned", folder, 3)
    assert row["effects"] is None
    assert "no verdict (start.sh exit 3)" in zoo_table.table([row])
    assert "on 0 members (a: no verdict)" in zoo_table.table([row])


def test_a_set_that_gains_everywhere_without_more_errors_is_said_so():
    rows = [{"member": m, "set": "s", "effects": {"tps": {"estimate": 1.2, "low": low, "high": 1.3},
                                                  "error_pct": {"estimate": 0.0, "low": -0.1, "high": 0.1}}}
            for m, low in (("a", 1.1), ("b", 0.96))]
    wide = {"member": "c", "set": "s", "effects": {"tps": {"estimate": 0.9, "low": 0.5, "high": 1.4}}}
    assert "on 2 of 3; not shown either way on c (the interval spans 0.95);" in zoo_table.summary("s", [*rows, wide])
    assert zoo_table.summary("s", rows) == ("**s** against default on 2 members: lower bound of successful TPS ≥ "
                                            "0.95 on every one; ≥ 1.05 on 1 of 2 (a); errors clearly more nowhere.")


@pytest.mark.parametrize("argv, says", [
    (["--sets", "nope"], "--sets/--ablate: nope: not a knob set"),
    (["--ablate", "nope"], "--sets/--ablate: nope: not a knob set"),
    (["--ablate", "default"], "--ablate: ablate: knob set default changes nothing"),
    (["--ablate", "tuned", "--tiers", "jvm,gpu"], "--tiers: gpu: not a tier tuned changes"),
    (["--tiers", "jvm"], "--tiers: the tiers of an ablation"),
    (["--members", "zz"], "--members: zz not in the zoo"),
    (["--trials", "3"], "--trials 3"),
    (["--aa", "1"], "A/A runs 0 or at least 2"),
])
def test_bad_options_change_nothing(lab, capsys, argv, says):
    zoo_file, calls = lab
    assert zoo.main(["--zoo", str(zoo_file), *argv]) == 2
    assert says in capsys.readouterr().err
    assert not calls and not paths.RESULTS.exists()


def test_an_ablation_runs_the_set_then_each_tier_back_at_the_catalog_values(lab):
    zoo_file, calls = lab
    assert zoo.main(["--zoo", str(zoo_file), "--ablate", "tuned", "--members", "a"]) == 0
    labels = [c[c.index("--label") + 1] for c in calls]
    assert labels[0] == "zoo-a-tuned" and "zoo-a-tuned-no-jvm" in labels and "zoo-a-tuned-no-httpd" in labels
    jvm = calls[labels.index("zoo-a-tuned-no-jvm")]
    sets = {jvm[i + 1] for i, x in enumerate(jvm) if x == "--set"}
    defaults = catalog.defaults()
    assert sets == {f"tuned:{k}={json.dumps(defaults[k])}" for k in knob_sets.values("tuned") if k.startswith("jvm_")}
    assert not any(x.startswith("tuned:httpd_") for x in sets), "only the tier reverted"
    assert jvm[jvm.index("--knob-set") + 1] == "tuned=tuned"
    record = json.loads(next(paths.RESULTS.glob("*-bench-zoo/zoo.json")).read_text())
    assert [r["set"] for r in record["rows"]][:2] == ["tuned", "tuned without httpd"]


def test_an_ablation_runs_only_the_tiers_asked(lab):
    zoo_file, calls = lab
    assert zoo.main(["--zoo", str(zoo_file), "--ablate", "tuned", "--tiers", "jvm,full", "--members", "a"]) == 0
    assert [c[c.index("--label") + 1] for c in calls] == ["zoo-a-tuned", "zoo-a-tuned-no-jvm"]


def test_an_aa_zoo_alone_then_a_refreshed_table_pools_its_runs(lab, monkeypatch, capsys):
    zoo_file, calls = lab
    assert zoo.main(["--zoo", str(zoo_file), "--members", "a"]) == 0      # tuned against default
    first = next(paths.RESULTS.glob("*-bench-zoo/zoo.json"))
    assert zoo.main(["--zoo", str(zoo_file), "--members", "a", "--sets", "", "--aa", "2", "--label", "aa"]) == 0
    assert [c[c.index("--label") + 1] for c in calls] == ["zoo-a-tuned", "zoo-a-aa-aa"]
    series = paths.RESULTS / "20261207T000000Z-zoo-a-tuned-series"
    record = json.loads((series / "verdict.json").read_text())
    record["trials"] = ["t1", "t2"]
    (series / "verdict.json").write_text(json.dumps(record))
    for t in ("t1", "t2"):
        (paths.RESULTS / t).mkdir()
    combined = []

    def combine(command, folder, *trials, **_):          # the report, pooling the A/A runs: a narrower interval
        combined.append((command, folder.name, [t.name for t in trials]))
        verdict(paths.RESULTS / "again", 0.97, 0.96, 0.98)
        (folder / "verdict.json").write_text((paths.RESULTS / "again" / "verdict.json").read_text())
        return 0
    monkeypatch.setattr(zoo.reporting, "report_command", combine)
    assert zoo.main(["--table", str(first)]) == 0
    assert "−3.0 % (−5.0 % … −1.0 %)" in capsys.readouterr().out and not combined
    assert zoo.main(["--table", str(first), "--refresh"]) == 0
    assert combined == [("combine", series.name, ["t1", "t2"])]
    assert "−3.0 % (−4.0 % … −2.0 %)" in capsys.readouterr().out


def test_a_row_names_the_set_that_holds_the_values_its_runs_had(lab, capsys):
    """A set's file changes after its runs (tuned re-derived): the table names what ran, not today's file."""
    def series(name, values):
        verdict(paths.RESULTS / f"{name}-series", 0.6, 0.5, 0.7)
        record = json.loads((paths.RESULTS / f"{name}-series" / "verdict.json").read_text())
        (paths.RESULTS / f"{name}-series" / "verdict.json").write_text(json.dumps({**record, "trials": [f"{name}-t1"]}))
        (paths.RESULTS / f"{name}-t1").mkdir()
        (paths.RESULTS / f"{name}-t1" / "run.json").write_text(json.dumps(
            {"git_commit": "abc1234def", "machine_overrides": {"tuned": values}}))
    emulated = knob_sets.values("tuned-emulated")
    series("old", {k: v for k, v in emulated.items() if k != "tomcat_ajp_connector"})   # the fit left APR out
    series("now", knob_sets.values("tuned"))
    series("lost", {**emulated, "jvm_gc": "zgc"})
    row = {"member": "a", "stands_for": "s", "load": "l", "set": "tuned", "exit": 0}
    rows = [{**row, "series": f"{n}-series"} for n in ("old", "now", "lost")]
    (paths.RESULTS / "z.json").write_text(json.dumps({"rows": rows, "skipped": {}}))
    assert zoo.main(["--table", str(paths.RESULTS / "z.json")]) == 0
    out = capsys.readouterr().out
    assert "| tuned-emulated (run as tuned) | −40.0 %" in out
    assert "| tuned | −40.0 %" in out and "| tuned as of abc1234 | −40.0 %" in out
