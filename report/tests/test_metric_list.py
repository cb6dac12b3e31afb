"""One metric list (ansible/roles/pcp/vars/main.yml: pcp_metrics) is what pmlogger logs, what the lab
exports to metrics.csv and what the report may read: every PCP metric name in report/ must be exported."""
import ast
import re
from pathlib import Path

import yaml

REPORT = Path(__file__).resolve().parent.parent
METRIC_LIST = REPORT.parent / "ansible" / "roles" / "pcp" / "vars" / "main.yml"
PCP_NAME = re.compile(r"^(hinv|kernel|mem|swap|disk|network|hotproc|apache|openmetrics)\.[A-Za-z0-9_.]+[A-Za-z0-9]$")


def exported() -> set[str]:
    return {m for leaves in yaml.safe_load(METRIC_LIST.read_text())["pcp_metrics"].values() for m in leaves}


def older_runs_only() -> set[str]:
    """What the report reads from older run folders only (pcp_older_runs_only), never exported now."""
    return set(yaml.safe_load(METRIC_LIST.read_text())["pcp_older_runs_only"])


def names_in(source: str) -> set[str]:
    return {node.value for node in ast.walk(ast.parse(source))
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and PCP_NAME.match(node.value)}


def read_by_report() -> dict[str, set[str]]:
    """Every module of report/ (its tests aside): module path -> the PCP names it holds."""
    return {str(p.relative_to(REPORT)): names_in(p.read_text()) for p in REPORT.rglob("*.py")
            if "tests" not in p.relative_to(REPORT).parts}


def test_every_metric_the_report_reads_is_exported():
    wanted = exported() | older_runs_only()
    missing = {module: sorted(names - wanted) for module, names in read_by_report().items() if names - wanted}
    assert not missing, f"the report reads metrics the lab does not export (add them to {METRIC_LIST}): {missing}"


def test_the_report_reads_the_metrics_it_charts():
    """Guards the check above: the scan finds the charts' metric names (a scan that finds none passes anything)."""
    found = set().union(*read_by_report().values())
    assert {"kernel.all.cpu.user", "openmetrics.app.jvm_gc_pause_seconds_sum", "hotproc.psinfo.rss",
            "mem.util.swapTotal"} <= found


def test_an_older_runs_metric_is_not_exported_any_more():
    assert older_runs_only() and not older_runs_only() & exported()


def test_a_metric_nobody_exports_is_caught():
    assert names_in('series("kernel.all.cpu.nice")') - exported() == {"kernel.all.cpu.nice"}


def test_each_logged_name_is_a_group_or_the_metric_it_exports():
    for logged, leaves in yaml.safe_load(METRIC_LIST.read_text())["pcp_metrics"].items():
        assert all(m == logged or m.startswith(logged + ".") for m in leaves), logged
