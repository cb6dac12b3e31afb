"""A service descriptor's fields, each read and checked on its own (service.load puts them together).

Every reader names the file, the field and why when it refuses (DescriptorError). Paths are relative to the
descriptor's folder.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import jinja2
import jinja2.meta
import jinja2.nodes

from lab import maven, paths
from lab.errors import BadInput
from lab.experiment.load import plan_check, request_list
from lab.machines import box
from lab.provision import catalog, jarinfo, knobs

GUEST_JAVA = max(box.SUITES)          # the newest OpenJDK a machine's box carries (jvm_version picks it)
BOOT_LINES = ("2.7", "3")             # the kit's Spring Boot lines
RESERVED_PORTS = {22: "SSH", 80: "HTTPD", 443: "HTTPD's TLS front", 8009: "the AJP connector",
                  9080: "the mock", 44321: "PCP's pmcd"}
URL_PATH = re.compile(r"/[\w.~%/-]*")
LOG_NAME = re.compile(r"[\w][\w.-]{0,59}")


def kit_metrics_port() -> int:
    """The port of the kit's metrics page on every machine, as the roles have it (group_vars/all/lab.yml)."""
    return int(catalog.read_yaml(knobs.LAB_VARS)["lab_kit_metrics_port"])


class DescriptorError(BadInput):
    """A descriptor the lab cannot run; the message names the file, the field and why."""


@dataclass(frozen=True)
class Mock:
    stubs: Path | None = None
    extra_ports: tuple[int, ...] = ()
    builtin: bool = False

    def to_dict(self) -> dict:
        """As Ansible's lab_service.mock and run.json's service.mock have it."""
        return {"stubs": str(self.stubs) if self.stubs else None, "extra_ports": list(self.extra_ports),
                "builtin": self.builtin}


def fail(where: str, key: str, why: str) -> DescriptorError:
    return DescriptorError(f"{where}: {key}: {why}")


def whole(raw: dict, key: str, default: int, low: int, high: int, where: str) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise fail(where, key, f"must be a whole number from {low} to {high}, got {value!r}")
    return value


def flag(raw: dict, key: str, where: str) -> bool:
    value = raw.get(key, False)
    if not isinstance(value, bool):
        raise fail(where, key, f"must be true or false, got {value!r}")
    return value


def url_path(value, key: str, where: str) -> str:
    if not isinstance(value, str) or not URL_PATH.fullmatch(value):
        raise fail(where, key, f"must be a URL path starting with /, got {value!r}")
    return value


@dataclass(frozen=True)
class Home:
    """Where a descriptor's paths are read from (its folder) and the folder they must stay inside (its `root:`, else
    that same folder): a path that leads out of it, by .., an absolute path or a symlink, is refused."""
    base: Path
    root: Path


def home_of(base: Path, raw, where: str) -> Home:
    """The descriptor's Home: `root:` a folder (relative to the descriptor) holding it and every path it names."""
    base = base.resolve()
    if raw is None:
        return Home(base, base)
    root = file(Home(base, Path("/")), raw, "root", where, directory=True)
    if not base.is_relative_to(root):
        raise fail(where, "root", f"{root} does not hold the descriptor's own folder {base}")
    return Home(base, root)


def file(home: Home, value, key: str, where: str, directory: bool = False, exists: bool = True) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise fail(where, key, "must be a path (relative to the descriptor)")
    path = (home.base / value).resolve()          # symlinks followed: where the file really is
    if not path.is_relative_to(home.root):
        raise fail(where, key, f"{value} is {path}, outside {home.root}: a descriptor's paths stay in its folder, or "
                   "in the folder its root: names (the lab copies them to the machines and into run folders)")
    if exists and not (path.is_dir() if directory else path.is_file()):
        raise fail(where, key, f"{path}: no such {'directory' if directory else 'file'}")
    return path


def jar(home: Home, raw, where: str, name: str) -> Path:
    """`jar:` a path, or {maven: group:artifact:version[:classifier]} resolved from Maven Central."""
    if not isinstance(raw, dict):
        return file(home, raw, "jar", where)
    if set(raw) != {"maven"} or not isinstance(raw["maven"], str):
        raise fail(where, "jar", "a path, or {maven: group:artifact:version[:classifier]} (from Maven Central)")
    try:       # kept beside the lab's other state: resolved once
        return maven.artifact(raw["maven"], paths.STATE_DIR / "services" / name / "jar", DescriptorError)
    except DescriptorError as e:
        raise fail(where, "jar.maven", str(e)) from None


def stacks(home: Home, raw, project: Path | None, where: str, names: tuple[str, ...]) -> dict[str, Path]:
    """`stacks:` {name: jar}: the service's builds, the knob app_stack choosing one per machine (names: its
    choices). A build's jar may be missing only where `build:` makes it."""
    if not isinstance(raw, dict) or not raw:
        raise fail(where, "stacks", f"must map build names ({', '.join(names)}) to jars")
    for key in raw:
        if key not in names:
            raise fail(where, f"stacks.{key}", f"not a choice of the knob app_stack ({', '.join(names)})")
    return {key: file(home, value, f"stacks.{key}", where, exists=project is None) for key, value in raw.items()}


