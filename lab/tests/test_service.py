"""A service descriptor, checked before anything starts (lab/experiment/service.py)."""
from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import zipfile
from pathlib import Path

import pytest
import yaml
from service_parts import BOOT2, BOOT32, SAMPLER, boot_jar, plan

from lab import maven, shell, unprivileged
from lab.experiment import service
from lab.provision import jars

ACTUATOR = ("spring-boot-2.7.3.jar", "tomcat-embed-core-9.0.65.jar", "spring-boot-actuator-2.7.3.jar")


def descriptor(tmp_path, **fields):
    """services-like folder: the jar, stubs and plan beside a descriptor with `fields` over a good one."""
    tmp_path.mkdir(parents=True, exist_ok=True)
    boot_jar(tmp_path / "svc.jar", libs=ACTUATOR)
    (tmp_path / "stubs" / "mappings").mkdir(parents=True, exist_ok=True)
    (tmp_path / "stubs" / "mappings" / "backend.json").write_text(json.dumps(
        {"request": {"method": "GET", "urlPathPattern": "/customers/[0-9]+"}, "response": {"jsonBody": {"id": 1}}}))
    plan(tmp_path)
    good = {"name": "shop", "jar": "svc.jar", "port": 9966, "proxy_path": "/shop/", "health": "/shop/actuator/health",
            "check": {"path": "/shop/api/owners", "status": 200}, "properties": {"backend.url": "{mock}"},
            "mock": {"stubs": "stubs", "extra_ports": [8082]}, "load": {"plan": "my.jmx"}}
    good.update(fields)
    path = tmp_path / "shop.yml"
    path.write_text(yaml.safe_dump({k: v for k, v in good.items() if v is not None}))
    return path


def test_a_good_descriptor_with_what_its_jar_says(tmp_path):
    svc = service.load(str(descriptor(tmp_path)))
    assert (svc.name, svc.port, svc.proxy_path, svc.check_path, svc.check_status) == \
        ("shop", 9966, "/shop/", "/shop/api/owners", 200)
    assert (svc.facts.boot_line, svc.facts.tomcat_major, svc.facts.actuator) == ("2.7", 9, True)
    assert svc.mock.stubs == tmp_path / "stubs" and svc.mock.extra_ports == (8082,) and not svc.mock.builtin
    assert svc.plan.samplers == ("GET owners",) and svc.properties == {"backend.url": "{mock}"}


def test_a_service_is_found_by_name_in_services():
    assert service.find("petclinic") == service.SERVICES / "petclinic.yml"
    assert service.find("examples/tripbooking") == service.SERVICES / "examples" / "tripbooking.yml"
    assert str(service.find("my/own.yml")) == "my/own.yml"


def test_health_defaults_to_actuator_and_is_required_without_it(tmp_path):
    assert service.load(str(descriptor(tmp_path, health=None))).health == "/actuator/health"
    path = descriptor(tmp_path, health=None)
    boot_jar(tmp_path / "svc.jar")          # no actuator in it
    with pytest.raises(service.ServiceError, match="health: missing, and the jar has no actuator"):
        service.load(str(path))


def refusal(tmp_path, said, make_jar=None, fields=None):
    path = descriptor(tmp_path, **(fields or {}))
    if make_jar:
        make_jar(tmp_path / "svc.jar")
    with pytest.raises(service.ServiceError) as refused:
        service.load(str(path))
    assert str(refused.value).startswith(f"{path}: ") and said in str(refused.value), str(refused.value)


