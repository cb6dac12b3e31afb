"""A knob is defined once (ansible/knobs.yml): what is generated from it is current, every knob is read by
a role, and every knob-like name a role reads is declared somewhere. --set values are what JSON holds, and
--insist-memory reaches the validation."""
import io
import json

import pytest
import yaml

from lab import cli
from lab.experiment import options, run
from lab.machines import settings
from lab.provision import catalog, knob_sets, knobs, playbook, role_names


def test_generated_files_are_current():
    assert not knobs.stale(), ("generated from ansible/knobs.yml but stale: "
                               f"{[str(p) for p in knobs.stale()]}; "
                               "run .venv/bin/python -m lab.provision.knobs --write")


def test_every_knob_is_read_by_a_role():
    assert not knobs.unused(), f"knobs in ansible/knobs.yml that no role reads: {knobs.unused()}"


def test_every_knob_like_name_a_role_reads_is_declared():
    assert not knobs.undeclared(), ("names read by a role that are neither knobs (ansible/knobs.yml), lab "
                                    f"variables nor the role's own: {knobs.undeclared()}")


def test_every_knob_says_what_it_does_and_where_it_lands():
    for name, spec in catalog.specs().items():
        assert role_names.TIERED.match(name), name
        assert spec.get("what") and spec.get("lands") and spec.get("type"), name
        assert spec.get("inventory") or "default" in spec, f"{name} has no default"
        if spec.get("default") is None and not spec.get("inventory"):
            assert "unset" in spec, f"{name} defaults to null but does not say what null means (unset:)"


def test_every_knob_set_sets_only_catalog_knobs():
    """Catalog knobs, and the set it is made on (base:, lab/provision/knob_sets.py), one that exists."""
    files = sorted(knobs.KNOB_SETS.glob("*.yml"))
    assert {p.stem for p in files} >= {"tuned", "article-2018", "tuned-camel4"}
    for path in files:
        values = yaml.safe_load(path.read_text()) or {}
        assert values and set(values) - {knob_sets.BASE} <= set(catalog.specs()), path.name
        assert values.get(knob_sets.BASE, "tuned") in knob_sets.names(), path.name


# --- the scanner, on a made-up role: each check fails when it should --------------------------------------------

CATALOG = """
tomcat:
  about: the connector
  knobs:
    tomcat_threads_max: {default: 200, type: int, range: [1, 5000], what: maxThreads, lands: server.tomcat.threads.max}
    tomcat_accept_count: {default: 100, type: int, range: [1, 65535], what: accept queue, lands: accept-count}
jvm:
  knobs:
    jvm_gc: {default: null, type: str, unset: ergonomics, choices: [serial, g1], what: collector, lands: jvm.options}
    jvm_tier: {default: null, type: int, unset: C1+C2, choices: {1: C1 only}, what: JIT, lands: jvm.options}
    tomcat_keep: {default: 100, type: int, range: [1, 100000], also: {-1: unlimited}, what: keep, lands: x}
"""


@pytest.fixture
def roles(tmp_path, monkeypatch):
    """A roles/ folder with one role, `app`, that reads two of the made-up catalog's knobs."""
    app = tmp_path / "roles" / "app"
    for folder in ("meta", "defaults", "tasks", "templates"):
        (app / folder).mkdir(parents=True)
    (app / "meta" / "main.yml").write_text("galaxy_info: {description: the app}\n")
    (app / "defaults" / "main.yml").write_text("app_home: /opt/app\n")
    (app / "tasks" / "main.yml").write_text(
        "- name: Configure\n  ansible.builtin.template: {src: a.j2, dest: '{{ app_home }}/a'}\n"
        "  when: jvm_gc is not none and 'tomcat_in_a_string' != ''\n"
        "- name: Keep\n  ansible.builtin.set_fact: {app_port: 1}\n")
    (app / "templates" / "a.j2").write_text(
        "threads={{ tomcat_threads_max }} port={{ app_port }} {% if jvm_tier %}x{% endif %}"
        "{% set app_local = 1 %}{{ app_local }} keep={{ tomcat_keep }} tomcat_not_jinja\n")
    monkeypatch.setattr(knobs, "ROLES", tmp_path / "roles")
    monkeypatch.setattr(knobs, "LAB_VARS", tmp_path / "lab.yml")
    (tmp_path / "lab.yml").write_text("lab_secret: x\n")
    return app


