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
  Tomcat 10.1 has no APR connector, and Debian's Tomcat Native 1.2.35 breaks Tomcat 9.0.115 and later).

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
    return "".join(f"; {value} needs Tomcat ≤ {rule['tomcat_max']}" for value, rule in rules
                   if (rule or {}).get("tomcat_max"))


def misfit(knob: str, value, svc, stack: str | None, specs: dict) -> str | None:
    """Why `knob=value` cannot be given to the service `svc` (service.Service) on the machine whose app_stack is
    `stack`; None when it fits. specs: the catalog's knobs (knobs.specs())."""
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
    if isinstance(needs, dict) and str(value) in {str(k) for k in needs}:
        wanted = next(v for k, v in needs.items() if str(k) == str(value))
        top = (wanted or {}).get("tomcat_max")
        facts = svc.facts_of(stack) if top is not None else None
        if facts is not None and (facts.tomcat_version is None or _version(facts.tomcat_version) > _version(top)):
            return (f"{knob}={value} needs Tomcat ≤ {top}; {svc.name} runs Tomcat {facts.tomcat_version or 'none'} "
                    f"(Spring Boot {facts.boot_version})")
    return None


def split(values: dict, svc, stack: str | None, specs: dict) -> tuple[dict, dict]:
    """A knob set's values → (those the service takes, {knob: why} for those left out)."""
    kept, left = {}, {}
    for knob, value in values.items():
        why = misfit(knob, value, svc, stack, specs)
        if why is None:
            kept[knob] = value
        else:
            left[knob] = why
    return kept, left
