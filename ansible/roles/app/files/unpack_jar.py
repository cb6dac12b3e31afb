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

    unpack_jar.py JAR DEST [KIT]   prints "unpacked" or "unchanged"; exit 1 with the reason otherwise

KIT, a jar copied into lib/ and put last on the class path: the lab's tuning kit for a service (the service's own
classes always win).
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


def unpack(jar: str, dest: str, kit: str | None = None) -> bool:
    digest = hashlib.sha256()
    for source in (jar, os.path.abspath(__file__), *([kit] if kit else [])):
        with open(source, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                digest.update(block)
    stamp = os.path.join(dest, "source.sha256")
    if os.path.exists(stamp) and open(stamp).read().strip() == digest.hexdigest():
        return False
    work = dest + ".new"
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "lib"))
    with zipfile.ZipFile(jar) as fat:
        manifest = dict(line.split(": ", 1) for line in
                        fat.read("META-INF/MANIFEST.MF").decode().replace("\r\n ", "").replace("\n ", "").splitlines()
                        if ": " in line)
        main = manifest.get("Start-Class")
        if not main:
            raise ValueError(f"{jar} names no Start-Class: not a Spring Boot fat jar")
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
    with open(os.path.join(work, "source.sha256"), "w") as f:
        f.write(digest.hexdigest() + "\n")
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(work, dest)
    return True


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    try:
        print("unpacked" if unpack(*sys.argv[1:]) else "unchanged")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as failure:
        sys.exit(f"unpack_jar.py: {sys.argv[1]}: {failure}")
