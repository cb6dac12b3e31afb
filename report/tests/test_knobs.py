"""Knob values (report/read/knobs.py): the machine's own, else the run's snapshot of the knob catalog, else unknown
— never a default of the report's own."""
from __future__ import annotations

import json
import math

from report.read.knobs import Knobs, machine_knobs, read_catalog
from report.tests.catalog import snapshot, write_snapshot

CATALOG = {"source": "ansible/knobs.yml",
           "defaults": {"tomcat_threads_max": 200, "httpd_max_request_workers": None, "jvm_heap_max_mb": None,
                        "jvm_gc_log": False},
           "unset": {"httpd_max_request_workers": "150", "jvm_heap_max_mb": "ergonomics: 1/4 of RAM"}}


def run_folder(tmp_path, catalog=CATALOG, own=None, run_knobs=None):
    (tmp_path / "default" / "config").mkdir(parents=True)
    if catalog is not None:
        (tmp_path / "knobs-catalog.json").write_text(json.dumps(catalog))
    if own is not None:
        (tmp_path / "default" / "config" / "knobs.json").write_text(json.dumps(own))
    if run_knobs is not None:
        (tmp_path / "run.json").write_text(json.dumps({"machines": {"default": {"knobs": run_knobs}}}))
    return tmp_path / "default"


def test_the_machines_own_value_then_the_catalogs_default(tmp_path):
    knobs = machine_knobs(run_folder(tmp_path, own={"tomcat_threads_max": 50}))
    assert knobs.number("tomcat_threads_max") == (50, "knob tomcat_threads_max")
    assert knobs.value("jvm_gc_log") is False
    knobs = machine_knobs(run_folder(tmp_path / "b", own={}))
    assert knobs.number("tomcat_threads_max") == (200, "default: tomcat_threads_max unset")


def test_run_json_names_the_knobs_of_a_machine_without_knobs_json(tmp_path):
    knobs = machine_knobs(run_folder(tmp_path, run_knobs={"tomcat_threads_max": 75}))
    assert knobs.number("tomcat_threads_max") == (75, "knob tomcat_threads_max")


def test_a_null_knob_takes_the_catalogs_words_when_they_are_a_number(tmp_path):
    knobs = machine_knobs(run_folder(tmp_path, own={"httpd_max_request_workers": None, "jvm_heap_max_mb": None}))
    assert knobs.number("httpd_max_request_workers") == (150, "default: httpd_max_request_workers unset")
    heap = knobs.knob("jvm_heap_max_mb")
    assert not heap.known and heap.source == "unknown: jvm_heap_max_mb unset (ergonomics: 1/4 of RAM)"


def test_without_a_catalog_snapshot_a_knob_the_machine_does_not_set_is_unknown(tmp_path):
    knobs = machine_knobs(run_folder(tmp_path, catalog=None, own={"tomcat_threads_max": 50}))
    value, source = knobs.number("tomcat_accept_count")
    assert math.isnan(value)
    assert source == "unknown: tomcat_accept_count unset and the run folder has no knobs-catalog.json"
    assert Knobs({}, read_catalog(tmp_path)).knob("pcp_interval_s").source.startswith("unknown:")
    knobs = machine_knobs(run_folder(tmp_path / "b", own={}))
    assert knobs.knob("no_such_knob").source == "unknown: no_such_knob unset and not in knobs-catalog.json"


def test_the_snapshot_made_from_the_catalog_reads_back(tmp_path):
    write_snapshot(tmp_path)
    catalog = read_catalog(tmp_path)
    assert catalog is not None and catalog.source == "ansible/knobs.yml"
    assert catalog.defaults == snapshot()["defaults"] and "pcp_interval_s" in catalog.defaults
    assert read_catalog(tmp_path / "absent") is None