def build_project(home: Home, raw, where: str) -> Path | None:
    """`build:` the Maven project that makes a build of `stacks:` when it is missing or older than the project's
    sources: `mvnw package -pl STACK -am`, with its own mvnw or the lab's Maven (never a parent folder's)."""
    if raw is None:
        return None
    project = file(home, raw, "build", where, directory=True)
    if not (project / "pom.xml").is_file():
        raise fail(where, "build", f"{project}: no pom.xml (a Maven project whose modules are the stacks)")
    return project


def facts_checked(jar_path: Path, where: str, key: str = "jar") -> jarinfo.JarFacts:
    """What the jar says of itself, refused where the lab cannot run it."""
    try:
        facts = jarinfo.read(jar_path)
    except jarinfo.JarError as e:
        raise fail(where, key, str(e)) from None
    if facts.boot_line not in BOOT_LINES:
        raise fail(where, key, f"Spring Boot {facts.boot_version}: the lab's kit covers Spring Boot 2.7 and 3.x "
                   "(Boot 4 moved the embedded Tomcat's classes; Boot before 2.7 has no AutoConfiguration.imports)")
    if facts.java_release > GUEST_JAVA:
        raise fail(where, key, f"compiled for Java {facts.java_release}; the lab's machines run OpenJDK "
                   f"{' or '.join(map(str, box.SUITES))} (the knob jvm_version): build it with --release "
                   f"{GUEST_JAVA}")
    if facts.server != "tomcat":
        raise fail(where, key, f"its web server is {facts.server or 'none (not a web application)'}: the lab "
                   "tunes and measures services on Spring Boot's embedded Tomcat")
    return facts


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


def _canonical(key: str) -> str:
    """A property's name as Spring's relaxed binding compares it (server.tomcat.maxConnections, max_connections and
    max-connections are one property)."""
    return re.sub(r"[-_]", "", key).lower()


def properties(raw, where: str) -> dict:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise fail(where, "properties", "must be a mapping of Spring property → value")
    # {a property as relaxed binding compares it: why the descriptor may not set it}
    owned = {**{_canonical(prop): f"set by the knob {knob} (--set {knob}=… or a knob set): a descriptor's value "
                "would override it on both machines" for prop, knob in knob_properties().items()},
             **{_canonical(prop): f"set by the lab: {why}" for prop, why in SET_BY_THE_LAB.items()}}
    for key, value in raw.items():
        if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z0-9][\w.\[\]-]*", key):
            raise fail(where, f"properties.{key}", "not a Spring property name")
        if _canonical(key) in owned:
            raise fail(where, f"properties.{key}", owned[_canonical(key)])
        if key.startswith(("server.port", "lab.kit.")):
            raise fail(where, f"properties.{key}", "set by the lab (port: in the descriptor; the kit's own keys)")
        if not isinstance(value, (str, int, float, bool)):
            raise fail(where, f"properties.{key}", f"must be a text, number or true/false, got {value!r}")
    return dict(raw)


def template(home: Home, raw, where: str, catalog: set[str]) -> tuple[Path | None, frozenset[str]]:
    """`template:` a Jinja template of Spring properties (YAML) the lab renders on each machine with the knobs,
    and the catalog's knobs it reads: those, and only those, of the knobs that reach a service through its
    template (`needs: template`) this service takes."""
    if raw is None:
        return None, frozenset()
    path = file(home, raw, "template", where)
    try:
        tree = jinja2.Environment().parse(path.read_text(encoding="utf-8"))
    except jinja2.TemplateSyntaxError as e:
        raise fail(where, "template", f"{path}: not a Jinja template (line {e.lineno}: {e.message})") from None
    code = code_in(tree)
    if code:
        raise fail(where, "template", f"{path}: {code}: Ansible renders it on the lab's host, as root, so a template "
                   "may only read values (knobs, the roles' variables) with the filters " + ", ".join(SAFE_FILTERS))
    return path, frozenset(jinja2.meta.find_undeclared_variables(tree) & catalog)


# What a service's template may do with the values it reads: nothing that calls, loads or reaches past a value
# (Ansible's lookup('pipe', …) is a call; `x.__class__` reaches into Python).
SAFE_FILTERS = ("default", "d", "int", "float", "string", "lower", "upper", "trim", "bool", "to_json", "join",
                "replace", "round", "abs", "length", "first", "last", "min", "max")


