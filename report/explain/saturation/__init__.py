"""Why a machine held or fell: the USE method (Gregg: for every resource, its Utilisation, Saturation and
Errors) over each resource on the request path — CPU, memory, JVM heap, HTTPD workers, Tomcat threads and
connections per connector, the accept queue, the backend and compose pools, conntrack, file descriptors —
and the story of which reached its limit first, then the next ones, and what followed (errors, the stop,
OOM kills, restarts, full GCs).

The table covers the measured window (after the warm-up); the story runs from the machine's first sample, so
that a machine that fell during the ramp-up is explained. The rules are in report/README.md (Saturation (USE));
the summary's section: report/render/saturation.py.

    model.py      Resource, Finding, Saturation, Series; the rules' constants and the held rule
    reader.py     one machine as the probes read it, and the rules applied to it
    probes.py     one probe per resource
    symptoms.py   what followed
"""
from __future__ import annotations

from report.explain.saturation.model import Finding, Resource, Saturation, first_held
from report.explain.saturation.probes import (
    accept_queue,
    backend_pool,
    compose_pool,
    conntrack,
    cpu,
    files,
    heap,
    httpd,
    memory,
    tomcat,
    traffic_connector,
)
from report.explain.saturation.reader import Reader
from report.explain.saturation.symptoms import symptoms
from report.read.knobs import Knobs
from report.stats.machine import Machine

__all__ = ["Finding", "Resource", "Saturation", "analyse", "first_held"]


def analyse(machine: Machine, knobs: Knobs | None = None) -> Saturation | None:
    """The Saturation of one machine; None without a time reference. knobs: the machine's
    (report/read/knobs.py read_knobs); without them every knob is unknown."""
    if machine.window is None:
        return None
    r = Reader(machine, knobs)
    result = Saturation(machine.name, machine.t0, machine.window.seconds)
    traffic, why = traffic_connector(r)
    result.traffic = f"{traffic} ({why})" if traffic else ""
    result.resources = [cpu(r), memory(r), heap(r), httpd(r), *tomcat(r, traffic), accept_queue(r),
                        backend_pool(r), compose_pool(r), conntrack(r), *files(r)]
    result.symptoms = symptoms(r)
    result.notes = r.notes
    return result