@pytest.mark.parametrize(("fields", "jar", "said"), [
    ({"jar": "missing.jar"}, None, "jar: "),
    ({}, lambda p: boot_jar(p, manifest=None), "jar: "),
    ({}, lambda p: boot_jar(p, {**BOOT32, "Spring-Boot-Version": "4.0.3"}, ("spring-boot-4.0.3.jar",)),
     "jar: Spring Boot 4.0.3: the lab's kit covers Spring Boot 2.7 and 3.x"),
    ({}, lambda p: boot_jar(p, {**BOOT2, "Spring-Boot-Version": "2.6.1"}, ("spring-boot-2.6.1.jar",)),
     "jar: Spring Boot 2.6.1"),
    ({}, lambda p: boot_jar(p, BOOT32, libs=("tomcat-embed-core-10.1.48.jar",), major=66),
     "jar: compiled for Java 22; the lab's machines run OpenJDK 17 or 21 (the knob jvm_version)"),
    ({}, lambda p: boot_jar(p, libs=("undertow-core-2.2.19.Final.jar",)), "jar: its web server is undertow"),
    ({"colour": "blue"}, None, "colour: not a descriptor field"),
    ({"name": "Shop Service"}, None, "name: must be 1–40 lower-case letters"),
    ({"port": 8009}, None, "port: 8009 is the AJP connector's port on the machines"),
    ({"port": "9966"}, None, "port: must be a whole number from 1024 to 65535, got '9966'"),
    ({"proxy_path": "/shop"}, None, "proxy_path: must end with /"),
    ({"check": {"path": "shop"}}, None, "check.path: must be a URL path starting with /"),
    ({"properties": {"server.port": 1}}, None, "properties.server.port: set by the knob tomcat_http_port"),
    # a knob's property would win over the knob on both machines (the verdict: "no difference")
    ({"properties": {"server.tomcat.threads.max": 5}}, None,
     "properties.server.tomcat.threads.max: set by the knob tomcat_threads_max"),
    ({"properties": {"server.tomcat.maxConnections": 5}}, None, "set by the knob tomcat_max_connections"),
    ({"properties": {"spring.threads.virtual.enabled": True}}, None, "set by the knob app_virtual_threads"),
    ({"properties": {"server.address": "0.0.0.0"}}, None, "properties.server.address: set by the lab: the lab binds"),
    ({"mock": {"builtin": False}}, None, "mock: neither stubs nor builtin"),
    ({"mock": {"stubs": "stubs", "extra_ports": [9966]}}, None, "mock.extra_ports: 9966 is the service's port"),
    ({"mock": {"stubs": "stubs", "extra_ports": [9464]}}, None,
     "mock.extra_ports: 9464 is the tuning kit's metrics page's port"),
    ({"mock": {"stubs": "nowhere"}}, None, "mock.stubs: "),
    ({"load": {"plan": "my.jmx", "users": 5}}, None, "load: must be {plan: FILE.jmx}"),
    ({"load": {"lab_plan": "yes"}}, None, "load: must be {plan: FILE.jmx}"),
    # what the sample app's descriptor uses, refused where it cannot work
    ({"stacks": {"camel3": "svc.jar"}}, None, "jar: the service's executable jar: give jar (one) or stacks"),
    ({"jar": None, "stacks": {"boot2": "svc.jar"}}, None, "stacks.boot2: not a choice of the knob app_stack"),
    ({"jar": None, "stacks": {"camel4": "svc.jar"}}, None, "stacks: must name a build camel3"),
    ({"jar": None, "stacks": {"camel3": "nowhere.jar"}}, None, "stacks.camel3: "),
    ({"jar": None, "stacks": {"camel3": "out/a.jar"}, "build": "stubs"}, None, "build: "),
    ({"build": "."}, None, "build: makes the builds of stacks:"),
    ({"template": "nowhere.yml.j2"}, None, "template: "),
    ({"logs": ["app.log"]}, None, "logs: app.log and gc.log are every service's already"),
    ({"logs": ["../etc/passwd"]}, None, "logs: must be a list of file names"),
    ({"cds": "yes"}, None, "cds: must be true or false"),
    ({"logging": "nowhere.xml"}, None, "logging: "),
])
def test_what_the_lab_cannot_run_is_refused_naming_the_field(tmp_path, fields, jar, said):
    refusal(tmp_path, said, jar, fields)


