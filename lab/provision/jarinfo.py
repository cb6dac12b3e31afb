"""What a Spring Boot executable jar is, read from the jar itself (issue 38): its Boot line and loader, the Java it
was compiled for, its web server, Tomcat's and Camel's versions, whether it has actuator and Micrometer. Nothing
is typed by hand in a service's descriptor that the jar can say.

Read: META-INF/MANIFEST.MF (Main-Class, Start-Class, Spring-Boot-Classes), the names of the jars in BOOT-INF/lib
(`spring-boot-2.7.18.jar`: the Boot the service runs on, which the manifest's Spring-Boot-Version, the packaging
plugin's, need not be; `tomcat-embed-core-9.0.83.jar`; a Camel Spring Boot jar has no camel-core jar, so Camel's
version is camel-api's), and the class-file version of the Start-Class.
"""
from __future__ import annotations

import re
import zipfile
import zlib
from dataclasses import asdict, dataclass
from pathlib import Path

from lab.errors import BadInput

# Main-Class of Boot's launchers: the package moved in Boot 3.2 (spring-projects/spring-boot#38775)
LAUNCHERS = {"org.springframework.boot.loader.JarLauncher": "classic",
             "org.springframework.boot.loader.launch.JarLauncher": "launch"}
PROPERTIES_LAUNCHER = {"classic": "org.springframework.boot.loader.PropertiesLauncher",
                       "launch": "org.springframework.boot.loader.launch.PropertiesLauncher"}
SERVERS = {"tomcat-embed-core": "tomcat", "jetty-server": "jetty", "undertow-core": "undertow"}
_LIB = re.compile(r"(?P<name>[A-Za-z0-9_.]+(?:-[A-Za-z][A-Za-z0-9_.]*)*)-(?P<version>\d[\w.+-]*)\.jar")


class JarError(BadInput):
    """A jar the lab cannot run as a Spring Boot service; the message names the jar and why."""


@dataclass(frozen=True)
class JarFacts:
    path: str
    main_class: str
    start_class: str
    loader: str                   # classic (Boot ≤ 3.1's package) or launch (Boot 3.2+)
    boot_version: str
    java_release: int             # the Java the Start-Class was compiled for (class file major - 44)
    server: str | None            # tomcat, jetty, undertow, or None (not a web service)
    tomcat_version: str | None
    camel_version: str | None
    actuator: bool
    micrometer: bool

    @property
    def boot_line(self) -> str:
        """'2.7', '3' or '4' (and '2.x' before 2.7): what the kit and the knobs depend on."""
        major, minor = (int(x) for x in self.boot_version.split(".")[:2])
        if major == 2:
            return "2.7" if minor >= 7 else "2.x"
        return str(major)

    @property
    def tomcat_major(self) -> int | None:
        return int(self.tomcat_version.split(".")[0]) if self.tomcat_version else None

    def to_dict(self) -> dict:
        return {**asdict(self), "boot_line": self.boot_line}


def libraries(names) -> dict[str, str]:
    """BOOT-INF/lib/<artifact>-<version>.jar entries → {artifact: version}."""
    found = {}
    for name in names:
        if not name.startswith("BOOT-INF/lib/"):
            continue
        match = _LIB.fullmatch(name.rsplit("/", 1)[1])
        if match:
            found[match["name"]] = match["version"]
    return found


def _manifest(jar: zipfile.ZipFile, where: str) -> dict[str, str]:
    try:
        text = jar.read("META-INF/MANIFEST.MF").decode("utf-8", "replace")
    except KeyError:
        raise JarError(f"{where}: no META-INF/MANIFEST.MF: not an executable jar") from None
    fields, last = {}, None
    for line in text.splitlines():
        if line.startswith(" ") and last:           # a continuation line (72-byte wrapping)
            fields[last] += line[1:]
        elif ":" in line:
            last, value = line.split(":", 1)
            fields[last.strip()] = value.strip()
    return fields


def _java_release(jar: zipfile.ZipFile, classes: str, start_class: str, where: str) -> int:
    entry = f"{classes}{start_class.replace('.', '/')}.class"
    try:
        head = jar.read(entry)[:8]
    except KeyError:
        raise JarError(f"{where}: its Start-Class {start_class} is not in the jar ({entry})") from None
    if head[:4] != b"\xca\xfe\xba\xbe":
        raise JarError(f"{where}: {entry} is not a class file")
    return int.from_bytes(head[6:8], "big") - 44


def read(path: str | Path) -> JarFacts:
    """The facts of a Spring Boot executable jar; JarError naming the jar and the problem otherwise."""
    path = Path(path)
    where = str(path)
    if not path.is_file():
        raise JarError(f"{where}: no such file")
    try:
        with zipfile.ZipFile(path) as jar:
            manifest = _manifest(jar, where)
            main = manifest.get("Main-Class", "")
            if main not in LAUNCHERS:
                raise JarError(f"{where}: Main-Class {main or '(none)'} is not Spring Boot's JarLauncher: not a "
                               "Spring Boot executable jar (build it with spring-boot-maven-plugin's repackage)")
            start = manifest.get("Start-Class")
            if not start:
                raise JarError(f"{where}: the manifest has no Start-Class (the application's main class)")
            libs = libraries(jar.namelist())
            # the spring-boot library the service runs on; the manifest's version is the packaging plugin's (a jar
            # repackaged by a newer plugin says that plugin's version)
            boot = libs.get("spring-boot") or manifest.get("Spring-Boot-Version")
            if not boot or not re.match(r"\d+\.\d+", boot):
                raise JarError(f"{where}: neither the manifest's Spring-Boot-Version nor a BOOT-INF/lib/spring-boot "
                               "jar says which Spring Boot it is")
            release = _java_release(jar, manifest.get("Spring-Boot-Classes", "BOOT-INF/classes/"), start, where)
    except zipfile.BadZipFile:
        raise JarError(f"{where}: not a jar (not a zip file)") from None
    except (zlib.error, EOFError, RuntimeError, NotImplementedError) as e:    # damaged, encrypted or odd entries
        raise JarError(f"{where}: an entry of the jar cannot be read ({e}): build the jar again") from None
    except OSError as e:
        raise JarError(f"{where}: cannot be read ({e.strerror or e})") from None
    server = next((kind for lib, kind in SERVERS.items() if lib in libs), None)
    return JarFacts(path=where, main_class=main, start_class=start, loader=LAUNCHERS[main], boot_version=boot,
                    java_release=release, server=server, tomcat_version=libs.get("tomcat-embed-core"),
                    camel_version=libs.get("camel-api"), actuator="spring-boot-actuator" in libs,
                    micrometer="micrometer-core" in libs)