def test_names_are_found_in_jinja_and_in_raw_expressions_only(roles):
    assert role_names.references(roles) == {"app_home", "jvm_gc", "tomcat_threads_max", "app_port", "jvm_tier",
                                       "app_local", "tomcat_keep"}
    assert role_names.role_definitions(roles) == {"app_home", "app_port", "app_local"}


def test_a_knob_no_role_reads_is_found(roles):
    assert knobs.unused(catalog.specs(CATALOG)) == ["tomcat_accept_count"]


def test_a_misspelt_knob_in_a_template_is_found(roles):
    template = roles / "templates" / "a.j2"
    template.write_text(template.read_text() + "{{ tomcat_threads_maxx }}\n")
    assert knobs.undeclared(catalog.specs(CATALOG)) == {"app": ["tomcat_threads_maxx"]}


def test_another_roles_variable_is_a_hidden_tie(roles):
    (roles / "templates" / "b.j2").write_text("{{ httpd_proxy_path }}\n")
    assert knobs.undeclared(catalog.specs(CATALOG)) == {"app": ["httpd_proxy_path"]}


def test_argument_specs_list_the_knobs_a_role_reads(roles):
    spec = yaml.safe_load(knobs.render_argument_specs(roles, catalog.specs(CATALOG)))["argument_specs"]["main"]
    assert spec["short_description"] == "the app"
    assert list(spec["options"]) == ["jvm_gc", "jvm_tier", "tomcat_keep", "tomcat_threads_max"]
    assert spec["options"]["tomcat_threads_max"]["description"] == "maxThreads; 1–5000; server.tomcat.threads.max"


def test_valid_values_are_written_from_the_spec():
    known = catalog.specs(CATALOG)
    assert knobs.values_text(known["jvm_gc"]) == "null (ergonomics) | serial | g1"
    assert knobs.values_text(known["jvm_tier"]) == "null (C1+C2) | 1 (C1 only)"
    assert knobs.values_text(known["tomcat_keep"]) == "-1 (unlimited) | 1–100000"


def test_defaults_file_holds_every_value_with_its_comment():
    text = knobs.render_defaults(CATALOG)
    assert yaml.safe_load(text) == {"tomcat_threads_max": 200, "tomcat_accept_count": 100, "jvm_gc": None,
                                    "jvm_tier": None, "tomcat_keep": 100}
    assert "jvm_gc: null" in text and "# collector; null (ergonomics) | serial | g1; jvm.options" in text


def test_readme_table_shows_each_sets_values_where_they_differ():
    text = knobs.readme_table({"tuned": {"jvm_gc": "g1", "tomcat_threads_max": 200},
                               "article-2018": {"tomcat_threads_max": 300}}, CATALOG)
    assert "| knob | default | tuned | article-2018 | what; values; where it lands |" in text
    assert "| `jvm_gc` | `null` | `g1` |  | collector; null (ergonomics) \\| serial \\| g1; jvm.options |" in text
    assert "| `tomcat_threads_max` | `200` |  | `300` | maxThreads; 1–5000; server.tomcat.threads.max |" in text


def test_set_knob_missing_from_catalog_is_refused():
    with pytest.raises(ValueError, match="article-2018.yml sets knobs the catalog does not have: jvm_typo"):
        knobs.readme_table({"article-2018": {"jvm_typo": 1}}, CATALOG)


def test_readme_without_markers_is_refused():
    with pytest.raises(ValueError, match="knobs:begin"):
        knobs.readme_with("# no markers\n", "table\n")


def test_a_catalog_entry_without_its_description_is_refused_by_name():
    broken = CATALOG.replace("what: maxThreads, ", "")
    with pytest.raises(ValueError, match="knob tomcat_threads_max lacks what"):
        catalog.specs(broken)


# --- --set values are what JSON holds (Ansible gets them as JSON, run.json records them) -------------------------

def test_a_date_for_a_text_knob_is_the_text_as_typed():
    sets = catalog.parse_overrides(["tuned:base_timezone=2024-01-01", "default:base_timezone= 2024-01-01T10:00:00Z"])
    assert sets == {"default": {"base_timezone": "2024-01-01T10:00:00Z"}, "tuned": {"base_timezone": "2024-01-01"}}


def test_a_run_with_a_date_for_a_text_knob_records_it():
    """The run's design and run.json take the --set values as JSON: a YAML date once crashed them (a traceback)."""
    opts = options.checked(overrides=["tuned:base_timezone=2024-01-01"])
    overrides = opts.trials()[0].overrides()
    assert overrides["tuned"]["base_timezone"] == "2024-01-01"
    assert json.loads(json.dumps(overrides)) == overrides