@pytest.mark.parametrize(("text", "said"), [
    ("x: {{ lookup('pipe', 'id') }}\n", "line 1: a call (lookup(…))"),
    ("x: {{ query('file', '/etc/shadow') }}\n", "a call (query(…))"),
    ("x: {{ ''.__class__ }}\n", "the attribute __class__"),
    ("x: {{ app_log_dir['__class__'] }}\n", "the item '__class__'"),
    ("x: {{ app_log_dir | b64decode }}\n", "the filter b64decode"),
    ("{% include '/etc/passwd' %}\n", "another template (include)"),
])
def test_a_template_that_would_run_code_where_ansible_renders_it_is_refused(tmp_path, text, said):
    """Ansible renders a service's template on the lab's host, as root: one that calls, includes or reaches into
    Python is refused when the descriptor is read (before, it was rendered on the next provisioning)."""
    (tmp_path / "t.yml.j2").write_text(text)
    refusal(tmp_path, said, fields={"template": "t.yml.j2"})


def test_a_template_must_be_jinja_and_says_which_knobs_it_reads(tmp_path):
    (tmp_path / "t.yml.j2").write_text("shop:\n  threads: {{ app_compose_pool_size }}\n  dir: {{ app_log_dir }}\n")
    path = descriptor(tmp_path, template="t.yml.j2")
    assert service.load(str(path)).template_knobs == {"app_compose_pool_size"}     # knobs only: not role variables
    (tmp_path / "t.yml.j2").write_text("shop: {{ unclosed\n")
    with pytest.raises(service.ServiceError, match="template: .*not a Jinja template"):
        service.load(str(path))


def test_builds_a_maven_project_makes_are_read_once_made(tmp_path, monkeypatch):
    """stacks: + build: (the sample app's form): a missing build is made by the project when its facts are first
    needed (Maven, stood in for here), not when the descriptor is read."""
    (tmp_path / "proj").mkdir(parents=True)
    (tmp_path / "proj" / "pom.xml").write_text("<project/>")
    plan(tmp_path)
    (tmp_path / "two.yml").write_text("name: two\nstacks: {camel3: proj/camel3/a.jar, camel4: proj/camel4/b.jar}\n"
                                      "build: proj\nhealth: /h\nload: {plan: my.jmx}\n")
    made = []

    def build(project, stack, jar, log=print, within=None):
        assert within == tmp_path           # the descriptor's folder: its modules stay inside it
        made.append(stack)
        jar.parent.mkdir(parents=True, exist_ok=True)
        return boot_jar(jar, libs=ACTUATOR)
    monkeypatch.setattr(jars, "ensure_build", build)
    svc = service.load(str(tmp_path / "two.yml"))
    assert made == [] and svc.stacks == ("camel3", "camel4")
    assert svc.facts_of("camel4").tomcat_version == "9.0.65" and made == ["camel4"]
    assert svc.jar == tmp_path / "proj" / "camel3" / "a.jar"          # the knob's default build
    with pytest.raises(service.ServiceError, match="stacks: no build camel5"):
        svc.jar_of("camel5")


def test_stubs_and_plans_are_checked_as_the_mock_and_jmeter_will_take_them(tmp_path):
    path = descriptor(tmp_path)
    (tmp_path / "stubs" / "mappings" / "bad.json").write_text(json.dumps(
        {"request": {"url": "/a"}, "response": {"proxyBaseUrl": "http://real.example.com"}}))
    with pytest.raises(service.ServiceError, match="mock.stubs: mappings/bad.json: response.proxyBaseUrl: proxying"):
        service.load(str(path))
    path = descriptor(tmp_path / "p")
    plan(tmp_path / "p", [SAMPLER.format(name="GET owners", on="true", domain="shop.example.com", port="")])
    with pytest.raises(service.ServiceError, match="load.plan: .*'GET owners': domain is 'shop.example.com'"):
        service.load(str(path))


def test_a_missing_descriptor_names_the_services_there_are(tmp_path):
    with pytest.raises(service.ServiceError, match=r"no such service descriptor .*in services/: .*examples/trip"):
        service.load(str(tmp_path / "nothing.yml"))
    (tmp_path / "bad.yml").write_text("name: [unclosed")
    with pytest.raises(service.ServiceError, match="not valid YAML"):
        service.load(str(tmp_path / "bad.yml"))


@contextlib.contextmanager
def no_network():
    """A build's network namespace where the build itself is a stand-in."""
    yield Path("/run/netns/none"), Path("/etc/resolv.conf")


