"""A service descriptor (`services/<name>.yml`, or a path): a Spring Boot service as the lab runs it, without a line
of its code changed (issue 38). The lab's own sample Camel app is one descriptor among others, the default
(`services/sample.yml`).

```yaml
name: petclinic-rest                  # [a-z0-9-], the run folder's label and the report's title
jar: build/petclinic-rest.jar         # the executable jar, relative to this file, or {maven: group:artifact:version}
# stacks: {camel3: a.jar, camel4: b.jar}   # or builds of it, the knob app_stack choosing one per machine,
# build: ../app                       # made by this Maven project (mvnw package -pl STACK -am) when missing or old
port: 9966                            # server.port: the service's own HTTP connector
proxy_path: /petclinic/               # what HTTPD forwards to the service
health: /petclinic/actuator/health    # answers 2xx on 127.0.0.1:<port> once the service is up
check: {path: /petclinic/api/owners, status: 200}   # through HTTPD, before the load
start_timeout_s: 600
properties: {spring.profiles.active: hsqldb}        # Spring properties the lab writes; {mock} = the mock's URL
template: config.yml.j2               # Spring properties from the lab's knobs (the knobs it reads it takes)
logging: logback.xml                  # its logging configuration (logging.config): it writes app.log itself
logs: [audit.log]                     # more of its log files a run brings back
cds: true                             # it starts alone (no backends, no database): jvm_cds can train on it
mock: {stubs: stubs/, extra_ports: [8082], builtin: false}   # the service's backends (absent: none)
load: {plan: load/petclinic.jmx}      # a JMeter plan reading the lab's properties (plan_check.py), or
                                      # {requests: load/requests.csv}: a request list (load/request_list.py), or
                                      # {lab_plan: true}: the lab's own plan (jmeter/plan.jmx, the sample's API)
```
What a jar can say is read from it (jarinfo.py), never typed: its Boot line, Java, server, Tomcat and Camel.
`load()` refuses, naming the file and the field (descriptor.py), what the lab could not run: an unknown or mistyped
field, a jar that is not a Spring Boot 2.7 or 3.x executable jar, a jar compiled for a newer Java than the machines'
OpenJDK 17, a web server other than Tomcat, stubs the mock would answer otherwise than WireMock, a plan that does not
read the lab's properties. A build that `build:` makes is read once it is made (Service.facts_of).
Every path stays inside the descriptor's own folder, the checkout for the checkout's services/, or the folder the
command line's --service-root names (descriptor.home_of): never one the descriptor names itself.
"""
from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from lab import paths
from lab.experiment import descriptor
from lab.experiment.descriptor import Mock
from lab.experiment.load import plan_check
from lab.provision import catalog, jarinfo, jars

SERVICES = paths.ROOT / "services"
DEFAULT = "sample"                    # services/sample.yml: the lab's own Camel app
FIELDS = {"name", "root", "jar", "stacks", "build", "port", "proxy_path", "health", "check", "start_timeout_s",
          "properties", "template", "logging", "logs", "cds", "mock", "load"}
NAME = re.compile(r"[a-z0-9][a-z0-9-]{0,39}")
ServiceError = descriptor.DescriptorError
_FACTS: dict[tuple[str, float], jarinfo.JarFacts] = {}     # jar (path, mtime) → its facts, read once


