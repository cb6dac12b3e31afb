"""A service of the user's run on the machines (--service, issue 38): which knobs it can take (service_fit, design),
the run options that refuse what cannot run, and its own JMeter plan made two-sided (user_plan) and run by JMeter
for real against two stand-in services on 127.0.0.1."""
from __future__ import annotations

import http.server
import json
import re
import subprocess
import sys
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from service_parts import BOOT2, BOOT32, SAMPLER, boot_jar, plan

from lab import paths
from lab.experiment import design, load, options, service
from lab.experiment.load import plan_check, user_plan
from lab.provision import catalog, service_fit
from lab.provision.configuration import Configuration

BOOT3_LIBS = ("spring-boot-3.5.7.jar", "tomcat-embed-core-10.1.48.jar")
BOOT2_LIBS = ("spring-boot-2.7.3.jar", "tomcat-embed-core-9.0.83.jar")


def descriptor(tmp_path: Path, manifest=BOOT32, libs=BOOT3_LIBS, load_plan: bool = True,
               more: str = "") -> service.Service:
    boot_jar(tmp_path / "shop.jar", manifest, libs)
    if load_plan:
        plan(tmp_path)
    text = "name: shop\njar: shop.jar\nport: 9966\nproxy_path: /shop/\nhealth: /shop/health\n" + more
    (tmp_path / "shop.yml").write_text(text + ("load: {plan: my.jmx}\n" if load_plan else ""))
    return service.load(str(tmp_path / "shop.yml"))


def stacked(tmp_path: Path) -> service.Service:
    """A service of two builds (stacks:, as the sample app): Boot 2.7 / Tomcat 9 and Boot 3.5 / Tomcat 10.1."""
    boot_jar(tmp_path / "old.jar", BOOT2, BOOT2_LIBS)
    boot_jar(tmp_path / "new.jar", BOOT32, BOOT3_LIBS)
    plan(tmp_path)
    (tmp_path / "two.yml").write_text("name: two\nstacks: {camel3: old.jar, camel4: new.jar}\nhealth: /h\n"
                                      "load: {plan: my.jmx}\n")
    return service.load(str(tmp_path / "two.yml"))


# -- which knobs a service can take -----------------------------------------------------------------------------

def test_a_knob_of_a_template_fits_only_the_service_whose_template_reads_it(tmp_path):
    svc = descriptor(tmp_path)
    why = service_fit.misfit("app_backend_max_connections", 50, svc, None, catalog.specs())
    assert "app_backend_max_connections" in why and "shop" in why and "template" in why
    assert service_fit.misfit("logback_audit_appender", "ASYNC", svc, None, catalog.specs())
    assert service_fit.misfit("tomcat_threads_max", 300, svc, None, catalog.specs()) is None
    assert service_fit.misfit("jvm_gc", "g1", svc, None, catalog.specs()) is None
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "mine.yml.j2").write_text("shop:\n  pool: {{ app_compose_pool_size }}\n")
    templated = descriptor(tmp_path / "t", more="template: mine.yml.j2\n")
    assert templated.template_knobs == {"app_compose_pool_size"}
    assert service_fit.misfit("app_compose_pool_size", 8, templated, None, catalog.specs()) is None
    assert service_fit.misfit("app_compose_queue_size", 8, templated, None, catalog.specs())
    sample = service.load(service.DEFAULT)          # the lab's own app: its template reads all of its knobs
    assert {k for k, v in catalog.specs().items() if v.get("needs") == "template"} <= sample.template_knobs


def test_a_stack_a_start_alone_and_the_port_come_from_the_descriptor(tmp_path):
    svc, two = descriptor(tmp_path), stacked(tmp_path)
    assert "one jar" in service_fit.misfit("app_stack", "camel4", svc, None, catalog.specs())
    assert service_fit.misfit("app_stack", "camel4", two, None, catalog.specs()) is None
    assert "cds: true" in service_fit.misfit("jvm_cds", True, svc, None, catalog.specs())
    assert service_fit.misfit("jvm_cds", True, service.load(service.DEFAULT), None, catalog.specs()) is None
    assert "port: 9966" in service_fit.misfit("tomcat_http_port", 8081, svc, None, catalog.specs())