def test_a_build_uses_the_projects_own_maven_or_the_labs_never_a_parent_folders(tmp_path, monkeypatch):
    """Issue 53, item 3: a parent folder's mvnw is not the customer's project's and would run as root."""
    parent = tmp_path / "someone-elses"
    project = parent / "project"
    project.mkdir(parents=True)
    (parent / "mvnw").write_text("#!/bin/sh\ntouch \"$0.ran\"\n")
    (parent / "mvnw").chmod(0o755)
    assert jars.maven_for(project) == maven.MAVEN_WRAPPER
    ran = []
    monkeypatch.setattr(jars.shell, "run", lambda argv, *a, **k: ran.append(shell.shown(argv).split()[0]))
    monkeypatch.setattr(jars.build_netns, "for_a_build", no_network)
    with pytest.raises(jars.BuildError, match="left no"):
        jars._build(project, [], "camel3", project / "target" / "x.jar", log=lambda line: None)
    assert ran == [str(maven.MAVEN_WRAPPER)] and not (parent / "mvnw.ran").exists()
    (project / "mvnw").write_text("#!/bin/sh\n")
    assert jars.maven_for(project) == project / "mvnw"


PARENT_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>lab.test</groupId><artifactId>parent</artifactId><version>1</version><packaging>pom</packaging>
<modules><module>one</module></modules>
<properties><project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>
<build><pluginManagement><plugins>
<plugin><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
<plugin><artifactId>maven-compiler-plugin</artifactId><version>3.14.1</version></plugin>
<plugin><artifactId>maven-surefire-plugin</artifactId><version>3.5.4</version></plugin>
<plugin><artifactId>maven-jar-plugin</artifactId><version>3.4.2</version></plugin>
</plugins></pluginManagement></build></project>
"""
MODULE_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<parent><groupId>lab.test</groupId><artifactId>parent</artifactId><version>1</version></parent>
<artifactId>one</artifactId><build><finalName>one</finalName>
<resources><resource><directory>src/main/resources</directory><filtering>true</filtering></resource></resources>
</build></project>
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="only a lab run as root hands a build to its own user")
def test_a_descriptors_build_runs_as_the_labs_user_on_a_copy_of_the_project(tmp_path):
    """Issue 53, item 1: a build runs the project's plugins (a customer's code). Maven says who ran it: a resource
    filtered with ${user.name}. The project itself is only read: no target/ appears in it."""
    project = tmp_path / f"project-{tmp_path.name}"     # its name tells its copy from another test's build
    (project / "one" / "src" / "main" / "resources").mkdir(parents=True)
    (project / "pom.xml").write_text(PARENT_POM)
    (project / "one" / "pom.xml").write_text(MODULE_POM)
    (project / "one" / "src" / "main" / "resources" / "who.txt").write_text("${user.name} ${user.home}\n")
    jar = project / "one" / "target" / "one.jar"
    assert jars.ensure_build(project, "one", jar, log=lambda line: None) == jar
    with zipfile.ZipFile(jar) as built:
        assert built.read("who.txt").decode().split() == [unprivileged.NAME, str(unprivileged.HOME)]
    assert sorted(p.name for p in (project / "one" / "target").iterdir()) == ["one.jar"], "only the jar came back"
    assert not (project / "target").exists()
    assert not list(unprivileged.HOME.glob(f"build-*/{project.name}")), "the build's copy is left"


def test_a_build_as_the_labs_user_reads_no_repository_of_roots(tmp_path, monkeypatch):
    """javac checks a class path entry with access(2), which ignores the capability the lab's user reads /root with:
    a camel4 build chained to root's repository (maven.repo.local.tail) failed on a new host ("cannot access
    org.apache.catalina … /root/.m2/repository/…"). The user's own repository only; nothing of root's to read."""
    project = tmp_path / "project"
    (project / "one" / "target").mkdir(parents=True)
    (project / "pom.xml").write_text(PARENT_POM)
    account = unprivileged.ensure() or pytest.skip("the lab's user exists only where the lab runs as root")
    ran = []

    def build(argv, *args, **kwargs):
        ran.append(argv)
        (Path(kwargs["cwd"]) / "one" / "target").mkdir(parents=True)
        (Path(kwargs["cwd"]) / "one" / "target" / "one.jar").write_text("jar")
    monkeypatch.setattr(jars.shell, "run", build)
    monkeypatch.setattr(jars.build_netns, "for_a_build", no_network)
    jars._build_as(account, project, [], maven.MAVEN_WRAPPER, "one", project / "one" / "target" / "one.jar")
    argv = ran[0]
    assert not any("maven.repo.local.tail" in a or str(Path.home()) in a for a in argv), argv
    assert f"-Dmaven.repo.local={account.home / '.m2' / 'repository'}" in argv