@pytest.mark.parametrize("item,says", [
    ("tuned:jvm_extra_options=[-Xss512k, 2024-01-01]", "YAML reads 2024-01-01 as a date"),
    ("tomcat_threads_max=2024-01-01", "YAML reads 2024-01-01 as a date"),
    ("default:base_sysctl={2024-01-01: 1}", "YAML reads 2024-01-01 as a date"),
    ("tuned:base_sysctl={kernel.hostname: 2024-01-01 10:00:00}", "as a date and time"),
    ("mock_error_rate=.nan", "YAML reads .nan as a number JSON cannot hold"),
    ("tuned:mock_error_rate=-.inf", "YAML reads -.inf as a number JSON cannot hold"),
    ("jvm_extra_options=!!set {-server}", "as a set"),
])
def test_a_value_json_cannot_hold_is_refused_naming_the_item(item, says):
    with pytest.raises(ValueError) as refused:
        catalog.parse_overrides([item])
    assert str(refused.value).startswith(f"--set {item!r}: "), refused.value
    assert says in str(refused.value) and "write it in quotes" in str(refused.value), refused.value


# --- --insist-memory: from the command line to the validation play and site.yml ----------------------------------

BEYOND = ["tuned:jvm_heap_max_mb=400"]      # ~524 MB by the estimate on a 512 MB machine


@pytest.mark.parametrize("argv", [["--insist-memory"], ["provision", "--insist-memory"], ["--insist-memory", "ablate"],
                                  ["sweep", "tomcat_threads_max=100,200", "--insist-memory"]])
def test_insist_memory_is_an_option_of_runs_and_provision(argv):
    p = cli.parser()
    args = p.parse_args(argv)
    assert args.insist_memory is True and not cli.contradictions(args, p)
    if args.command != "provision":
        assert cli.run_options(args).insist_memory is True
    up = p.parse_args(["--insist-memory", "up"])
    assert cli.contradictions(up, p) == ["--insist-memory is a run option: it does nothing with `./start.sh up`"]


def test_memory_beyond_the_machine_is_refused_unless_the_run_insists():
    """run.validate → playbook.validate → ansible/validate.yml on this host (no machine): refused, exit 2's
    ValueError naming the estimate and the knob; with insist_memory the same knobs pass."""
    s = settings.load()
    with pytest.raises(ValueError) as refused:
        run.validate(options.checked(overrides=BEYOND), s)
    said = str(refused.value)
    assert "tuned: by the lab's estimate these knobs need ~" in said and f"MB on a {s.memory_mb} MB machine" in said
    assert "heap 400 MB = jvm_heap_max_mb" in said and "--insist-memory" in said
    run.validate(options.checked(overrides=BEYOND, insist_memory=True), s)


def test_provisioning_passes_insist_memory_to_site_yml(monkeypatch, tmp_path):
    """site.yml validates again: playbook.run gives it lab_insist_memory as a JSON boolean (a key=value extra var
    would be the string "true"), and nothing when the run does not insist."""
    commands = []

    class Done:
        returncode = 0
        stdout = iter(["PLAY RECAP\n"])

        def wait(self):
            return 0

    (tmp_path / playbook.profiler.LIBRARY).write_bytes(b"agent")
    (tmp_path / "app.jar").write_bytes(b"jar")
    monkeypatch.setattr(playbook.knobs, "write_stale", lambda: [])
    monkeypatch.setattr(playbook, "STAMP", tmp_path / "provisioned.json")
    monkeypatch.setattr(playbook, "OVERRIDES", tmp_path / "overrides.json")
    monkeypatch.setattr(playbook.profiler, "ensure", lambda log=print: tmp_path)
    monkeypatch.setattr(playbook.app_jars, "ensure_kit", lambda log=print: tmp_path / "app.jar")
    monkeypatch.setattr(playbook.scope, "machine_ids", lambda: {"default": "d", "tuned": "t"})
    monkeypatch.setattr(playbook, "write_inventory", lambda resolved: tmp_path / "inventory.yml")
    monkeypatch.setattr(playbook.paths, "LOG_DIR", tmp_path / "log")
    monkeypatch.setattr(playbook.subprocess, "Popen", lambda command, **kw: commands.append(command) or Done())
    quiet = dict(log=lambda *a: None, out=io.StringIO())
    playbook.run({"memory_mb": 512}, {}, insist_memory=True, **quiet)
    playbook.run({"memory_mb": 512}, {}, **quiet)
    insisted, plain = (" ".join(c) for c in commands)
    assert '-e {"lab_insist_memory": true}' in insisted and "lab_insist_memory" not in plain

