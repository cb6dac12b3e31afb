"""A Spring Boot jar's facts read from the jar itself (lab/provision/jarinfo.py)."""
from __future__ import annotations

import zipfile

import pytest
from service_parts import BOOT2, BOOT32, boot_jar

from lab import paths
from lab.provision import jarinfo


def test_the_facts_of_a_boot_2_7_jar_on_tomcat(tmp_path):
    facts = jarinfo.read(boot_jar(tmp_path / "petclinic.jar"))
    assert (facts.boot_version, facts.boot_line, facts.loader, facts.java_release) == ("2.7.3", "2.7", "classic", 17)
    assert (facts.server, facts.tomcat_version, facts.tomcat_major) == ("tomcat", "9.0.65", 9)
    assert (facts.camel_version, facts.actuator, facts.micrometer) == (None, False, False)


def test_the_facts_of_a_boot_3_2_camel_jar_with_actuator(tmp_path):
    libs = ("spring-boot-3.5.7.jar", "tomcat-embed-core-10.1.48.jar", "camel-api-4.8.0.jar",
            "camel-spring-boot-4.8.0.jar", "spring-boot-actuator-3.5.7.jar", "micrometer-core-1.15.5.jar",
            "jackson-datatype-jsr310-2.19.2.jar")
    facts = jarinfo.read(boot_jar(tmp_path / "trip.jar", BOOT32, libs, major=65))
    assert (facts.boot_line, facts.loader, facts.java_release, facts.tomcat_major) == ("3", "launch", 21, 10)
    assert (facts.camel_version, facts.actuator, facts.micrometer) == ("4.8.0", True, True)
    assert facts.to_dict()["boot_line"] == "3"


def test_the_boot_a_service_runs_on_is_its_spring_boot_library_not_the_packaging_plugins(tmp_path):
    """camel-spring-boot-examples 4.8.0 repackaged by a newer spring-boot-maven-plugin says 4.2.0-M1 in its
    manifest and runs on spring-boot-3.3.2.jar."""
    repackaged = {**BOOT32, "Spring-Boot-Version": "4.2.0-M1"}
    facts = jarinfo.read(boot_jar(tmp_path / "trip.jar", repackaged, ("spring-boot-3.3.2.jar",
                                                                     "tomcat-embed-core-10.1.26.jar")))
    assert (facts.boot_version, facts.boot_line) == ("3.3.2", "3")


def test_a_jar_without_a_web_server_and_the_version_from_its_spring_boot_jar(tmp_path):
    manifest = {k: v for k, v in BOOT2.items() if k != "Spring-Boot-Version"}
    facts = jarinfo.read(boot_jar(tmp_path / "batch.jar", manifest, ("spring-boot-2.7.18.jar",)))
    assert (facts.boot_version, facts.server, facts.tomcat_version) == ("2.7.18", None, None)
    jetty = boot_jar(tmp_path / "jetty.jar", libs=("spring-boot-2.7.3.jar", "jetty-server-9.4.48.v20220622.jar"))
    assert jarinfo.read(jetty).server == "jetty"


def damaged(jar):
    """The jar with its manifest's deflated bytes overwritten (a stream zlib refuses)."""
    data = bytearray(jar.read_bytes())
    with zipfile.ZipFile(jar) as z:
        info = z.getinfo("META-INF/MANIFEST.MF")
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    data[start:start + 8] = b"\xff" * 8
    jar.write_bytes(bytes(data))
    return jar


def encrypted(jar):
    """The jar with every entry flagged as encrypted (general purpose bit 0), as a password-protected zip has."""
    data = bytearray(jar.read_bytes())
    for signature, flag_at in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = data.find(signature)
        while at != -1:
            data[at + flag_at] |= 1
            at = data.find(signature, at + 4)
    jar.write_bytes(bytes(data))
    return jar


@pytest.mark.parametrize(("make", "said"), [
    (lambda p: p, "no such file"),
    (lambda p: (p.write_text("not a zip"), p)[1], "not a jar (not a zip file)"),
    (lambda p: boot_jar(p, manifest=None), "no META-INF/MANIFEST.MF: not an executable jar"),
    (lambda p: boot_jar(p, {**BOOT2, "Main-Class": "shop.App"}),
     "Main-Class shop.App is not Spring Boot's JarLauncher"),
    (lambda p: boot_jar(p, {k: v for k, v in BOOT2.items() if k != "Start-Class"}),
     "the manifest has no Start-Class"),
    (lambda p: boot_jar(p, {k: v for k, v in BOOT2.items() if k != "Spring-Boot-Version"}, libs=()),
     "neither the manifest's Spring-Boot-Version nor a BOOT-INF/lib/spring-boot jar"),
    (lambda p: boot_jar(p, start=None), "its Start-Class shop.App is not in the jar (BOOT-INF/classes/shop/App.class)"),
    # issue 53, item 7: tracebacks before (zlib.error, RuntimeError)
    (lambda p: damaged(boot_jar(p, compressed=True)), "an entry of the jar cannot be read (Error -3"),
    (lambda p: encrypted(boot_jar(p)), "an entry of the jar cannot be read (File "),
])
def test_a_jar_the_lab_cannot_run_is_named_with_why(tmp_path, make, said):
    jar = make(tmp_path / "service.jar")
    with pytest.raises(jarinfo.JarError) as refused:
        jarinfo.read(jar)
    assert str(refused.value).startswith(f"{tmp_path / 'service.jar'}: ") and said in str(refused.value)


def test_the_sample_apps_jar_says_what_its_pom_says():
    jar = paths.ROOT / "app" / "camel3" / "target" / "camel-tuning-app-camel3.jar"
    if not jar.exists():
        pytest.skip("the sample app is not built (./test.sh app builds it)")
    facts = jarinfo.read(jar)
    assert (facts.boot_version, facts.tomcat_version, facts.camel_version) == ("2.7.18", "9.0.113", "3.22.2")
    assert (facts.start_class, facts.java_release, facts.actuator) == ("lab.camel.app.LabApplication", 17, True)
