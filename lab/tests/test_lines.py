"""The lines a knob lives on (issue 41): the catalog's rules per line and per Java, validation on each line, and
the upgrade question (lab/provision/lines.py): what a knob set written for Camel 3 on Java 17 becomes on Camel 4 on
Java 21, with a service of two builds made here (Boot 2.7 / Tomcat 9 and Boot 3.5 / Tomcat 10.1)."""
from __future__ import annotations

import pytest
from service_parts import BOOT2, BOOT32, boot_jar

from lab.experiment import design, service
from lab.machines import box
from lab.provision import catalog, knob_sets, lines, service_fit
from lab.provision.configuration import Configuration


@pytest.fixture
def two(tmp_path):
    boot_jar(tmp_path / "old.jar", BOOT2, ("spring-boot-2.7.3.jar", "tomcat-embed-core-9.0.83.jar"))
    boot_jar(tmp_path / "new.jar", BOOT32, ("spring-boot-3.5.7.jar", "tomcat-embed-core-10.1.48.jar"))
    (tmp_path / "two.yml").write_text("name: two\nstacks: {camel3: old.jar, camel4: new.jar}\nhealth: /h\n")
    return service.load(str(tmp_path / "two.yml"))


def test_every_line_and_under_rule_of_the_catalog_names_a_line_or_a_bool_knob():
    specs = catalog.specs()
    for name, spec in specs.items():
        assert set(spec.get("lines") or {}) <= set(lines.LINES), name
        for knob in spec.get("under") or {}:
            assert specs[knob]["type"] == "bool", (name, knob)
    # what moves under virtual threads: the thread pools they replace
    assert {k for k, s in specs.items() if "app_virtual_threads" in (s.get("under") or {})} >= {
        "tomcat_threads_max", "tomcat_threads_min_spare", "app_compose_pool_size", "app_compose_max_pool_size"}


def test_a_value_a_line_lacks_is_refused_naming_why(two):
    specs = catalog.specs()
    assert service_fit.misfit("tomcat_ajp_connector", "apr", two, "camel3", specs, 17) is None
    assert "Tomcat ≤ 9.0.113" in service_fit.misfit("tomcat_ajp_connector", "apr", two, "camel4", specs, 21)
    assert service_fit.misfit("app_virtual_threads", True, two, "camel4", specs, 21) is None
    assert service_fit.misfit("app_virtual_threads", False, two, "camel3", specs, 17) is None
    on_java_17 = service_fit.misfit("app_virtual_threads", True, two, "camel4", specs, 17)
    assert "needs jvm_version ≥ 21" in on_java_17 and "Java 17" in on_java_17
    assert "Spring Boot ≥ 3.2" in service_fit.misfit("app_virtual_threads", True, two, "camel3", specs, 21)


def test_a_typed_value_is_refused_on_its_line_a_sets_value_left_out(two):
    with pytest.raises(ValueError, match="app_virtual_threads=true needs jvm_version ≥ 21"):
        Configuration("default", {"app_stack": "camel4", "app_virtual_threads": True}).knobs(two)
    ok = Configuration("default", {"app_stack": "camel4", "app_virtual_threads": True,
                                                     "jvm_version": 21}).knobs(two)
    assert ok["app_virtual_threads"] is True and ok["jvm_version"] == 21
    # the lab's virtual-thread set on Java 17: its value is left out, with why
    left = Configuration("camel4-virtual", {"jvm_version": 17}).left_out(two)
    assert "needs jvm_version ≥ 21" in left["app_virtual_threads"]


def test_each_configuration_asks_for_the_box_of_its_java(two):
    configured = {"default": Configuration("tuned"), "tuned": Configuration("tuned-camel4")}
    assert design.Trial(configurations=configured).suites(two) == {"default": "bookworm", "tuned": "trixie"}
    swapped = design.Trial(configurations=configured, machines={"default": "tuned", "tuned": "default"})
    assert swapped.suites(two) == {"default": "trixie", "tuned": "bookworm"}
    assert set(box.SUITES.values()) == {"bookworm", "trixie"}


def test_the_tuned_set_moved_to_camel4_says_what_vanished_changed_and_became_mandatory(two):
    moved = lines.upgrade(Configuration("tuned", {"app_stack": "camel4", "jvm_version": 21,
                                                  "app_virtual_threads": True}), two)
    assert moved["from"] == "boot2 on Java 17" and moved["to"] == "boot3 on Java 21"
    assert set(moved["vanished"]) == {"tomcat_ajp_connector"}
    assert "Tomcat ≤ 9.0.113" in moved["vanished"]["tomcat_ajp_connector"]
    assert {"tomcat_threads_max", "tomcat_threads_min_spare", "app_tasks_max"} <= set(moved["changed"])
    assert "no pool" in moved["changed"]["tomcat_threads_max"]
    assert moved["mandatory"]["tomcat_ajp_connector"].startswith("one of nio, nio2 on boot3")
    assert "app_virtual_threads=true needs it" in moved["mandatory"]["jvm_version"]
    words = "\n".join(lines.words("tuned", moved))
    assert "vanished: tomcat_ajp_connector" in words and "mandatory: jvm_version" in words
    # what the lab measured of this move, said with it (docs/methods.md holds the runs)
    assert moved["measured"] == lines.MEASURED[("boot2", "boot3")]
    assert f"measured by the lab: {moved['measured']}" in words


def test_a_set_made_on_another_says_what_it_replaced(two):
    assert knob_sets.origin("tuned-camel4") == "tuned" and knob_sets.origin("camel4-virtual") == "camel4"
    moved = lines.upgrade(Configuration("tuned-camel4"), two)
    assert moved["vanished"]["tomcat_ajp_connector"].endswith("replaced by nio")
    assert "tomcat_ajp_connector" not in moved["mandatory"]
    # no other line, no upgrade: platform against virtual threads on camel4, or camel3 against camel3
    assert lines.upgrade(Configuration("camel4-virtual"), two) is None
    assert lines.upgrade(Configuration("tuned", {"jvm_gc": "serial"}), two) is None


def test_a_base_set_that_leads_back_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(knob_sets, "DIR", tmp_path)
    (tmp_path / "a.yml").write_text("base: b\njvm_gc: g1\n")
    (tmp_path / "b.yml").write_text("base: a\n")
    (tmp_path / "c.yml").write_text("base: nowhere\n")
    with pytest.raises(ValueError, match="lead back to a"):
        knob_sets.values("a")
    with pytest.raises(ValueError, match="base 'nowhere' is not a knob set"):
        knob_sets.values("c")
