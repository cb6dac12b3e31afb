#!/usr/bin/env python3
"""Unpacks a Spring Boot fat jar for class data sharing: the JVM archives only classes it loaded from plain
jars on its class path, never from the jars nested in a fat jar nor from a directory. Writes into DEST:
lib/*.jar (BOOT-INF/lib, as they are), app-classes.jar (BOOT-INF/classes), and launch.args, a java
argument file with the class path in the jar's own order (BOOT-INF/classpath.idx) and the main class.
The class path is relative to DEST's parent, where the JVM runs (the unit's working directory), and the same
jar unpacked anywhere gives the same files, sizes and times: a class-data-sharing archive names its class
path as given and checks each jar's size and time, so one made of an unpacking on the controller serves the
machines' unpackings (tasks/cds.yml).
DEST/source.sha256 remembers which jar it holds and which unpacker made it: the same jar unpacked by the same
unpacker again changes nothing (a mended unpacker unpacks again: the first kept no directory entries).

    unpack_jar.py JAR DEST [KIT]         prints "unpacked" or "unchanged"; exit 1 with the reason otherwise
    unpack_jar.py --fat JAR DEST KIT     only DEST/launch.args, to start the fat jar as it is (knob app_unpacked
                                         false); prints "written" or "unchanged"

KIT, the lab's tuning kit (kit/README.md): copied into lib/ and put last on the class path (the service's own
classes always win). With --fat, the jar is started by Spring Boot's PropertiesLauncher of the jar's own loader
(the JarLauncher ignores loader.path) with the kit on loader.path, appended to the jar's class path.
"""
import calendar
import hashlib
import os
import shutil
import sys
import zipfile


def entry_time(entry: zipfile.ZipInfo) -> int:
    """An entry's time as seconds, read as UTC whatever the machine's zone: the same on every machine."""
    return calendar.timegm((*entry.date_time, 0, 0, 0))


def read_manifest(fat: zipfile.ZipFile) -> dict[str, str]:
    text = fat.read("META-INF/MANIFEST.MF").decode().replace("\r\n ", "").replace("\n ", "")
    return dict(line.split(": ", 1) for line in text.splitlines() if ": " in line)


def start_class(manifest: dict[str, str], jar: str) -> str:
    main = manifest.get("Start-Class")
    if not main:
        raise ValueError(f"{jar} names no Start-Class: not a Spring Boot fat jar")
    return main


def properties_launcher(manifest: dict[str, str], jar: str) -> str:
    """The PropertiesLauncher beside the jar's own launcher: org.springframework.boot.loader (Boot < 3.2) or
    org.springframework.boot.loader.launch (3.2+; no alias of the old name)."""
    main = manifest.get("Main-Class", "")
    package, _, name = main.rpartition(".")
    if name not in ("JarLauncher", "PropertiesLauncher") or not package.startswith("org.springframework.boot.loader"):
        raise ValueError(f"{jar}: Main-Class {main or '(none)'} is not Spring Boot's launcher")
    return f"{package}.PropertiesLauncher"


def stamp_of(*sources: str) -> str:
    digest = hashlib.sha256()
    for source in (*sources, os.path.abspath(__file__)):
        with open(source, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def unchanged(dest: str, digest: str) -> bool:
    stamp = os.path.join(dest, "source.sha256")
    return os.path.exists(stamp) and open(stamp).read().strip() == digest


def replace(work: str, dest: str, digest: str) -> None:
    with open(os.path.join(work, "source.sha256"), "w") as f:
        f.write(digest + "\n")
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(work, dest)


def fat_launch(jar: str, dest: str, kit: str) -> bool:
    """DEST/launch.args starting JAR as it is, with KIT on loader.path."""
    digest = stamp_of(jar, kit) + " fat"
    if unchanged(dest, digest):
        return False
    with zipfile.ZipFile(jar) as fat:
        manifest = read_manifest(fat)
    main, launcher = start_class(manifest, jar), properties_launcher(manifest, jar)
    work = dest + ".new"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    with open(os.path.join(work, "launch.args"), "w") as args:
        args.write(f"-Dloader.path={os.path.abspath(kit)}\n-Dloader.main={main}\n-cp {os.path.abspath(jar)}\n{launcher}\n")
    replace(work, dest, digest)
    return True


def unpack(jar: str, dest: str, kit: str | None = None) -> bool:
    digest = stamp_of(jar, *([kit] if kit else []))
    if unchanged(dest, digest):
        return False
    work = dest + ".new"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "lib"))
    with zipfile.ZipFile(jar) as fat:
        main = start_class(read_manifest(fat), jar)
        order = [line.split('"')[1] for line in fat.read("BOOT-INF/classpath.idx").decode().splitlines()
                 if line.startswith("- ")]
        for name in order:
            lib = os.path.join(work, "lib", os.path.basename(name))
            with fat.open(name) as nested, open(lib, "wb") as out:
                shutil.copyfileobj(nested, out)
            os.utime(lib, (entry_time(fat.getinfo(name)),) * 2)
        # Stored, not compressed: its size then depends on the classes only, not on the machine's zlib.
        # Directories too: Spring's component scan finds the app's routes by listing a package's directory
        # entry (without them the app starts healthy and answers every route with 404).
        entries = [entry for entry in fat.infolist()
                   if entry.filename.startswith("BOOT-INF/classes/") and entry.filename != "BOOT-INF/classes/"]
        app_classes = os.path.join(work, "app-classes.jar")
        with zipfile.ZipFile(app_classes, "w", zipfile.ZIP_STORED) as classes:
            for entry in entries:
                copy = zipfile.ZipInfo(entry.filename[len("BOOT-INF/classes/"):], entry.date_time)
                copy.external_attr = entry.external_attr
                classes.writestr(copy, b"" if entry.is_dir() else fat.read(entry))
        os.utime(app_classes, (max((entry_time(e) for e in entries), default=0),) * 2)
    if kit:
        order.append("lab-kit.jar")
        shutil.copy2(kit, os.path.join(work, "lib", "lab-kit.jar"))
    where = os.path.basename(os.path.normpath(dest))
    path = [os.path.join(where, "app-classes.jar")] + [os.path.join(where, "lib", os.path.basename(n)) for n in order]
    with open(os.path.join(work, "launch.args"), "w") as args:
        args.write(f"-cp {':'.join(path)}\n{main}\n")
    replace(work, dest, digest)
    return True


if __name__ == "__main__":
    fat_jar = sys.argv[1:2] == ["--fat"]
    argv = sys.argv[2:] if fat_jar else sys.argv[1:]
    if len(argv) != 3 and (fat_jar or len(argv) != 2):
        sys.exit(__doc__)
    try:
        if fat_jar:
            print("written" if fat_launch(*argv) else "unchanged")
        else:
            print("unpacked" if unpack(*argv) else "unchanged")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as failure:
        sys.exit(f"unpack_jar.py: {sys.argv[1]}: {failure}")