def test_apr_needs_a_tomcat_that_still_has_it(tmp_path):
    boot3 = descriptor(tmp_path)
    why = service_fit.misfit("tomcat_ajp_connector", "apr", boot3, None, catalog.specs())
    assert "Tomcat ≤ 9.0.113" in why and "10.1.48" in why and "3.5.7" in why
    assert service_fit.misfit("tomcat_ajp_connector", "nio2", boot3, None, catalog.specs()) is None
    (tmp_path / "2").mkdir()
    boot2 = descriptor(tmp_path / "2", BOOT2, BOOT2_LIBS)
    assert service_fit.misfit("tomcat_ajp_connector", "apr", boot2, None, catalog.specs()) is None
    (tmp_path / "3").mkdir()
    newer = descriptor(tmp_path / "3", BOOT2, ("spring-boot-2.7.3.jar", "tomcat-embed-core-9.0.115.jar"))
    assert "9.0.115" in service_fit.misfit("tomcat_ajp_connector", "apr", newer, None, catalog.specs())
    (tmp_path / "4").mkdir()
    two = stacked(tmp_path / "4")        # per build: the machine's app_stack says which Tomcat
    assert service_fit.misfit("tomcat_ajp_connector", "apr", two, "camel3", catalog.specs()) is None
    assert "10.1.48" in service_fit.misfit("tomcat_ajp_connector", "apr", two, "camel4", catalog.specs())
    with pytest.raises(ValueError, match="--set tomcat_ajp_connector=apr: .*10.1.48"):
        Configuration("tuned", {"app_stack": "camel4", "tomcat_ajp_connector": "apr"}).knobs(two)
    # the tuned set moved onto the Camel 4 build by --set: its APR connector is left out, and said so
    assert "tomcat_ajp_connector" not in Configuration("tuned").left_out(two), "camel3's Tomcat has APR"
    moved = Configuration("tuned", {"app_stack": "camel4"}).left_out(two)
    assert "10.1.48" in moved["tomcat_ajp_connector"]
    assert Configuration("tuned", {"app_stack": "camel4"}).knobs(two)["tomcat_ajp_connector"] == "nio"
    given = Configuration("tuned", {"app_stack": "camel4", "tomcat_ajp_connector": "nio2"})
    assert "tomcat_ajp_connector" not in given.left_out(two), "typed: not lost"


def test_the_tuned_set_is_given_to_a_service_without_what_it_cannot_take(tmp_path):
    svc = descriptor(tmp_path)
    sample = Configuration("tuned").knobs(service.load(service.DEFAULT))
    mine = Configuration("tuned").knobs(svc)
    assert sample["tomcat_ajp_connector"] == "apr" and mine["tomcat_ajp_connector"] == "nio"   # the catalog's
    assert mine["tomcat_threads_max"] == sample["tomcat_threads_max"] == 150
    assert mine["logback_audit_appender"] != sample["logback_audit_appender"]
    left = Configuration("tuned").left_out(svc)
    assert "tomcat_ajp_connector" in left and "logback_audit_appender" in left and "tomcat_threads_max" not in left
    assert Configuration("tuned").left_out(service.load(service.DEFAULT)) == {}, "the sample app takes all of tuned.yml"
    # the machine named tuned gets tuned.yml as overrides, without the value the service cannot take (the catalog's)
    overrides = design.Trial().overrides(svc)
    assert "tomcat_ajp_connector" not in overrides["tuned"] and overrides["tuned"]["tomcat_threads_max"] == 150


def test_a_set_value_the_service_cannot_take_is_refused_naming_it(tmp_path):
    svc = descriptor(tmp_path)
    with pytest.raises(ValueError, match=r"--set tomcat_ajp_connector=apr: .*Tomcat 10\.1\.48"):
        Configuration("tuned", {"tomcat_ajp_connector": "apr"}).knobs(svc)
    with pytest.raises(ValueError, match="--set app_compose_pool_size=8: .*shop.*template"):
        options.checked(overrides=["tuned:app_compose_pool_size=8"], service=svc)
    opts = options.checked(overrides=["tuned:tomcat_threads_max=300"], service=svc)
    assert opts.trials()[0].overrides(svc)["tuned"]["tomcat_threads_max"] == 300


