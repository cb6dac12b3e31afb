"""Hostile service descriptors (issue 85, items 6 and 7): a descriptor is a customer's text the lab, as root, reads,
copies to both machines and into run folders, and turns into Spring properties and -D options. Its root comes from
where it lives or the command line, never from itself; a stubs folder holds no links or special files; a property
is compared as Spring's relaxed binding binds it, and one that moves the service's configuration is refused."""
from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
import yaml
from service_parts import BOOT32, boot_jar

from lab import cli, paths
from lab.experiment import descriptor, service, service_check

LIBS = ("spring-boot-3.5.7.jar", "tomcat-embed-core-10.1.48.jar", "spring-boot-actuator-3.5.7.jar")
STUB = {"request": {"method": "GET", "urlPath": "/prices/1"}, "response": {"status": 200, "body": "12.5"}}


def shop(folder: Path, **fields) -> Path:
    """A service's folder as a customer hands it over: its jar, stubs and a descriptor with `fields` over good ones."""
    (folder / "stubs" / "mappings").mkdir(parents=True, exist_ok=True)
    (folder / "stubs" / "__files").mkdir(exist_ok=True)
    boot_jar(folder / "shop.jar", BOOT32, LIBS)
    (folder / "stubs" / "mappings" / "price.json").write_text(json.dumps(STUB))
    good = {"name": "shop", "jar": "shop.jar", "proxy_path": "/shop/", "properties": {"shop.pricing-url": "{mock}"},
            "mock": {"stubs": "stubs"}}
    good.update(fields)
    path = folder / "shop.yml"
    path.write_text(yaml.safe_dump({k: v for k, v in good.items() if v is not None}))
    return path


def refused(path: Path, *said: str, **load) -> str:
    """The descriptor refused (exit 2's family), its message naming the file and each of `said`."""
    with pytest.raises(service.ServiceError) as caught:
        service.load(str(path), **load)
    message = str(caught.value)
    assert message.startswith(f"{path}: "), message
    for part in said:
        assert re.search(part, message), f"{part!r} not in {message!r}"
    return message


# --- the root: from where the descriptor lives or the command line ------------------------------------------------

@pytest.mark.parametrize(("root", "logging"), [("/", "/etc/hostname"), ("..", "../logback.xml"),
                                               ("../..", "../../logback.xml")])
def test_a_descriptors_own_root_is_refused(tmp_path, root, logging):
    """`root: /` made every file on the host a path the descriptor may name (copied to both machines)."""
    (tmp_path / "a" / "svc").mkdir(parents=True)
    for folder in (tmp_path, tmp_path / "a"):
        (folder / "logback.xml").write_text("<configuration/>")
    path = shop(tmp_path / "a" / "svc", root=root, logging=logging)
    refused(path, rf"root: '{re.escape(root)}' .* is not read from the descriptor", "--service-root")