def code_in(tree: jinja2.nodes.Template) -> str | None:
    """What in a parsed template would run code or read files where it is rendered, said with its line; None."""
    for node in tree.find_all((jinja2.nodes.Call, jinja2.nodes.Filter, jinja2.nodes.Getattr, jinja2.nodes.Getitem,
                               jinja2.nodes.Include, jinja2.nodes.Import, jinja2.nodes.FromImport,
                               jinja2.nodes.Extends)):
        line = f"line {node.lineno}"
        if isinstance(node, jinja2.nodes.Call):
            return f"{line}: a call ({_called(node.node)}(…))"
        if isinstance(node, jinja2.nodes.Filter) and node.name not in SAFE_FILTERS:
            return f"{line}: the filter {node.name}"
        if isinstance(node, jinja2.nodes.Getattr) and node.attr.startswith("_"):
            return f"{line}: the attribute {node.attr}"
        if isinstance(node, jinja2.nodes.Getitem) and isinstance(node.arg, jinja2.nodes.Const) \
                and str(node.arg.value).startswith("_"):
            return f"{line}: the item {node.arg.value!r}"
        if isinstance(node, (jinja2.nodes.Include, jinja2.nodes.Import, jinja2.nodes.FromImport,
                             jinja2.nodes.Extends)):
            return f"{line}: another template ({type(node).__name__.lower()})"
    return None


def _called(node) -> str:
    return node.name if isinstance(node, jinja2.nodes.Name) else \
        f"{_called(node.node)}.{node.attr}" if isinstance(node, jinja2.nodes.Getattr) else "…"


def logs(raw, where: str) -> tuple[str, ...]:
    """`logs:` files the service writes in its log folder (besides app.log and gc.log) that a run brings back."""
    if raw is None:
        return ()
    if not isinstance(raw, list) or not all(isinstance(n, str) and LOG_NAME.fullmatch(n) for n in raw):
        raise fail(where, "logs", f"must be a list of file names (no folders), got {raw!r}")
    if {"app.log", "gc.log"} & set(raw):
        raise fail(where, "logs", "app.log and gc.log are every service's already")
    return tuple(raw)


def mock(home: Home, raw, port: int, where: str) -> Mock | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) - {"stubs", "extra_ports", "builtin"}:
        raise fail(where, "mock", "must be a mapping of stubs, extra_ports, builtin")
    stubs = file(home, raw["stubs"], "mock.stubs", where, directory=True) if "stubs" in raw else None
    builtin = flag(raw, "builtin", f"{where}: mock")
    if stubs is None and not builtin:
        raise fail(where, "mock", "neither stubs nor builtin: nothing would answer the service's calls")
    ports = raw.get("extra_ports", [])
    if not isinstance(ports, list) or any(isinstance(p, bool) or not isinstance(p, int) or not 1024 <= p <= 65535
                                          for p in ports) or len(set(ports)) != len(ports):
        raise fail(where, "mock.extra_ports", f"must be a list of different ports from 1024 to 65535, got {ports!r}")
    reserved = {**RESERVED_PORTS, kit_metrics_port(): "the tuning kit's metrics page"}
    for p in ports:
        if p in reserved or p == port:
            raise fail(where, "mock.extra_ports", f"{p} is {reserved.get(p, 'the service')}'s port")
    if stubs is not None:
        from mock_service import stub_files  # the mock's own reading: what the machines will serve
        try:
            stub_files.load(stubs)
        except stub_files.StubError as e:
            raise fail(where, "mock.stubs", str(e)) from None
    return Mock(stubs, tuple(ports), builtin)


def health(raw: dict, actuator: bool | None, where: str) -> str:
    """`health:`; its default /actuator/health only where the jar has actuator (None: not known yet, no default)."""
    if "health" not in raw and not actuator:
        raise fail(where, "health", "missing, and the jar has no actuator (no /actuator/health): give the path "
                   "that answers 200 once the service is up" if actuator is False else
                   "missing: give the path that answers 200 once the service is up (its builds are not made yet)")
    return url_path(raw.get("health", "/actuator/health"), "health", where)


def load(home: Home, raw, where: str, name: str, allow_code: bool = False) -> tuple[plan_check.PlanFacts | None, bool]:
    """`load:` → (the service's own plan, checked; whether it runs the lab's own plan instead). allow_code: the
    user's --allow-plan-code."""
    if raw is None:
        return None, False
    if raw == {"lab_plan": True}:       # jmeter/plan.jmx: the sample app's API, every load model
        return None, True
    if not isinstance(raw, dict) or len(raw) != 1 or set(raw) - {"plan", "requests"}:
        raise fail(where, "load", "must be {plan: FILE.jmx} (a JMeter plan that reads the lab's properties), "
                   "{requests: FILE.csv} (a request list the lab replays: load/request_list.py) or {lab_plan: true} "
                   "(the lab's own plan, jmeter/plan.jmx, which calls the sample app's API)")
    key = next(iter(raw))
    try:
        source = file(home, raw[key], f"load.{key}", where)
        if key == "requests":       # the lab writes the plan that replays it, beside its other state
            source = request_list.write_plan(source, paths.STATE_DIR / "services" / name / "requests.jmx")
        return plan_check.check(source, allow_code), False
    except plan_check.PlanError as e:
        raise fail(where, f"load.{key}", str(e)) from None