def test_a_service_without_its_own_plan_or_with_another_model_is_refused(tmp_path):
    svc = descriptor(tmp_path, load_plan=False)
    with pytest.raises(ValueError, match="shop: its descriptor has no load"):
        options.checked(service=svc)
    (tmp_path / "b").mkdir()
    svc = descriptor(tmp_path / "b")
    with pytest.raises(ValueError, match="--model open: a service's own plan"):
        options.checked(profile=load.Profile(model="open"), service=svc)
    assert options.checked(profile=load.Profile(model="open")).service.name == "sample", "the lab's plan: every model"


def test_the_ansible_vars_and_the_record_say_what_runs(tmp_path):
    svc = descriptor(tmp_path)
    got = service.ansible_vars(svc)
    assert got["tomcat_http_port"] == 9966
    assert got["lab_service"]["proxy_path"] == "/shop/"
    assert got["lab_service"]["builds"] == {"": {"jar": str(tmp_path / "shop.jar"), "camel": None, "tomcat": "10.1.48",
                                                 "boot": "3.5.7", "java": 17}}
    assert got["lab_service"]["mock"] is None and "kit" not in got["lab_service"], "every run's: lab_kit_jar"
    kept = service.record(svc)
    assert kept["name"] == "shop" and kept["facts"]["tomcat_version"] == "10.1.48" and kept["labels"] == ["GET owners"]
    json.dumps(kept)
    (tmp_path / "2").mkdir()
    two = stacked(tmp_path / "2")       # the builds the machines run, by their app_stack
    both = service.ansible_vars(two, {"default": {"app_stack": "camel3"}, "tuned": {"app_stack": "camel4"}})
    assert sorted(both["lab_service"]["builds"]) == ["camel3", "camel4"]
    assert both["lab_service"]["builds"]["camel3"]["tomcat"] == "9.0.83"
    kept = service.record(two, {"default": {"app_stack": "camel3"}, "tuned": {"app_stack": "camel4"}})
    assert kept["facts"] is None and kept["stacks"] == ["camel3", "camel4"]


# -- the service's own plan, two-sided --------------------------------------------------------------------------

def parsed(path: Path) -> ET.Element:
    return ET.parse(path).getroot()


def test_each_thread_group_runs_once_per_machine_with_its_own_target_and_jtl(tmp_path):
    out = user_plan.two_sided(plan(tmp_path), tmp_path / "two.jmx")
    root = parsed(out)
    groups = root.findall(".//ThreadGroup")
    assert len(groups) == 2
    text = out.read_text()
    for side in load.MACHINES:
        assert f"__P({side}_host)" in text and f"__P({side}_port,80)" in text
        assert f"${{__P(run_dir,.)}}/{side}/jmeter.jtl" in text
    assert "__P(host" not in text and "__P(port" not in text        # the shared HTTP defaults went into each side
    # each side's writer and target sit inside its own group's tree
    tree = root.find("hashTree/hashTree")
    kids = list(tree)
    for i, side in enumerate(load.MACHINES):
        group_tree = kids[kids.index(groups[i]) + 1]
        inside = ET.tostring(group_tree, encoding="unicode")
        assert f"__P({side}_host)" in inside and f"/{side}/jmeter.jtl" in inside
    assert [s.get("testname") for s in root.iter("HTTPSamplerProxy")] == ["GET owners", "GET owners"]


def test_the_users_own_listeners_are_turned_off_and_a_serial_plan_is_refused(tmp_path):
    source = plan(tmp_path)
    text = source.read_text().replace(
        "<hashTree>\n      <ConfigTestElement",
        '<hashTree>\n      <ResultCollector guiclass="SummaryReport" testclass="ResultCollector" testname="mine" '
        'enabled="true"><stringProp name="filename">mine.jtl</stringProp></ResultCollector><hashTree/>'
        "\n      <ConfigTestElement", 1)
    source.write_text(text)
    out = user_plan.two_sided(source, tmp_path / "two.jmx")
    mine = [c for c in parsed(out).iter("ResultCollector") if c.get("testname") == "mine"]
    assert [c.get("enabled") for c in mine] == ["false"]
    serial = text.replace('testname="petclinic" enabled="true"/>',
                          'testname="petclinic" enabled="true"><boolProp name="TestPlan.serialize_threadgroups">'
                          "true</boolProp></TestPlan>", 1)
    source.write_text(serial)
    with pytest.raises(plan_check.PlanError, match="one after the other"):
        user_plan.two_sided(source, tmp_path / "serial.jmx")