@dataclass(frozen=True)
class Service:
    name: str
    source: Path                         # the descriptor
    builds: dict                         # stack → jar ("" for a service of one jar)
    project: Path | None = None          # the Maven project that makes the builds (build:)
    root: Path | None = None             # the folder the descriptor's paths stay inside: its build's too
    port: int = 8080
    proxy_path: str = "/"
    health: str = "/actuator/health"
    check_path: str = "/"
    check_status: int = 200
    start_timeout_s: int = 600
    properties: dict = field(default_factory=dict)
    template: Path | None = None
    template_knobs: frozenset = frozenset()
    logging: Path | None = None
    logs: tuple = ()
    cds: bool = False
    mock: Mock | None = None
    plan: plan_check.PlanFacts | None = None
    lab_plan: bool = False               # load: {lab_plan: true}: jmeter/plan.jmx

    @property
    def stacks(self) -> tuple[str, ...]:
        """The builds the knob app_stack chooses among; () for a service of one jar."""
        return tuple(s for s in self.builds if s)

    def stack_of(self, stack: str | None = None) -> str:
        """The build a machine on app_stack `stack` runs ("" for a one-jar service; None: the knob's default)."""
        if not self.stacks:
            return ""
        stack = stack or catalog.defaults()["app_stack"]
        if stack not in self.builds:
            raise ServiceError(f"{self.source}: stacks: no build {stack} (its builds: {', '.join(self.stacks)})")
        return stack

    def jar_of(self, stack: str | None = None) -> Path:
        """The jar a machine on app_stack `stack` runs (None: the knob's default; a one-jar service's always)."""
        return self.builds[self.stack_of(stack)]

    def facts_of(self, stack: str | None = None) -> jarinfo.JarFacts:
        """What that jar says of itself; a build `build:` makes is made first when missing or older than its
        sources (Maven, 1–2 min). ServiceError where the lab cannot run it."""
        key = self.stack_of(stack)
        jar = self.builds[key]
        if self.project is not None:
            jars.ensure_build(self.project, key, jar, within=self.root)
        seen = (str(jar), jar.stat().st_mtime if jar.exists() else 0.0)
        if seen not in _FACTS:
            _FACTS[seen] = descriptor.facts_checked(jar, str(self.source), f"stacks.{key}" if key else "jar")
        return _FACTS[seen]

    @property
    def jar(self) -> Path:
        return self.jar_of()

    @property
    def facts(self) -> jarinfo.JarFacts:
        return self.facts_of()


def find(name_or_path: str) -> Path:
    """The descriptor's path as given (it ends in .yml or .yaml), else services/<name>.yml (examples/x too)."""
    given = Path(name_or_path)
    return given if given.suffix in (".yml", ".yaml") else SERVICES / f"{name_or_path}.yml"


def _read(source: Path) -> dict:
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
        raise descriptor.fail(where, unknown[0], f"not a descriptor field (fields: {', '.join(sorted(FIELDS))})")
    return raw


def _builds(home: descriptor.Home, raw: dict, where: str, name: str) -> tuple[dict, Path | None]:
    if ("jar" in raw) == ("stacks" in raw):
        raise descriptor.fail(where, "jar", "the service's executable jar: give jar (one) or stacks (builds of it)")
    if "jar" in raw:
        if "build" in raw:
            raise descriptor.fail(where, "build", "makes the builds of stacks:, not a jar: (build it yourself)")
        return {"": descriptor.jar(home, raw["jar"], where, name)}, None
    project = descriptor.build_project(home, raw.get("build"), where)
    app_stack = catalog.specs()["app_stack"]
    stacks = descriptor.stacks(home, raw["stacks"], project, where, tuple(app_stack["choices"]))
    default = app_stack["default"]
    if default not in stacks:
        raise descriptor.fail(where, "stacks", f"must name a build {default}: what a machine runs unless the knob "
                              "app_stack says otherwise")
    return stacks, project


