"""The lines a knob lives on (issue 41): what a knob set written on one line becomes on another.

A line is what a machine runs beneath the knobs: its build's Spring Boot line (LINES: boot2 = Spring Boot 2.7 with
Tomcat 9 and Camel 3, boot3 = Spring Boot 3 with Tomcat 10.1 and Camel 4) and its Java (the knob jvm_version). The
catalog (ansible/knobs.yml) says, per knob, where it differs: `needs: {value: {tomcat_max, boot_min, java_min}}`
(a value that does not exist on a line: service_fit refuses it, or leaves it out of a knob set), `lines: {line:
meaning}` (what it means there) and `under: {knob: meaning}` (what it means while that bool knob is on: the thread
pools under virtual threads).

upgrade() answers the migration question for one configuration: its knob set was written for the build and Java its
own values choose (tuned.yml: camel3 on Java 17); this run's --set values move it (app_stack=camel4,
jvm_version=21). It says which of the set's knobs vanish there (left out, and why), which change meaning, and which
become mandatory (what the new line needs the set did not say), before the run and beside its verdict.
"""
from __future__ import annotations

from lab.provision import catalog, knob_sets, service_fit

LINES = {"boot2": "Spring Boot 2.7, Tomcat 9, Camel 3 (javax)",
         "boot3": "Spring Boot 3, Tomcat 10.1, Camel 4 (jakarta)"}

# What the lab measured of a move between lines, said before the run and beside its verdict; the runs, their load
# and machines are in docs/methods.md ("The migration, step by step"), which this text must match.
MEASURED = {("boot2", "boot3"): (
    "on native containers (150 users) the line alone (Camel 4.18, Spring Boot 3.5, Tomcat 10.1; Java 17) cost +53 % "
    "JVM CPU per request (95 % CI +46 … +60 %) and +18 % median latency (+16 … +21 %): Camel 4.4+ looks a String → "
    "enum conversion up anew on every camel-http call that sets CamelHttpMethod as a String (30 % of the JVM's "
    "CPU); a CPU-bound machine pays it in throughput (up to a third fewer requests per core). Setting the header as "
    "camel-http's HttpMethods avoids it (the sample app: app_backend_method_as_enum=true). Java 21 (trixie) added "
    "+14 % CPU (+8.4 … +19 %). docs/methods.md, the migration step by step")}


def line_of(facts) -> str:
    """The line of a build (jarinfo.JarFacts): boot2 for Spring Boot 2.x, boot3 for 3.x (the lab takes no other)."""
    return "boot2" if facts.boot_line.startswith("2") else "boot3"


def _on(values: dict) -> dict:
    """The machine-wide facts of a configuration the lines depend on: its app_stack and Java."""
    return {"app_stack": values["app_stack"], "jvm_version": int(values["jvm_version"])}


def meaning(spec: dict, line: str, values: dict) -> str | None:
    """What a knob means on that line with those values (its `lines:` entry, then any `under:` knob that is on);
    None where it means what its `what:` says."""
    said = [f"on {line}: {spec['lines'][line]}"] if line in (spec.get("lines") or {}) else []
    said += [f"with {knob}=true: {text}" for knob, text in (spec.get("under") or {}).items()
             if values.get(knob) is True]
    return "; ".join(said) or None


def upgrade(config, service) -> dict | None:
    """What the configuration's knob set becomes on the line it is moved to (config: a Configuration), or None when
    it moves to no other line (no other build's Spring Boot line, no other Java). It was written for the line its
    origin set's values choose (its origin: tuned, on camel3 and Java 17); the values given on top of it (this run's
    --set), or the `base:` set made from it (tuned-camel4),
    move it: {from, to: "boot2 on Java 17"…, vanished: {knob: why (and what replaced it)}, changed: {knob: meaning
    there}, mandatory: {knob: why}}."""
    specs, out_of_the_box = catalog.specs(), catalog.defaults()
    first = knob_sets.values(knob_sets.origin(config.base), out_of_the_box)
    old = {**out_of_the_box, **first}
    target = {**out_of_the_box, **knob_sets.values(config.base, out_of_the_box), **config.values}
    before, after = _on(old), _on(target)
    if before == after:
        return None
    lines = {side: line_of(service.facts_of(on["app_stack"] if service.stacks else None))
             for side, on in (("from", before), ("to", after))}
    if lines["from"] == lines["to"] and before["jvm_version"] == after["jvm_version"]:
        return None
    on_target = {"svc": service, "stack": after["app_stack"], "specs": specs, "java": after["jvm_version"]}
    on_origin = {**on_target, "stack": before["app_stack"], "java": before["jvm_version"]}
    vanished = {}
    for knob, value in first.items():      # what the move loses (not what the service never took)
        why = service_fit.misfit(knob, value, **on_target)
        if why and service_fit.misfit(knob, value, **on_origin):
            continue
        if why and target[knob] != value:
            vanished[knob] = f"{why}; replaced by {target[knob]}"
        elif why:
            vanished[knob] = why
    kept = {k: v for k, v in target.items() if k not in vanished or target[k] != first[k]}
    changed = {}
    for knob in sorted(set(first) | {k for k in target if target[k] != old.get(k)}):
        now = meaning(specs.get(knob, {}), lines["to"], kept)
        if now and knob not in vanished and now != meaning(specs.get(knob, {}), lines["from"], old):
            changed[knob] = now
    mandatory = {}
    for knob in vanished:
        fits = [c for c in (specs[knob].get("choices") or ()) if not service_fit.misfit(knob, c, **on_target)]
        if fits and target[knob] == first[knob]:
            mandatory[knob] = (f"one of {', '.join(map(str, fits))} on {lines['to']} (the run takes the catalog's "
                               f"{out_of_the_box[knob]})")
    for knob, value in kept.items():
        low = service_fit.value_rule(specs.get(knob, {}), value).get("java_min")
        if low and before["jvm_version"] < int(low):
            mandatory["jvm_version"] = (f"≥ {low} ({knob}={str(value).lower()} needs it; the set ran Java "
                                        f"{before['jvm_version']})")
    return {"from": f"{lines['from']} on Java {before['jvm_version']}",
            "to": f"{lines['to']} on Java {after['jvm_version']}",
            "vanished": vanished, "changed": changed, "mandatory": mandatory,
            "measured": MEASURED.get((lines["from"], lines["to"]))}


def words(config: str, found: dict) -> list[str]:
    """The upgrade in lines of text, for the console and the report."""
    out = [f"{config} moves from {found['from']} to {found['to']}:"]
    for title, key in (("vanished", "vanished"), ("changes meaning", "changed"), ("mandatory", "mandatory")):
        for knob, why in found.get(key, {}).items():
            out.append(f"  {title}: {knob}: {why}")
    if len(out) == 1:
        out.append("  every knob of its set means there what it meant")
    if found.get("measured"):
        out.append(f"  measured by the lab: {found['measured']}")
    return out
