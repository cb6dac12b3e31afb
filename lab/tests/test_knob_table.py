"""The README's knob table is the catalog's: every knob, its default, the tuned value; never stale."""
import pytest
import yaml

from lab import knob_table


def test_readme_table_is_current():
    readme = knob_table.README.read_text()
    assert knob_table.readme_with(readme, knob_table.current_table()) == readme, \
        "README.md's knob table is stale: run .venv/bin/python -m lab.knob_table --write"


def test_every_catalog_knob_has_a_row_and_a_comment():
    catalog = yaml.safe_load(knob_table.CATALOG.read_text())
    text = knob_table.current_table()
    knobs = [k for k in catalog if k not in ("lab_secrets_dir", "lab_ajp_secret", "ansible_managed")]
    missing = [k for k in knobs if f"| `{k}` |" not in text]
    assert not missing, f"knobs without a one-line comment in group_vars/all.yml: {missing}"


def test_tuned_values_show_where_they_differ():
    catalog = "# --- jvm ---\njvm_gc: null   # collector; null | g1\njvm_gc_log: false   # GC log; true | false\n"
    text = knob_table.table(catalog, {"jvm_gc": "g1", "jvm_gc_log": False})
    assert "| `jvm_gc` | `null` | `g1` | collector; null \\| g1 |" in text
    assert "| `jvm_gc_log` | `false` |  | GC log; true \\| false |" in text


def test_tuned_knob_missing_from_catalog_is_refused():
    with pytest.raises(ValueError, match="jvm_typo"):
        knob_table.table("# --- jvm ---\njvm_gc: null   # collector\n", {"jvm_typo": 1})


def test_readme_without_markers_is_refused():
    with pytest.raises(ValueError, match="knobs:begin"):
        knob_table.readme_with("# no markers\n", "table\n")
