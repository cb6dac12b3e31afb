"""The Spring properties a service's descriptor may not set (lab/experiment/descriptor.py properties), by name as
Spring Boot's relaxed binding compares names (ConfigurationPropertyName: elements split at '.' and [ ], lower-cased,
only a-z and 0-9 kept; an environment variable's '_' for '.' or '-'): those a knob sets (its `lands:` in
ansible/knobs.yml) or the lab does, those that move where the service reads its configuration, its launcher's
settings or its logging configuration, and those that name a file outside the service's folder."""
from __future__ import annotations

import re

from lab.provision import catalog

# A Spring property in a knob's `lands:` (alone or as a JVM system property, -Dname)
SPRING_PROPERTY = re.compile(r"(?:^|\s|-D)((?:server|spring|camel)\.[A-Za-z0-9.-]*[A-Za-z0-9])")
# Properties the lab writes for every service whatever the knobs say (roles/app/templates/_kit.yml.j2).
SET_BY_THE_LAB = {"server.address": "the lab binds the service to 127.0.0.1 (HTTPD and PCP reach it there)"}


def knob_properties() -> dict[str, str]:
    """{Spring property: the knob that sets it}, read from where each knob lands (ansible/knobs.yml `lands:`):
    a descriptor setting one of them would win over the knob on both machines, and the verdict say "no difference"."""
    owned = {}
    for knob, spec in catalog.specs().items():
        for prop in SPRING_PROPERTY.findall(str(spec.get("lands"))):
            owned[prop] = knob
    return owned


def _elements(key: str, separators: str) -> tuple[str, ...]:
    """A name's elements as Spring's ConfigurationPropertyName compares them: split at the separators and at [ ],
    each element lower-cased with everything but a-z and 0-9 skipped (server.tomcat.maxConnections,
    max_connections, max-connections and MAX-CONNECTIONS are one property); empty elements dropped."""
    parts = re.split(f"[{re.escape(separators)}\\[\\]]", key.lower())
    return tuple(e for e in (re.sub(r"[^a-z0-9]", "", part) for part in parts) if e)


def _canonical(key: str) -> str:
    """A property's name as Spring's relaxed binding compares it in a properties or YAML source: elements split at
    '.' and [ ], each lower-cased without dashes, underscores or any other character but a-z and 0-9."""
    return ".".join(_elements(key, "."))


def _forms(key: str) -> set[tuple[str, ...]]:
    """Every name Spring could bind `key` as: its own form and, for a name without dots, the environment variable
    forms (SERVER_TOMCAT_THREADS_MAX; '_' separates elements, or stands for a dash: SERVER_TOMCAT_MAX_CONNECTIONS is
    server.tomcat.max-connections), which a source read as the environment takes (SPRING_APPLICATION_JSON,
    PropertiesLauncher's LOADER_PATH)."""
    forms = {_elements(key, ".")}
    if "." not in key:
        forms.add(_elements(key, "_"))
    return forms


def _owner(key: str, owned: dict):
    """The owned name `key` binds as (owned: {canonical elements: …}), or None."""
    forms = _forms(key)
    for form in forms:
        if form in owned:
            return form
    if "." not in key:          # an environment variable's '_' may be a dash: compare the elements joined
        joined = "".join(_elements(key, "_"))
        return next((form for form in owned if "".join(form) == joined), None)
    return None


