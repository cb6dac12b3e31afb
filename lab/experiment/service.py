"""A service descriptor (`services/<name>.yml`, or a path): the customer's Spring Boot service as the lab runs it,
without a line of its code changed (issue 38).

```yaml
name: petclinic-rest                  # [a-z0-9-], the run folder's label and the report's title
jar: build/petclinic-rest.jar         # the executable jar, relative to this file, or {maven: group:artifact:version}
port: 9966                            # server.port: the service's own HTTP connector
proxy_path: /petclinic/               # what HTTPD forwards to the service
health: /petclinic/actuator/health    # answers 200 on 127.0.0.1:<port> once the service is up
check: {path: /petclinic/api/owners, status: 200}   # through HTTPD, before the load
start_timeout_s: 600
properties: {spring.profiles.active: hsqldb}        # Spring properties the lab writes; {mock} = the mock's URL
mock: {stubs: stubs/, extra_ports: [8082], builtin: false}   # the service's backends (absent: none)
load: {plan: load/petclinic.jmx}      # a JMeter plan reading the lab's properties (plan_check.py), or
                                      # {requests: load/requests.csv}: a request list (load/request_list.py)
```
What the jar can say is read from it (jarinfo.py), never typed: its Boot line, Java, server, Tomcat and Camel.
`load()` refuses, naming the file and the field, what the lab could not run: an unknown or mistyped field, a jar
that is not a Spring Boot 2.7 or 3.x executable jar, a jar compiled for a newer Java than the machines' OpenJDK
17, a web server other than Tomcat, stubs the mock would answer otherwise than WireMock, a plan that does not
read the lab's properties.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from lab import maven, paths
from lab.experiment.load import plan_check, request_list
from lab.provision import jarinfo

SERVICES = paths.ROOT / "services"
GUEST_JAVA = 17                       # the machines' OpenJDK (Debian bookworm's openjdk-17)
BOOT_LINES = ("2.7", "3")             # the kit's Spring Boot lines
RESERVED_PORTS = {22: "SSH", 80: "HTTPD", 443: "HTTPD's TLS front", 8009: "the AJP connector",
                  9080: "the mock", 44321: "PCP's pmcd"}
FIELDS = {"name", "jar", "port", "proxy_path", "health", "check", "start_timeout_s", "properties", "mock", "load"}
NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
URL_PATH = re.compile(r"/[\w.~%/-]*")


class ServiceError(ValueError):
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


@dataclass(frozen=True)
class Service:
    name: str
    source: Path                         # the descriptor
    jar: Path
    facts: jarinfo.JarFacts
    port: int = 8080
    proxy_path: str = "/"
    health: str = "/actuator/health"
    check_path: str = "/"
    check_status: int = 200
    start_timeout_s: int = 600
    properties: dict = field(default_factory=dict)
    mock: Mock | None = None
    plan: plan_check.PlanFacts | None = None


def find(name_or_path: str) -> Path:
    """The descriptor's path as given (it ends in .yml or .yaml), else services/<name>.yml (examples/x too)."""
    given = Path(name_or_path)
    return given if given.suffix in (".yml", ".yaml") else SERVICES / f"{name_or_path}.yml"


def _fail(where: str, key: str, why: str) -> ServiceError:
    return ServiceError(f"{where}: {key}: {why}")


def _int(raw: dict, key: str, default: int, low: int, high: int, where: str) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise _fail(where, key, f"must be a whole number from {low} to {high}, got {value!r}")
    return value


def _url_path(value, key: str, where: str) -> str:
    if not isinstance(value, str) or not URL_PATH.fullmatch(value):
        raise _fail(where, key, f"must be a URL path starting with /, got {value!r}")
    return value


def _file(base: Path, value, key: str, where: str, directory: bool = False) -> Path:
    if not isinstance(value, str) or not value.strip():
        raise _fail(where, key, "must be a path (relative to the descriptor)")
    path = (base / value).resolve()
    if not (path.is_dir() if directory else path.is_file()):
        raise _fail(where, key, f"{path}: no such {'directory' if directory else 'file'}")
    return path


