"""A service descriptor's fields, each read and checked on its own (service.load puts them together).

Every reader names the file, the field and why when it refuses (DescriptorError). Paths are relative to the
descriptor's folder.
"""
from __future__ import annotations

import pwd
import re
import stat
from dataclasses import dataclass
from pathlib import Path

import jinja2
import jinja2.meta
import jinja2.nodes

from lab import maven, paths
from lab.errors import BadInput
from lab.experiment.load import plan_check, request_list
from lab.machines import box
from lab.provision import catalog, jarinfo, knobs, spring_properties

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
    """Where a descriptor's paths are read from (its folder) and the folder they must stay inside (root): a path that
    leads out of it, by .., an absolute path or a symlink, is refused; so is one into `barred` (the lab's own state
    inside the checkout), unless into `opened` (its folder of services built outside the repository)."""
    base: Path
    root: Path
    barred: tuple[Path, ...] = ()
    opened: tuple[Path, ...] = ()


SERVICES = paths.ROOT / "services"      # the checkout's own descriptors: their root is the checkout


def _homes() -> set[Path]:
    """Every account's home folder: one holds its user's keys, never a descriptor's root."""
    return {Path(entry.pw_dir) for entry in pwd.getpwall() if entry.pw_dir not in ("", "/", "/nonexistent")}


def _unsound(root: Path) -> str | None:
    """Why `root` may not hold a descriptor's paths (None: it may): the root file system, a folder directly under it
    (/etc, /tmp, /home, /root), a user's home, or a folder holding the lab's checkout (its state, its secrets)."""
    if len(root.parts) <= 2:
        return "the root file system or a folder directly under it"
    if root in _homes():
        return "a user's home folder (its keys, its other files)"
    if paths.ROOT.is_relative_to(root):
        return f"a folder holding the lab's checkout {paths.ROOT} (its state and secrets in .lab)"
    return None


def home_of(base: Path, raw, where: str, given: Path | None = None) -> Home:
    """The descriptor's Home, from where it lives or the command line, never from itself: the checkout for a
    descriptor in the checkout's services/ (the lab's own: the sample's builds are in app/, the examples' in
    .lab/ext), else `given` (--service-root: a folder holding the descriptor), else the descriptor's own folder.
    A `root:` it still says is taken only where it names that same folder."""
    base = base.resolve()
    if base.is_relative_to(SERVICES.resolve()) and given is None:
        checkout = paths.ROOT.resolve()     # but its hidden folders (.lab's state and secrets, .git's config) and runs
        hidden = tuple(entry for entry in checkout.iterdir() if entry.name.startswith("."))
        home = Home(base, checkout, barred=(*hidden, paths.STATE_DIR.resolve(), paths.RESULTS.resolve()),
                    opened=((paths.STATE_DIR / "ext").resolve(),))
    else:
        root = Path(given).resolve() if given is not None else base
        why = _unsound(root)
        if why:
            raise fail(where, "root", f"{root} is {why}: "
                       + ("give --service-root a folder of the service's own" if given is not None else
                          "put the descriptor in a folder of the service's own (its paths stay inside that folder)"))
        if not base.is_relative_to(root):
            raise fail(where, "root", f"--service-root {root} does not hold the descriptor's own folder {base}")
        home = Home(base, root)
    if raw is not None:
        said = (base / raw).resolve() if isinstance(raw, str) and raw.strip() else raw
        if said != home.root:
            raise fail(where, "root", f"{raw!r} ({said}) is not read from the descriptor: its paths stay inside "
                       f"{home.root} (" + ("the checkout, for a descriptor in its services/" if home.barred else
                                           "--service-root" if given is not None else "the descriptor's own folder")
                       + "); to widen that folder pass --service-root DIR (a folder holding the descriptor, not /, "
                       "a home or the lab's checkout) and drop root:")
    return home


def file(home: Home, value, key: str, where: str, directory: bool = False, exists: bool = True) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise fail(where, key, "must be a path (relative to the descriptor)")
    path = (home.base / value).resolve()          # symlinks followed: where the file really is
    if not path.is_relative_to(home.root):
        raise fail(where, key, f"{value} is {path}, outside {home.root}: a descriptor's paths stay in its folder, or "
                   "in the folder --service-root names (the lab copies them to the machines and into run folders)")
    if any(path.is_relative_to(b) for b in home.barred) and not any(path.is_relative_to(o) for o in home.opened):
        raise fail(where, key, f"{value} is {path}, in the lab's own state or results (the checkout's hidden folders "
                   "and results/): a descriptor's paths may not name them")
    if exists:
        try:
            mode = path.lstat().st_mode
        except OSError:
            mode = 0
        if not (stat.S_ISDIR(mode) if directory else stat.S_ISREG(mode)):
            raise fail(where, key, f"{path}: " + ("no such " if not mode else "not a regular ")
                       + ("directory" if directory else "file")
                       + ("" if not mode else " (a FIFO, device or socket is refused)"))
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


def properties(raw, where: str) -> dict:
    """`properties:` Spring properties the lab writes into the service's application.yml (and service check's
    -D options): refused, in any form Spring's relaxed binding takes as the same name, where a knob or the lab sets
    them, where they move the service's configuration, launcher or logging config, or name a file outside its
    folder (lab/provision/spring_properties.py). A value's Jinja delimiters are data on their way to Ansible
    (lab/provision/as_data.py)."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise fail(where, "properties", "must be a mapping of Spring property → value")
    owned = spring_properties.owned()
    for key, value in raw.items():
        why = spring_properties.refused(key, value, owned)
        if why:
            raise fail(where, f"properties.{key}", why)
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
        return plan_check.check(source, allow_code, folder=home.base), False
    except plan_check.PlanError as e:
        raise fail(where, f"load.{key}", str(e)) from None