# Properties that move where the service reads its configuration or code from, or where it writes its logs, by
# their canonical elements' first ones: a descriptor would set through them what no check here saw.
MOVES_CONFIG = {
    ("spring", "config"): "moves where Spring reads its configuration (imports, locations, names): the service's "
                          "configuration is its jar's, the descriptor's properties and its template",
    ("spring", "application", "json"): "sets any property past this check (JSON Spring reads as properties)",
    ("spring", "cloud", "bootstrap"): "moves where Spring Cloud reads its bootstrap configuration",
    ("loader",): "are Spring Boot's PropertiesLauncher settings: the lab sets loader.path (the tuning kit) and "
                 "loader.main itself",
    ("logging", "config"): "is set by the lab from the descriptor's logging: (a file the descriptor names, copied "
                           "and checked)",
}
# Properties naming a file the service reads or writes: only a path inside the service's folder on the machine (a
# relative one without ..), or a resource of its jar (classpath:).
NAMES_A_FILE = {
    ("logging", "file"): "where it writes its log", ("logging", "path"): "where it writes its log",
    ("logging", "logback", "rollingpolicy", "filenamepattern"): "where it writes its old logs",
    ("spring", "banner", "location"): "a file it prints to its log",
    ("spring", "banner", "image", "location"): "a file it prints to its log",
    ("server", "tomcat", "basedir"): "where Tomcat writes its work files",
    ("server", "tomcat", "accesslog", "directory"): "where Tomcat writes its access log",
    ("server", "servlet", "session", "storedir"): "where it writes its sessions",
    ("spring", "servlet", "multipart", "location"): "where it writes uploads",
    ("spring", "pid", "file"): "where it writes its PID",
}
RELATIVE_PATH = re.compile(r"(?!.*(?:^|/)\.\.(?:/|$))[\w.-]+(?:/[\w.-]+)*", re.ASCII)


def _prefixed(forms: set[tuple[str, ...]], table: dict) -> tuple[tuple[str, ...], str] | None:
    for form in forms:
        for prefix, why in table.items():
            if form[:len(prefix)] == prefix:
                return prefix, why
    return None


# The JVM's own system properties and its logging libraries': not the service's Spring configuration, and `service
# check` hands every property to the JVM as -D (java.system.class.loader, java.security.manager, … load code)
JVM_RESERVED = {prefix: "are the JVM's or its logging library's system properties, not the service's: the lab hands "
                        "the service's properties to the JVM as -D in service check" for prefix in
                (("java",), ("javax",), ("jdk",), ("sun",), ("com", "sun"), ("logback",), ("log4j",), ("log4j2",))}


def owned() -> dict:
    """{a property as relaxed binding compares it: (its name, why the descriptor may not set it)}."""
    return {**{_elements(prop, "."): (prop, f"set by the knob {knob} (--set {knob}=… or a knob set): a descriptor's "
               "value would override it on both machines") for prop, knob in knob_properties().items()},
            **{_elements(prop, "."): (prop, f"set by the lab: {why}") for prop, why in SET_BY_THE_LAB.items()}}


def refused(key, value, owned_names: dict) -> str | None:
    """Why the descriptor may not set property key to value (owned_names: owned()), or None."""
    if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.\[\]-]*", key):
        return "not a Spring property name (letters, digits, . _ - [ ])"
    forms = _forms(key)
    taken = _owner(key, owned_names)
    if taken:
        prop, why = owned_names[taken]
        return why if key == prop else f"{why} (Spring's relaxed binding takes {key} as {prop})"
    if any(form[:2] in (("server", "port"), ("lab", "kit")) for form in forms):
        return "set by the lab (port: in the descriptor; the kit's own keys)"
    reserved = _prefixed(forms, JVM_RESERVED)
    if reserved:
        return f"{'.'.join(reserved[0])}.… {reserved[1]}"
    moved = _prefixed(forms, MOVES_CONFIG)
    if moved:
        return f"Spring binds it as {'.'.join(moved[0])}.…, which {moved[1]}"
    if not isinstance(value, (str, int, float, bool)):
        return f"must be a text, number or true/false, got {value!r}"
    named = _prefixed(forms, NAMES_A_FILE)
    if named and not (isinstance(value, str) and (RELATIVE_PATH.fullmatch(value) or
                                                   re.fullmatch(r"classpath:[\w./-]+", value) and ".." not in value)):
        return (f"{value!r}: {'.'.join(named[0])} names {named[1]}: only a path inside the service's folder on the "
                "machine (relative, without .. or ${…}) or classpath:…")
    return None
