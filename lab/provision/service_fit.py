"""Which knobs a service can take (issue 38): the catalog's `needs:` (ansible/knobs.yml) against what the service's
descriptor says and its jar says of itself (jarinfo.JarFacts), before anything is built, booted or changed. The
lab's own sample app is a service like any other (services/sample.yml): what it takes, it takes by its descriptor.

- `needs: template`: the knob reaches a service only through the Spring properties of its descriptor's template,
  which must read it (app_backend_*, app_compose_*, app_audit_*, camel_*, logback_*: the sample app's
  LabProperties and the Logback configuration it brings);
- `needs: stacks`: a build the descriptor's `stacks:` names (app_stack);
- `needs: cds`: a service whose descriptor says it starts alone (`cds: true`: jvm_cds's training start);
- `needs: descriptor`: set by the descriptor only (tomcat_http_port: its `port:`);
- `needs: {VALUE: {tomcat_max: V}}`: that value needs the service's Tomcat at most V (tomcat_ajp_connector=apr:
  Tomcat 10.1 has no APR connector, and Debian's Tomcat Native 1.2.35 breaks Tomcat 9.0.115 and later);
  `boot_min: V`: Spring Boot at least V; `java_min: N`: the machine's Java (the knob jvm_version) at least N
  (app_virtual_threads=true: Boot 3.2 and Java 21).

`misfit()` says why a value does not fit, or None. A value the user typed (--set) that does not fit is refused;
a knob set's (written for the sample app, like tuned.yml) is left out of the service's configuration and said so.
"""
from __future__ import annotations

WORDS = {"template": "; only through a service's template (template:)",
         "stacks": "; a build of the service's stacks:",
         "cds": "; a service that starts alone (cds: true)",
         "descriptor": "; the service's descriptor sets it (port:)"}


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in str(text).split(".") if part.isdigit())


def needs_words(spec: dict) -> str:
    """A knob's `needs:` in words for the knob table (lab/provision/knobs.py); '' when any service takes it."""
    needs = spec.get("needs")
    if isinstance(needs, str):
        return WORDS.get(needs, "")
    rules = needs.items() if isinstance(needs, dict) else ()
    words = {"tomcat_max": "Tomcat ≤ {}", "boot_min": "Spring Boot ≥ {}", "java_min": "jvm_version ≥ {}"}
    return "".join(f"; {str(value).lower()} needs " + " and ".join(words[k].format(v) for k, v in rule.items())
                   for value, rule in rules if rule)


def line_words(spec: dict) -> str:
    """What a knob means on a line, or while a bool knob is on, where that differs (lines:, under:), for the table."""
    return ("".join(f"; on {line}: {text}" for line, text in (spec.get("lines") or {}).items())
            + "".join(f"; with {knob}=true: {text}" for knob, text in (spec.get("under") or {}).items()))


def misfit(knob: str, value, svc, stack: str | None, specs: dict, java: int | None = None) -> str | None:
    """Why `knob=value` cannot be given to the service `svc` (service.Service) on the machine whose app_stack is
    `stack` and whose Java is `java` (the knob jvm_version; None: not judged); None when it fits. specs: the
    catalog's knobs (catalog.specs())."""
    needs = specs.get(knob, {}).get("needs")
    if needs == "template" and knob not in svc.template_knobs:
        return (f"{knob} reaches a service only through its descriptor's template, and {svc.name}'s "
                + (f"({svc.template.name}) does not read it" if svc.template else "has none (template:)"))
    if needs == "stacks" and str(value) not in svc.stacks:
        return (f"{knob}={value}: {svc.name} has no such build (its stacks: {', '.join(svc.stacks)})" if svc.stacks
                else f"{knob} chooses among a service's builds, and {svc.name} has one jar (no stacks:)")
    if needs == "cds" and value and not svc.cds:
        return (f"{knob} trains on a start of the service alone, on the host, and {svc.name}'s descriptor does not "
                "say it starts without its backends (cds: true)")
    if needs == "descriptor":
        return f"{knob} is {svc.name}'s descriptor's to set (port: {svc.port})"
    rule = value_rule(specs.get(knob, {}), value)
    return _value_misfit(knob, value, rule, svc, stack, java) if rule else None


def value_rule(spec: dict, value) -> dict:
    """The `needs:` rule of that value of the knob ({tomcat_max, boot_min, java_min}), {} when it has none."""
    needs = spec.get("needs")
    rules = needs.items() if isinstance(needs, dict) else ()
    return next((rule or {} for v, rule in rules if str(v) == str(value)), {})


def _value_misfit(knob: str, value, wanted: dict, svc, stack: str | None, java: int | None) -> str | None:
    """Why that value's `needs:` rule is not met by the build and the Java the machine runs, or None."""
    shown = str(value).lower() if isinstance(value, bool) else value
    top, low = wanted.get("tomcat_max"), wanted.get("boot_min")
    facts = svc.facts_of(stack) if top is not None or low is not None else None
    if top is not None and (facts.tomcat_version is None or _version(facts.tomcat_version) > _version(top)):
        return (f"{knob}={shown} needs Tomcat ≤ {top}; {svc.name} runs Tomcat {facts.tomcat_version or 'none'} "
                f"(Spring Boot {facts.boot_version})")
    if low is not None and _version(facts.boot_version) < _version(low):
        return f"{knob}={shown} needs Spring Boot ≥ {low}; {svc.name} runs Spring Boot {facts.boot_version}"
    if wanted.get("java_min") is not None and java is not None and int(java) < int(wanted["java_min"]):
        return (f"{knob}={shown} needs jvm_version ≥ {wanted['java_min']} (the trixie box); this machine runs "
                f"Java {java}")
    return None


def split(values: dict, svc, stack: str | None, specs: dict, java: int | None = None) -> tuple[dict, dict]:
    """A knob set's values → (those the service takes, {knob: why} for those left out)."""
    kept, left = {}, {}
    for knob, value in values.items():
        why = misfit(knob, value, svc, stack, specs, java)
        if why is None:
            kept[knob] = value
        else:
            left[knob] = why
    return kept, left