class Counted(http.server.BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 - http.server's name
        self.server.paths.append(self.path)
        body = b"[]"
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def two_services():
    servers = []
    for _ in load.MACHINES:
        server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Counted)
        server.paths = []
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
    yield dict(zip(load.MACHINES, servers, strict=True))
    for server in servers:
        server.shutdown()


def test_jmeter_runs_the_users_plan_on_both_machines_at_once(tmp_path, two_services):
    """The example descriptor's own plan (services/examples/petclinic-rest.jmx), as the lab runs it."""
    targets = {side: f"http://127.0.0.1:{s.server_address[1]}" for side, s in two_services.items()}
    result = load.run(tmp_path, targets, load.Profile(users=2, ramp_up_s=1, duration_s=4), progress=lambda _: None,
                      plan=paths.ROOT / "services" / "examples" / "petclinic-rest.jmx")
    assert result.exit_code == 0 and (tmp_path / "plan.jmx").exists()
    labels = {"owner", "owners", "vets", "pet types"}
    for side, server in two_services.items():
        samples = load.read_jtl(tmp_path / side / "jmeter.jtl")
        assert samples and {s["label"] for s in samples} <= labels and all(s["success"] == "true" for s in samples)
        assert len(server.paths) == len(samples)       # each side's JTL holds exactly its own machine's requests
        assert all(p.startswith("/petclinic/api/") for p in server.paths)
    assert str(tmp_path / "plan.jmx") in result.command


def test_unpack_jar_puts_the_kit_last_on_the_class_path(tmp_path):
    jar = boot_jar(tmp_path / "svc.jar", BOOT32, BOOT3_LIBS)
    with __import__("zipfile").ZipFile(jar, "a") as z:
        z.writestr("BOOT-INF/classpath.idx", "".join(f'- "BOOT-INF/lib/{lib}"\n' for lib in BOOT3_LIBS))
    kit = tmp_path / "kit.jar"
    kit.write_bytes(b"kit")
    unpacker = paths.ANSIBLE_DIR / "roles" / "app" / "files" / "unpack_jar.py"
    done = subprocess.run([sys.executable, str(unpacker), str(jar), str(tmp_path / "unpacked"), str(kit)],
                          capture_output=True, text=True)
    assert done.stdout.strip() == "unpacked", done.stderr
    classpath, main = (tmp_path / "unpacked" / "launch.args").read_text().splitlines()
    assert classpath.split(":")[-1] == "unpacked/lib/lab-kit.jar" and main == "shop.App"
    assert (tmp_path / "unpacked" / "lib" / "lab-kit.jar").read_bytes() == b"kit"
    again = subprocess.run([sys.executable, str(unpacker), str(jar), str(tmp_path / "unpacked"), str(kit)],
                           capture_output=True, text=True)
    assert again.stdout.strip() == "unchanged"
    kit.write_bytes(b"another kit")                   # a new kit is unpacked again
    third = subprocess.run([sys.executable, str(unpacker), str(jar), str(tmp_path / "unpacked"), str(kit)],
                           capture_output=True, text=True)
    assert third.stdout.strip() == "unpacked"


def test_the_example_descriptors_carry_their_plans():
    for name in ("petclinic-rest", "tripbooking"):
        checked = plan_check.check(paths.ROOT / "services" / "examples" / f"{name}.jmx")
        assert {"host", "users", "ramp_up_s", "duration_s"} <= set(checked.reads)
    assert SAMPLER and BOOT2


