"""Which knobs a service can take (issue 38): the catalog's `needs:` (ansible/knobs.yml) against the facts read from
the service's jar (jarinfo.JarFacts), before anything is built, booted or changed.

- `needs: sample`: the knob tunes the lab's own sample app, in its code (app_backend_*, camel_*: the app's
  LabProperties), its logging (logback_*: the lab's logback.xml) or its start (app_stack, jvm_cds's training start,
  tomcat_http_port: a service's port is its descriptor's);
- `needs: {VALUE: {tomcat_max: V}}`: that value needs the service's Tomcat at most V (tomcat_ajp_connector=apr:
  Tomcat 10.1 has no APR connector, and Debian's Tomcat Native 1.2.35 breaks Tomcat 9.0.115 and later).

`misfit()` says why a value does not fit, or None. A value the user typed (--set) that does not fit is refused;
a knob set's (written for the sample app, like tuned.yml) is left out of the service's configuration and said so.
"""
from __future__ import annotations

from lab.provision import jarinfo

SAMPLE = "sample"


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in str(text).split(".") if part.isdigit())


def needs_words(spec: dict) -> str:
    """A knob's `needs:` in words for the knob table (lab/provision/knobs.py); '' when any service takes it."""
    needs = spec.get("needs")
    if needs == SAMPLE:
        return "; the sample app only"
    rules = needs.items() if isinstance(needs, dict) else ()
    return "".join(f"; {value} needs Tomcat ≤ {rule['tomcat_max']}" for value, rule in rules
                   if (rule or {}).get("tomcat_max"))


def misfit(knob: str, value, facts: jarinfo.JarFacts | None, service: str, specs: dict) -> str | None:
    """Why `knob=value` cannot be given to the service whose jar says `facts` (None: the sample app, which takes
    every knob); None when it fits. specs: the catalog's knobs (knobs.specs())."""
    if facts is None:
        return None
    needs = specs.get(knob, {}).get("needs")
    if needs == SAMPLE:
        return (f"{knob} tunes the lab's own sample app (its code, logging or start), not {service}: the kit "
                "cannot give it to a jar it did not build")
    if isinstance(needs, dict) and str(value) in {str(k) for k in needs}:
        wanted = next(v for k, v in needs.items() if str(k) == str(value))
        top = (wanted or {}).get("tomcat_max")
        if top is not None and (facts.tomcat_version is None or _version(facts.tomcat_version) > _version(top)):
            return (f"{knob}={value} needs Tomcat ≤ {top}; {service} runs Tomcat {facts.tomcat_version or 'none'} "
                    f"(Spring Boot {facts.boot_version})")
    return None


def split(values: dict, facts: jarinfo.JarFacts | None, service: str, specs: dict) -> tuple[dict, dict]:
    """A knob set's values → (those the service takes, {knob: why} for those left out)."""
    kept, left = {}, {}
    for knob, value in values.items():
        why = misfit(knob, value, facts, service, specs)
        if why is None:
            kept[knob] = value
        else:
            left[knob] = why
    return kept, left