SHARED_POM = """<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>
<groupId>lab.test</groupId><artifactId>two</artifactId><version>1</version>
<properties><project.build.sourceEncoding>UTF-8</project.build.sourceEncoding></properties>
<build><plugins>
<plugin><artifactId>maven-resources-plugin</artifactId><version>3.3.1</version></plugin>
<plugin><artifactId>maven-compiler-plugin</artifactId><version>3.14.1</version></plugin>
<plugin><artifactId>maven-surefire-plugin</artifactId><version>3.5.4</version></plugin>
<plugin><artifactId>maven-jar-plugin</artifactId><version>3.4.2</version></plugin>
<plugin><artifactId>maven-install-plugin</artifactId><version>3.1.4</version></plugin>
</plugins></build></project>
"""


def a_project_with_a_module_outside(tmp_path):
    """The sample app's shape: app/pom.xml names ../kit/core. Here project/ names ../shared/two, which one needs."""
    project, shared = tmp_path / "project", tmp_path / "shared" / "two"
    (project / "one" / "src" / "main" / "resources").mkdir(parents=True)
    (shared / "src" / "main" / "resources").mkdir(parents=True)
    (project / "pom.xml").write_text(PARENT_POM.replace("<module>one</module>",
                                                        "<module>one</module><module>../shared/two</module>"))
    (project / "one" / "pom.xml").write_text(MODULE_POM.replace(
        "<artifactId>one</artifactId>", "<artifactId>one</artifactId><dependencies><dependency><groupId>lab.test"
        "</groupId><artifactId>two</artifactId><version>1</version></dependency></dependencies>"))
    (shared / "pom.xml").write_text(SHARED_POM)
    (shared / "src" / "main" / "resources" / "two.txt").write_text("two\n")
    return project, shared


def test_a_builds_modules_outside_its_project_are_its_sources_and_stay_in_the_descriptors_root(tmp_path):
    project, shared = a_project_with_a_module_outside(tmp_path)
    assert jars.reactor(project, tmp_path) == [project.resolve(), shared.resolve()]
    with pytest.raises(jars.BuildError, match=r"module \.\./shared/two is .*, outside .*project: a build's modules"):
        jars.reactor(project, project)
    (project / "pom.xml").write_text("<project><modules><module>../../../etc</module>")
    with pytest.raises(jars.BuildError, match="cannot be read as a Maven pom"):
        jars.reactor(project, tmp_path)


@pytest.mark.skipif(os.geteuid() != 0, reason="only a lab run as root hands a build to its own user")
def test_a_build_whose_modules_stand_outside_its_project_builds_them_too_as_the_labs_user(tmp_path):
    """A fresh clone's sample app (app/ naming ../kit/core) failed to build as the lab's user: only app/ was
    copied ("Child module …/kit/core does not exist"). A source changed in the outside module makes it stale."""
    project, shared = a_project_with_a_module_outside(tmp_path)
    jar = project / "one" / "target" / "one.jar"
    assert jars.ensure_build(project, "one", jar, log=lambda line: None, within=tmp_path) == jar
    assert jar.exists() and not (shared / "target").exists(), "the outside module was built in place"
    built = jar.stat().st_mtime
    os.utime(shared / "src" / "main" / "resources" / "two.txt", (built + 5, built + 5))
    said = []
    jars.ensure_build(project, "one", jar, log=said.append, within=tmp_path)
    assert said and "building one.jar" in said[0], "a changed source outside the project did not rebuild"