# -- the command line ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("argv, said", [
    (["--plan", "x.jmx"], "--plan runs a plan of yours against a service of yours: add --service"),
    (["--service", "no-such-service"], "no such service descriptor"),
    (["--service", "testapp", "--set", "tuned:app_audit_enabled=false"],
     "--set app_audit_enabled=false: app_audit_enabled reaches a service only through its descriptor's template, "
     "and testapp's has none (template:)"),
    (["--service", "testapp", "--model", "open", "--rate", "5"], "--model open: a service's own plan"),
])
def test_the_command_line_refuses_what_a_service_cannot_run(argv, said, capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(paths, "RESULTS", tmp_path / "results")
    monkeypatch.setattr("os.geteuid", lambda: 0)
    if "testapp" in argv and not (paths.ROOT / "services" / "testapp" / "target" / "lab-testapp.jar").exists():
        pytest.skip("services/testapp is built by the app stage")
    from lab import cli
    assert cli.main(argv) == 2
    assert said in capsys.readouterr().err
    assert not (tmp_path / "results").exists()


def test_plan_replaces_the_descriptors_plan_and_is_checked(tmp_path):
    from lab import cli
    descriptor(tmp_path)
    other = plan(tmp_path / "other" if (tmp_path / "other").mkdir() is None else tmp_path,
                 samplers=[SAMPLER.format(name="GET vets", on="true", domain="", port="")])
    chosen = cli.chosen_service(str(tmp_path / "shop.yml"), other)
    assert chosen.plan.samplers == ("GET vets",) and chosen.name == "shop"
    hard = plan(tmp_path / "hard" if (tmp_path / "hard").mkdir() is None else tmp_path,
                samplers=[SAMPLER.format(name="typed host", on="true", domain="10.1.2.3", port="")])
    with pytest.raises(plan_check.PlanError, match="'typed host': domain is '10.1.2.3'"):
        cli.chosen_service(str(tmp_path / "shop.yml"), hard)


def test_a_measured_start_is_kept_for_that_jar_only(tmp_path, monkeypatch):
    from lab.experiment import service_check
    monkeypatch.setattr(paths, "STATE_DIR", tmp_path / "state")
    svc = descriptor(tmp_path)
    assert service.footprint(svc) is None and service.ansible_vars(svc)["lab_service"]["footprint"] is None
    page = ('jvm_memory_used_bytes{area="heap",id="G1 Eden Space"} 1.2E7\n'
            'jvm_memory_used_bytes{area="nonheap",id="Metaspace"} 8.388608E7\n')
    metaspace = service_check._metaspace_mb(page)
    assert metaspace == 80.0 and service_check._metaspace_mb("nothing\n") is None
    started = service_check.Started(1, 5.0, 213, 43, 8080, 18, metaspace_mb=metaspace)
    kept = service_check.keep_footprint(svc, started)
    assert kept == tmp_path / "state" / "services" / "shop" / "footprint.json"
    assert service.footprint(svc) == {"metaspace_mb": 80.0, "threads": 43, "rss_mb": 213}
    assert service.ansible_vars(svc)["lab_service"]["footprint"]["metaspace_mb"] == 80.0
    boot_jar(svc.jar, BOOT32, (*BOOT3_LIBS, "jackson-core-2.19.0.jar"))     # a new build of the service
    assert service.footprint(svc) is None


def test_a_jar_by_maven_coordinates_is_resolved_once_and_then_checked(tmp_path, monkeypatch):
    """jar: {maven: g:a:v} comes from Maven Central (through ~/.m2: spring-boot 3.5.9 is there once the app stage
    built the kit's tests); a jar that is not a Boot executable is then refused naming it, as a path would be."""
    monkeypatch.setattr(paths, "STATE_DIR", tmp_path / "state")
    (tmp_path / "shop.yml").write_text("name: shop\njar: {maven: org.springframework.boot:spring-boot:3.5.9}\n")
    with pytest.raises(service.ServiceError, match=r"shop.yml: jar: .*spring-boot-3\.5\.9\.jar"):
        service.load(str(tmp_path / "shop.yml"))
    assert (tmp_path / "state" / "services" / "shop" / "jar" / "spring-boot-3.5.9.jar").is_file()
    for bad, said in (("{maven: not-coordinates}", "jar.maven: 'not-coordinates': Maven coordinates are"),
                      ("{maven: lab.none:no-such-artifact:0.0.1}", "jar.maven: resolving lab.none:no-such-artifact"),
                      ("{url: http://x}", "jar: a path, or {maven: group:artifact:version")):
        (tmp_path / "bad.yml").write_text(f"name: shop\njar: {bad}\n")
        with pytest.raises(service.ServiceError, match=re.escape(said)):
            service.load(str(tmp_path / "bad.yml"))
