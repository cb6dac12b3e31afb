"""The machines' lines beside the verdict (issue 41): the box each side ran (its Debian suite and Java) when the
two differ — a comparison across boxes compares everything on them, not the knobs alone — and, per configuration,
what its knob set became on the line the run moved it to (run.json service.upgrade, lab/provision/lines.py): the
knobs that vanished there, changed meaning, or became mandatory, and what the lab measured of that move."""
from __future__ import annotations

from report.read.runinfo import RunInfo, boxes

SUITE_JAVA = {"bookworm": 17, "trixie": 21}     # the boxes' own OpenJDK (lab/machines/box.py SUITES, as recorded)


def box_words(suite: str) -> str:
    java = SUITE_JAVA.get(suite)
    return f"{suite} (OpenJDK {java})" if java else suite


def line_lines(run: RunInfo) -> list[str]:
    """Markdown lines for the summary, right under the verdict; [] when the sides ran one box and no set moved."""
    out = []
    ran = boxes(run)
    if len(set(ran.values())) > 1:
        out.append("**Across boxes:** " + ", ".join(f"the {side} column ran {box_words(suite)}"
                                                     for side, suite in sorted(ran.items()))
                   + ". The verdict compares everything on them (Debian, kernel, JVM, HTTPD, Python), not the "
                   "knobs alone; no A/A run calibrates a pair of boxes, so the interval is the run's own (an A/A "
                   "of each box says how far its twins differ).")
        out.append("")          # a paragraph of its own (Markdown joins adjacent lines)
    svc = run.get("service", default=None) or {}
    for config, found in sorted(((svc.get("upgrade") or {}) if isinstance(svc, dict) else {}).items()):
        if not isinstance(found, dict):
            continue
        out += [f"**Upgrade of {config}** from {found.get('from', '?')} to {found.get('to', '?')}:", ""]
        said = False
        for title, key in (("vanished", "vanished"), ("changes meaning", "changed"), ("mandatory", "mandatory")):
            for knob, why in sorted((found.get(key) or {}).items()):
                out.append(f"- {title}: `{knob}`: {why}")
                said = True
        if not said:
            out.append("- every knob of its set means there what it meant")
        if found.get("measured"):
            out.append(f"- measured by the lab: {found['measured']}")
        out.append("")
    return out
