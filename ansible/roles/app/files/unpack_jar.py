#!/usr/bin/env python3
"""Unpacks a Spring Boot fat jar for class data sharing: the JVM archives only classes it loaded from plain
jars on its class path, never from the jars nested in a fat jar nor from a directory. Writes into DEST:
lib/*.jar (BOOT-INF/lib, as they are), app-classes.jar (BOOT-INF/classes), and launch.args, a java
argument file with the class path in the jar's own order (BOOT-INF/classpath.idx) and the main class.
DEST/source.sha256 remembers which jar it holds and which unpacker made it: the same jar unpacked by the same
unpacker again changes nothing (a mended unpacker unpacks again: the first kept no directory entries).

    unpack_jar.py JAR DEST      prints "unpacked" or "unchanged"; exit 1 with the reason otherwise
"""
import hashlib
import os
import shutil
import sys
import zipfile


def unpack(jar: str, dest: str) -> bool:
    digest = hashlib.sha256()
    for source in (jar, os.path.abspath(__file__)):
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
            with fat.open(name) as nested, open(os.path.join(work, "lib", os.path.basename(name)), "wb") as out:
                shutil.copyfileobj(nested, out)
        with zipfile.ZipFile(os.path.join(work, "app-classes.jar"), "w", zipfile.ZIP_DEFLATED) as classes:
            # directories too: Spring's component scan finds the app's routes by listing a package's
            # directory entry (without them the app starts healthy and answers every route with 404)
            for entry in fat.infolist():
                name = entry.filename[len("BOOT-INF/classes/"):]
                if entry.filename.startswith("BOOT-INF/classes/") and name:
                    classes.writestr(name, b"" if entry.is_dir() else fat.read(entry))
    path = [os.path.join(dest, "app-classes.jar")] + [os.path.join(dest, "lib", os.path.basename(n)) for n in order]
    with open(os.path.join(work, "launch.args"), "w") as args:
        args.write(f"-cp {':'.join(path)}\n{main}\n")
    with open(os.path.join(work, "source.sha256"), "w") as f:
        f.write(digest.hexdigest() + "\n")
    shutil.rmtree(dest, ignore_errors=True)
    os.rename(work, dest)
    return True


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    try:
        print("unpacked" if unpack(sys.argv[1], sys.argv[2]) else "unchanged")
    except (OSError, KeyError, ValueError, zipfile.BadZipFile) as failure:
        sys.exit(f"unpack_jar.py: {sys.argv[1]}: {failure}")