def _jar(base: Path, raw, where: str, name: str) -> tuple[Path, jarinfo.JarFacts]:
    if isinstance(raw, dict):
        if set(raw) != {"maven"} or not isinstance(raw["maven"], str):
            raise _fail(where, "jar", "a path, or {maven: group:artifact:version[:classifier]} (from Maven Central)")
        try:       # kept beside the lab's other state: resolved once
            jar = maven.artifact(raw["maven"], paths.STATE_DIR / "services" / name / "jar", ServiceError)
        except ServiceError as e:
            raise _fail(where, "jar.maven", str(e)) from None
    else:
        jar = _file(base, raw, "jar", where)
    try:
        facts = jarinfo.read(jar)
    except jarinfo.JarError as e:
        raise _fail(where, "jar", str(e)) from None
    if facts.boot_line not in BOOT_LINES:
        raise _fail(where, "jar", f"Spring Boot {facts.boot_version}: the lab's kit covers Spring Boot 2.7 and 3.x "
                    "(Boot 4 moved the embedded Tomcat's classes; Boot before 2.7 has no AutoConfiguration.imports)")
    if facts.java_release > GUEST_JAVA:
        raise _fail(where, "jar", f"compiled for Java {facts.java_release}; the machines run OpenJDK {GUEST_JAVA} "
                    "(Debian bookworm): build it with --release 17, or wait for the lab's Java 21 machines")
    if facts.server != "tomcat":
        raise _fail(where, "jar", f"its web server is {facts.server or 'none (not a web application)'}: the lab "
                    "tunes and measures services on Spring Boot's embedded Tomcat")
    return jar, facts


def _properties(raw, where: str) -> dict:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise _fail(where, "properties", "must be a mapping of Spring property → value")
    for key, value in raw.items():
        if not isinstance(key, str) or not re.fullmatch(r"[A-Za-z0-9][\w.\[\]-]*", key):
            raise _fail(where, f"properties.{key}", "not a Spring property name")
        if key.startswith(("server.port", "lab.kit.")):
            raise _fail(where, f"properties.{key}", "set by the lab (port: in the descriptor; the kit's own keys)")
        if not isinstance(value, (str, int, float, bool)):
            raise _fail(where, f"properties.{key}", f"must be a text, number or true/false, got {value!r}")
    return dict(raw)


def _mock(base: Path, raw, port: int, where: str) -> Mock | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or set(raw) - {"stubs", "extra_ports", "builtin"}:
        raise _fail(where, "mock", "must be a mapping of stubs, extra_ports, builtin")
    stubs = _file(base, raw["stubs"], "mock.stubs", where, directory=True) if "stubs" in raw else None
    builtin = raw.get("builtin", False)
    if not isinstance(builtin, bool):
        raise _fail(where, "mock.builtin", "must be true or false")
    if stubs is None and not builtin:
        raise _fail(where, "mock", "neither stubs nor builtin: nothing would answer the service's calls")
    ports = raw.get("extra_ports", [])
    if not isinstance(ports, list) or any(isinstance(p, bool) or not isinstance(p, int) or not 1024 <= p <= 65535
                                          for p in ports) or len(set(ports)) != len(ports):
        raise _fail(where, "mock.extra_ports", f"must be a list of different ports from 1024 to 65535, got {ports!r}")
    for p in ports:
        if p in RESERVED_PORTS or p == port:
            raise _fail(where, "mock.extra_ports", f"{p} is {RESERVED_PORTS.get(p, 'the service')}'s port")
    if stubs is not None:
        from mock_service import stub_files  # the mock's own reading: what the machines will serve
        try:
            stub_files.load(stubs)
        except stub_files.StubError as e:
            raise _fail(where, "mock.stubs", str(e)) from None
    return Mock(stubs, tuple(ports), builtin)


def _health(raw: dict, facts: jarinfo.JarFacts, where: str) -> str:
    if "health" not in raw and not facts.actuator:
        raise _fail(where, "health", "missing, and the jar has no actuator (no /actuator/health): give the path "
                    "that answers 200 once the service is up")
    return _url_path(raw.get("health", "/actuator/health"), "health", where)


def _load(base: Path, raw, where: str, name: str) -> plan_check.PlanFacts | None:
    if raw is None:
        return None
    if not isinstance(raw, dict) or len(raw) != 1 or set(raw) - {"plan", "requests"}:
        raise _fail(where, "load", "must be {plan: FILE.jmx} (a JMeter plan that reads the lab's properties) or "
                    "{requests: FILE.csv} (a request list the lab replays: load/request_list.py)")
    key = next(iter(raw))
    try:
        source = _file(base, raw[key], f"load.{key}", where)
        if key == "requests":       # the lab writes the plan that replays it, beside its other state
            source = request_list.write_plan(source, paths.STATE_DIR / "services" / name / "requests.jmx")
        return plan_check.check(source)
    except plan_check.PlanError as e:
        raise _fail(where, f"load.{key}", str(e)) from None