@pytest.mark.skipif(os.geteuid() != 0, reason="only a lab run as root hands a build to its own user")
def test_the_kit_a_reactor_builds_comes_back_and_is_not_built_again(tmp_path, monkeypatch):
    """The sample app's reactor builds the tuning kit (../kit/core) in the lab's user's copy: that jar comes back to
    the checkout, so ensure_kit finds it fresh instead of running a second Maven beside the root file system. Here the
    outside module stands for the kit; any other module's target stays in the copy."""
    project, shared = a_project_with_a_module_outside(tmp_path)
    monkeypatch.setattr(jars, "KIT_DIR", shared)
    monkeypatch.setattr(jars, "KIT_JAR", shared / "target" / "two-1.jar")
    jar = project / "one" / "target" / "one.jar"
    jars.ensure_build(project, "one", jar, log=lambda line: None, within=tmp_path)
    with zipfile.ZipFile(shared / "target" / "two-1.jar") as kit:
        assert kit.read("two.txt") == b"two\n"
    assert sorted(p.name for p in (shared / "target").iterdir()) == ["two-1.jar"], "only the kit's jar came back"

    def maven(*args, **kwargs):
        raise AssertionError("the kit was built again")
    monkeypatch.setattr(jars.shell, "run", maven)
    assert jars.ensure_kit(log=lambda line: None) == shared / "target" / "two-1.jar"


@pytest.mark.skipif(os.geteuid() != 0, reason="only a lab run as root hands a build to its own user")
def test_the_sample_apps_own_build_runs_as_the_labs_user_as_on_a_fresh_clone(tmp_path):
    """What a fresh clone's first ./start.sh does, which CI's app stage (root builds the jars first) hid twice: the
    sample app's camel3 build as the lab's user, on a copy of app/ and the kit it names outside itself (../kit/core),
    with root's Maven repository already full of what it needs (the app stage filled it) and unreadable to javac."""
    from lab import paths
    for folder in ("app", "kit"):
        shutil.copytree(paths.ROOT / folder, tmp_path / folder, symlinks=True,
                        ignore=shutil.ignore_patterns("target", "node_modules"))
    jar = tmp_path / "app" / "camel3" / "target" / "camel-tuning-app-camel3.jar"
    assert jars.ensure_build(tmp_path / "app", "camel3", jar, log=lambda line: None, within=tmp_path) == jar
    assert service.descriptor.facts_checked(jar, "test").camel_version.startswith("3.")


@pytest.mark.parametrize(("field", "value"), [("logging", "../outside/logback.xml"), ("logging", "/etc/hostname"),
                                              ("logging", "link.xml"), ("template", "../outside/t.yml.j2")])
def test_a_path_outside_the_descriptors_folder_is_refused_unless_service_root_holds_it(tmp_path, field, value):
    """Issue 53, item 3: `logging: /root/.ssh/id_ed25519` was copied to both machines and into the run folder."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "logback.xml").write_text("<configuration/>")
    (tmp_path / "outside" / "t.yml.j2").write_text("server: {}\n")
    home = tmp_path / "svc"
    home.mkdir()
    boot_jar(home / "shop.jar", BOOT32, ("spring-boot-3.5.7.jar", "tomcat-embed-core-10.1.48.jar"))
    (home / "link.xml").symlink_to(tmp_path / "outside" / "logback.xml")        # a symlink leads out too
    fields = {"name": "shop", "jar": "shop.jar", "health": "/h", field: value}
    (home / "shop.yml").write_text(yaml.safe_dump(fields))
    said = rf"{field}: {re.escape(value)} is .*, outside {re.escape(str(home))}"
    with pytest.raises(service.ServiceError, match=said):
        service.load(str(home / "shop.yml"))
    if value != "/etc/hostname":            # a --service-root holding both takes it
        assert service.load(str(home / "shop.yml"), root=tmp_path).name == "shop"
    with pytest.raises(service.ServiceError, match="root: .* does not hold the descriptor's own folder"):
        service.load(str(home / "shop.yml"), root=tmp_path / "outside")
