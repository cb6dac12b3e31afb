"""Turns run folders of the Camel Tuning Lab into reports (see README.md): `python -m report run RUN_FOLDER` writes
its report.html, summary.md and verdict.json; `compare`, `combine`, `sweep` and `overhead` read several.

Reads run folders only (run.json, <machine>/jmeter.jtl, <machine>/pcp/metrics.csv, <machine>/logs/, the run's
knobs-catalog.json); it never imports the lab package, so it works on any old or copied run folder.

Layers, each a subpackage importing only those below it: commands → render → explain → stats → read.
The public API below is imported on first use (`import report` stays light: no matplotlib, no scipy).
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

from runfolder import SIDES as MACHINES  # the run folder's halves, declared once

_PUBLIC = {
    "RunInfo": "report.read.runinfo",
    "read_jtl": "report.read.jtl",
    "read_metrics": "report.read.pcp",
    "Machine": "report.stats.machine",
    "load_machine": "report.stats.machine",
    "CHARTS": "report.render.panels",
    "build_report": "report.commands.run",
}
__all__ = ["MACHINES", *_PUBLIC]


def __getattr__(name: str) -> Any:
    if name in _PUBLIC:
        return getattr(import_module(_PUBLIC[name]), name)
    raise AttributeError(f"module 'report' has no attribute {name!r}")