def load(name_or_path: str) -> Service:
    """The descriptor, checked; ServiceError naming the file, the field and why otherwise."""
    source = find(name_or_path)
    where = str(source)
    try:
        raw = yaml.safe_load(source.read_text(encoding="utf-8"))
    except OSError as e:
        known = ", ".join(sorted(str(p.relative_to(SERVICES).with_suffix(""))
                                 for p in SERVICES.rglob("*.yml"))) or "none"
        raise ServiceError(f"{where}: no such service descriptor ({e.strerror or e}; in services/: {known})") from None
    except yaml.YAMLError as e:
        raise ServiceError(f"{where}: not valid YAML ({e})") from None
    if not isinstance(raw, dict):
        raise ServiceError(f"{where}: must be a mapping of fields ({', '.join(sorted(FIELDS))})")
    unknown = sorted(set(raw) - FIELDS)
    if unknown:
        raise _fail(where, unknown[0], f"not a descriptor field (fields: {', '.join(sorted(FIELDS))})")
    name = raw.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise _fail(where, "name", f"must be 1–40 lower-case letters, digits or '-', got {name!r}")
    if "jar" not in raw:
        raise _fail(where, "jar", "missing: the service's executable jar")
    base = source.resolve().parent
    jar, facts = _jar(base, raw["jar"], where, name)
    port = _int(raw, "port", 8080, 1024, 65535, where)
    if port in RESERVED_PORTS:
        raise _fail(where, "port", f"{port} is {RESERVED_PORTS[port]}'s port on the machines")
    proxy = _url_path(raw.get("proxy_path", "/"), "proxy_path", where)
    if not proxy.endswith("/"):
        raise _fail(where, "proxy_path", f"must end with / (HTTPD forwards a folder), got {proxy!r}")
    check = raw.get("check", {"path": proxy, "status": 200})
    if not isinstance(check, dict) or set(check) - {"path", "status"} or "path" not in check:
        raise _fail(where, "check", "must be {path: /…, status: 200}")
    return Service(
        name=name, source=source, jar=jar, facts=facts, port=port, proxy_path=proxy,
        health=_health(raw, facts, where),
        check_path=_url_path(check["path"], "check.path", where),
        check_status=_int(check, "status", 200, 100, 599, f"{where}: check"),
        start_timeout_s=_int(raw, "start_timeout_s", 600, 30, 3600, where),
        properties=_properties(raw.get("properties"), where), mock=_mock(base, raw.get("mock"), port, where),
        plan=_load(base, raw.get("load"), where, name))


def footprint_path(svc: Service) -> Path:
    return paths.STATE_DIR / "services" / svc.name / "footprint.json"


def _jar_digest(jar: Path) -> str:
    digest = hashlib.sha256()
    with open(jar, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_footprint(svc: Service, measured: dict) -> Path:
    """What `service check` measured of this jar's start (metaspace_mb, threads, rss_mb, ...), kept for its runs."""
    path = footprint_path(svc)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**measured, "jar": str(svc.jar), "jar_sha256": _jar_digest(svc.jar)}, indent=1))
    return path


def footprint(svc: Service) -> dict | None:
    """The measured start of this very jar (write_footprint), or None: never measured, or measured of another jar."""
    try:
        found = json.loads(footprint_path(svc).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(found, dict) or found.get("jar_sha256") != _jar_digest(svc.jar):
        return None
    return {k: found.get(k) for k in ("metaspace_mb", "threads", "rss_mb")}


def ansible_vars(svc: Service | None) -> dict:
    """The extra vars that make the machines run the service (ansible/group_vars/all/lab.yml lab_service; the tuning
    kit beside it is every run's, lab_kit_jar); the service's port is Tomcat's (the knob tomcat_http_port, which a
    service cannot take). None: the sample app ({"lab_service": None})."""
    if svc is None:
        return {"lab_service": None}
    return {
        "tomcat_http_port": svc.port,
        "lab_service": {
            "name": svc.name, "jar": str(svc.jar), "camel": svc.facts.camel_version, "health": svc.health,
            "proxy_path": svc.proxy_path, "properties": dict(svc.properties), "footprint": footprint(svc),
            "mock": None if svc.mock is None else svc.mock.to_dict()}}


def record(svc: Service | None) -> dict | None:
    """run.json's service: what ran, as the descriptor and the jar said (None: the lab's sample app)."""
    if svc is None:
        return None
    return {"name": svc.name, "descriptor": str(svc.source), "jar": str(svc.jar), "facts": svc.facts.to_dict(),
            "port": svc.port, "proxy_path": svc.proxy_path, "health": svc.health,
            "check": {"path": svc.check_path, "status": svc.check_status},
            "plan": svc.plan.path if svc.plan else None, "labels": list(svc.plan.samplers) if svc.plan else None,
            "mock": None if svc.mock is None else svc.mock.to_dict()}