def test_a_root_outside_holding_a_secret_is_refused(tmp_path):
    (tmp_path / "keys").mkdir()
    (tmp_path / "keys" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    path = shop(tmp_path / "svc", root=str(tmp_path), template="../keys/id_ed25519")
    refused(path, "root: .* is not read from the descriptor")


def test_a_root_equal_to_the_derived_one_is_taken(tmp_path):
    assert service.load(str(shop(tmp_path / "svc", root="."))).root == (tmp_path / "svc").resolve()


@pytest.mark.parametrize("given", ["/", "/tmp"])
def test_the_command_lines_root_is_never_the_root_file_system(tmp_path, given):
    path = shop(tmp_path / "svc", logging="/etc/hostname")
    refused(path, rf"root: {re.escape(given)} is the root file system or a folder directly under it", root=Path(given))


def test_the_command_lines_root_must_hold_the_descriptor(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    path = shop(tmp_path / "svc")
    refused(path, "does not hold the descriptor's own folder", root=tmp_path / "elsewhere")


def test_the_command_lines_root_widens_the_folder(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "logback.xml").write_text("<configuration/>")
    path = shop(tmp_path / "svc", logging="../conf/logback.xml")
    refused(path, "logging: ../conf/logback.xml is .*, outside")
    assert service.load(str(path), root=tmp_path).logging == tmp_path / "conf" / "logback.xml"


def test_a_descriptor_in_a_home_folder_may_not_reach_the_homes_keys(tmp_path, monkeypatch):
    """A descriptor dropped in /root would have had /root as its folder: `logging: .ssh/id_ed25519` copied."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\n")
    monkeypatch.setattr(descriptor, "_homes", lambda: {home.resolve()}, raising=False)
    path = shop(home, logging=".ssh/id_ed25519")
    refused(path, "is a user's home folder")


def test_a_descriptor_in_a_folder_holding_the_checkout_is_refused(tmp_path, monkeypatch):
    checkout = tmp_path / "lab"
    (checkout / ".lab" / "secrets").mkdir(parents=True)
    monkeypatch.setattr(paths, "ROOT", checkout)
    path = shop(tmp_path, logging="lab/.lab/secrets/box_login")
    (checkout / ".lab" / "secrets" / "box_login").write_text("secret")
    refused(path, "holding the lab's checkout")


def test_the_checkouts_descriptors_reach_the_checkout_but_not_the_labs_state(tmp_path, monkeypatch):
    """A descriptor in the checkout's services/ has the checkout as its root (the sample's builds are in app/, the
    examples' in .lab/ext), but not the lab's state: .lab/secrets, its SSH keys, .git's config, results/."""
    checkout = tmp_path / "lab"
    (checkout / ".lab" / "secrets").mkdir(parents=True)
    (checkout / ".lab" / "secrets" / "box_login").write_text("secret")
    (checkout / ".lab" / "ext").mkdir()
    (checkout / ".lab" / "ext" / "logback.xml").write_text("<configuration/>")
    for name in ("ROOT", "STATE_DIR", "RESULTS"):
        monkeypatch.setattr(paths, name, checkout / {"ROOT": "", "STATE_DIR": ".lab", "RESULTS": "results"}[name])
    monkeypatch.setattr(descriptor, "SERVICES", checkout / "services", raising=False)
    (checkout / ".git").mkdir()
    (checkout / ".git" / "config").write_text("[remote \"origin\"]\n\turl = https://user:token@example.com/lab\n")
    path = shop(checkout / "services", root="..", logging="../.lab/secrets/box_login")
    refused(path, "logging: ../.lab/secrets/box_login is .*, in the lab's own state or results")
    path = shop(checkout / "services", template="../.git/config")
    refused(path, "template: ../.git/config is .*, in the lab's own state or results")
    path = shop(checkout / "services", logging="../.lab/ext/logback.xml")
    assert service.load(str(path)).root == checkout


# --- stubs: every file seen with lstat, links and special files refused -------------------------------------------

def test_a_stub_file_linked_to_a_root_only_file_is_refused(tmp_path):
    """The mock never reads an unreferenced file of __files, but Ansible copied the link's target to both machines."""
    path = shop(tmp_path / "svc")
    (tmp_path / "svc" / "stubs" / "__files" / "shadow").symlink_to("/etc/shadow")
    refused(path, r"mock.stubs: __files/shadow: a symbolic link \(to /etc/shadow\)")


def test_a_mapping_linked_to_a_file_elsewhere_is_refused(tmp_path):
    (tmp_path / "elsewhere.json").write_text(json.dumps({**STUB, "request": {"urlPath": "/other"}}))
    path = shop(tmp_path / "svc")
    (tmp_path / "svc" / "stubs" / "mappings" / "other.json").symlink_to(tmp_path / "elsewhere.json")
    refused(path, "mock.stubs: mappings/other.json: a symbolic link")


def test_a_stub_folder_linked_elsewhere_is_refused(tmp_path):
    path = shop(tmp_path / "svc")
    (tmp_path / "svc" / "stubs" / "mappings" / "etc").symlink_to("/etc", target_is_directory=True)
    refused(path, "mock.stubs: mappings/etc: a symbolic link")


def test_a_files_folder_linked_to_etc_serving_passwd_is_refused(tmp_path):
    """bodyFileName was checked against __files as resolved: with __files a link to /etc, /etc/passwd was inside."""
    path = shop(tmp_path / "svc")
    files = tmp_path / "svc" / "stubs" / "__files"
    files.rmdir()
    files.symlink_to("/etc", target_is_directory=True)
    (tmp_path / "svc" / "stubs" / "mappings" / "price.json").write_text(json.dumps(
        {**STUB, "response": {"status": 200, "bodyFileName": "passwd"}}))
    refused(path, "mock.stubs: __files: a symbolic link")


def test_a_fifo_in_the_stubs_is_refused(tmp_path):
    """A FIFO blocks whoever reads it (the check, Ansible's copy) until a writer comes."""
    path = shop(tmp_path / "svc")
    os.mkfifo(tmp_path / "svc" / "stubs" / "__files" / "pipe")
    refused(path, r"mock.stubs: __files/pipe: not a regular file \(a FIFO, device or socket\)")


@pytest.mark.parametrize("body", ["../../etc/passwd", "/etc/passwd", "a/../../../../etc/passwd"])
def test_a_body_file_leading_out_of_files_is_refused(tmp_path, body):
    path = shop(tmp_path / "svc")
    (tmp_path / "svc" / "stubs" / "mappings" / "price.json").write_text(json.dumps(
        {**STUB, "response": {"status": 200, "bodyFileName": body}}))
    refused(path, rf"mock.stubs: mappings/price.json: response.bodyFileName: '{re.escape(body)}' is outside")


# --- properties: as Spring's relaxed binding binds them -----------------------------------------------------------

@pytest.mark.parametrize(("key", "said"), [
    ("SERVER_TOMCAT_THREADS_MAX", "set by the knob tomcat_threads_max .*takes SERVER_TOMCAT_THREADS_MAX as "
                                  "server.tomcat.threads.max"),
    ("server.tomcat[threads].max", "set by the knob tomcat_threads_max"),
    ("server..tomcat.threads.max", "set by the knob tomcat_threads_max"),
    ("SERVER_TOMCAT_MAX_CONNECTIONS", "set by the knob tomcat_max_connections"),
    ("SERVER_PORT", "set by the knob tomcat_http_port"),
    ("LAB_KIT_METRICS_PORT", "set by the lab"),
    ("SERVER_ADDRESS", "set by the lab: the lab binds the service to 127.0.0.1"),
])
def test_a_knob_owned_property_in_another_relaxed_form_is_refused(tmp_path, key, said):
    refused(shop(tmp_path, properties={key: 5}), rf"properties.{re.escape(key)}: {said}")


@pytest.mark.parametrize(("key", "value", "said"), [
    ("spring.config.import", "file:/etc/", "spring.config.…, which moves where Spring reads its configuration"),
    ("SPRING_CONFIG_LOCATION", "file:/root/", "spring.config.…, which moves where Spring reads"),
    ("spring.config.additional-location", "optional:file:/tmp/x/", "spring.config.…"),
    ("spring.config.name", "shadow", "spring.config.…"),
    ("loader.path", "/tmp/evil.jar", "loader.…, which are Spring Boot's PropertiesLauncher settings"),
    ("LOADER_MAIN", "evil.Main", "loader.…"),
    ("loader.config.location", "/tmp/loader.properties", "loader.…"),
    ("logging.config", "/root/x.xml", "logging.config.…, which is set by the lab from the descriptor's logging:"),
    ("spring.application.json", '{"server.tomcat.threads.max": 1}', "spring.application.json.…, which sets any "
                                                                     "property past this check"),
    ("SPRING_APPLICATION_JSON", '{"loader.path": "/tmp"}', "spring.application.json"),
    ("spring.cloud.bootstrap.location", "file:/etc/", "spring.cloud.bootstrap"),
])
def test_a_property_that_moves_the_services_configuration_is_refused(tmp_path, key, value, said):
    refused(shop(tmp_path, properties={key: value}), rf"properties.{re.escape(key)}: .*{re.escape(said)}")


@pytest.mark.parametrize(("key", "value"), [("java.system.class.loader", "evil.Loader"),
                                            ("java.security.manager", "evil.Manager"),
                                            ("JAVA_LIBRARY_PATH", "/tmp/evil"), ("jdk.module.main", "evil"),
                                            ("java.util.logging.config.class", "evil.Config"),
                                            ("com.sun.management.jmxremote.port", "9999"),
                                            ("javax.net.ssl.trustStore", "/etc/shadow"),
                                            ("logback.configurationFile", "/root/evil.xml")])
def test_a_jvm_system_property_is_refused(tmp_path, key, value):
    """service check hands every property to the JVM as -D: the JVM's own would load code or read files there."""
    refused(shop(tmp_path, properties={key: value}), rf"properties.{re.escape(key)}: .*are the JVM's or its logging "
            "library's system properties")


@pytest.mark.parametrize(("key", "value"), [("logging.file.name", "/etc/cron.d/lab"),
                                            ("LOGGING_FILE_PATH", "/root"), ("logging.file.name", "../../x.log"),
                                            ("logging.file.name", "${user.home}/x.log"),
                                            ("spring.banner.location", "file:/etc/shadow"),
                                            ("server.tomcat.accesslog.directory", "/etc/cron.d"),
                                            ("SERVER_TOMCAT_BASEDIR", "/root"),
                                            ("spring.pid.file", "/etc/ld.so.preload")])
def test_a_property_naming_a_file_outside_the_services_folder_is_refused(tmp_path, key, value):
    refused(shop(tmp_path, properties={key: value}), rf"properties.{re.escape(key)}: '{re.escape(value)}': .* only a "
            "path inside the service's folder")


def test_what_a_service_may_still_set_is_taken_and_reaches_the_check_as_given(tmp_path):
    taken = {"shop.pricing-url": "{mock}", "spring.profiles.active": "lab", "logging.file.name": "logs/extra.log",
             "server.tomcat.threadsMax": 9, "spring.banner.location": "classpath:banner.txt",
             "camel.component.kafka.lazy-start-producer": True, "greeting": "{{ not a template }}"}
    svc = service.load(str(shop(tmp_path, properties=taken)))
    assert svc.properties == taken
    argv = service_check.java_command(svc, tmp_path / "lab-kit.jar", 41234, "http://127.0.0.1:5555")
    assert "-Dlogging.file.name=logs/extra.log" in argv and not any(a.startswith("-Dspring.config") for a in argv)


def test_the_services_in_the_checkout_keep_loading_without_root():
    for name in ("sample", "testapp", "examples/tripbooking", "examples/petclinic-rest"):
        raw = yaml.safe_load(service.find(name).read_text())
        assert "root" not in raw, name
        home = descriptor.home_of(service.find(name).resolve().parent, None, name)
        assert home.root == paths.ROOT.resolve(), name


def test_service_check_refuses_the_root_file_system_as_its_root(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(service_check, "start_once", lambda *a, **k: pytest.fail("must not start anything"))
    path = shop(tmp_path / "svc")
    assert cli.main(["service", "check", str(path), "--service-root", "/"]) == 2
    assert "the root file system" in capsys.readouterr().err


def test_a_runs_service_root_widens_only_its_own_descriptor(tmp_path):
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "logback.xml").write_text("<configuration/>")
    path = shop(tmp_path / "svc", logging="../conf/logback.xml")
    assert cli.chosen_service(str(path), None, root=tmp_path).logging == tmp_path / "conf" / "logback.xml"
    with pytest.raises(ValueError, match="--service-root widens the folder a descriptor of yours may reach: add "
                                         "--service PATH"):
        cli.chosen_service(None, None, root=tmp_path)