def load(name_or_path: str = DEFAULT, allow_plan_code: bool = False, root: Path | None = None) -> Service:
    """The descriptor, checked; ServiceError naming the file, the field and why otherwise. allow_plan_code: the
    user's --allow-plan-code (its plan may run code in JMeter: load/plan_check.py); root: the user's --service-root
    (None: none given)."""
    source = find(name_or_path)
    where = str(source)
    raw = _read(source)
    name = raw.get("name")
    if not isinstance(name, str) or not NAME.fullmatch(name):
        raise descriptor.fail(where, "name", f"must be 1–40 lower-case letters, digits or '-', got {name!r}")
    home = descriptor.home_of(source.resolve().parent, raw.get("root"), where, root)
    builds, project = _builds(home, raw, where, name)
    svc = Service(name=name, source=source, builds=builds, project=project, root=home.root)
    actuator = svc.facts.actuator if project is None else None   # a build `build:` makes is read once it is made
    port = descriptor.whole(raw, "port", 8080, 1024, 65535, where)
    if port in descriptor.RESERVED_PORTS:
        raise descriptor.fail(where, "port", f"{port} is {descriptor.RESERVED_PORTS[port]}'s port on the machines")
    proxy = descriptor.url_path(raw.get("proxy_path", "/"), "proxy_path", where)
    if not proxy.endswith("/"):
        raise descriptor.fail(where, "proxy_path", f"must end with / (HTTPD forwards a folder), got {proxy!r}")
    check = raw.get("check", {"path": proxy, "status": 200})
    if not isinstance(check, dict) or set(check) - {"path", "status"} or "path" not in check:
        raise descriptor.fail(where, "check", "must be {path: /…, status: 200}")
    template, template_knobs = descriptor.template(home, raw.get("template"), where, set(catalog.specs()))
    plan, lab_plan = descriptor.load(home, raw.get("load"), where, name, allow_plan_code)
    return Service(
        name=name, source=source, builds=builds, project=project, root=home.root, port=port, proxy_path=proxy,
        health=descriptor.health(raw, actuator, where),
        check_path=descriptor.url_path(check["path"], "check.path", where),
        check_status=descriptor.whole(check, "status", 200, 100, 599, f"{where}: check"),
        start_timeout_s=descriptor.whole(raw, "start_timeout_s", 600, 30, 3600, where),
        properties=descriptor.properties(raw.get("properties"), where),
        template=template, template_knobs=template_knobs,
        logging=descriptor.file(home, raw["logging"], "logging", where) if "logging" in raw else None,
        logs=descriptor.logs(raw.get("logs"), where), cds=descriptor.flag(raw, "cds", where),
        mock=descriptor.mock(home, raw.get("mock"), port, where), plan=plan, lab_plan=lab_plan)


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


def ansible_vars(svc: Service, overrides: dict | None = None) -> dict:
    """The extra vars that make the machines run the service (ansible/group_vars/all/lab.yml lab_service; the tuning
    kit beside it is every run's, lab_kit_jar); the service's port is Tomcat's (the knob tomcat_http_port, which the
    descriptor sets). overrides: the run's per-machine knobs, which say the builds the machines run (app_stack), each
    read (and made) here: its jar, its Camel, Tomcat and Spring Boot, and the Java it was compiled for."""
    used = sorted(s for s in jars.stacks_in_use(overrides or {}) if s in svc.stacks) or [None]
    builds = {}
    for stack in used if svc.stacks else [None]:
        facts = svc.facts_of(stack)
        builds[svc.stack_of(stack)] = {"jar": str(svc.jar_of(stack)), "camel": facts.camel_version,
                                       "tomcat": facts.tomcat_version, "boot": facts.boot_version,
                                       "java": facts.java_release}
    return {
        "tomcat_http_port": svc.port,
        "lab_service": {
            "name": svc.name, "builds": builds, "health": svc.health, "proxy_path": svc.proxy_path,
            "properties": dict(svc.properties), "template": str(svc.template) if svc.template else None,
            "logging": str(svc.logging) if svc.logging else None, "logs": list(svc.logs), "cds": svc.cds,
            "footprint": footprint(svc), "mock": None if svc.mock is None else svc.mock.to_dict()}}


def record(svc: Service, overrides: dict | None = None) -> dict:
    """run.json's service: what ran, as the descriptor and the jars said (overrides: as for ansible_vars; the jar's
    facts when the machines ran one build, the versions each machine reported otherwise)."""
    ran = ansible_vars(svc, overrides)["lab_service"]["builds"]
    one = next(iter(ran)) if len(ran) == 1 else None
    return {"name": svc.name, "descriptor": str(svc.source),
            "jar": ran[one]["jar"] if one is not None else None,
            "facts": svc.facts_of(one or None).to_dict() if one is not None else None,
            "stacks": sorted(ran) if svc.stacks else None,
            "port": svc.port, "proxy_path": svc.proxy_path, "health": svc.health,
            "check": {"path": svc.check_path, "status": svc.check_status},
            "plan": svc.plan.path if svc.plan else None, "lab_plan": svc.lab_plan,     # lab_plan: the lab's mix
            "labels": list(svc.plan.samplers) if svc.plan else None,
            "mock": None if svc.mock is None else svc.mock.to_dict()}
