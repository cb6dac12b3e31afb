"""The machine as a JVM without options of its own sees it: what the guest's collection ran (config/jvm-shape.txt:
`java -Xlog:os+container=debug -XshowSettings:system -XX:+PrintFlagsFinal -version`, lab/experiment/guest/run.sh),
read into its container support (cgroupv1, cgroupv2 or none), CPUs, memory limit, default heap and collector: the
same shape on a VM and a container of one size, or a difference the report names (run.json versions.jvm_shape)."""
from __future__ import annotations

import re
from pathlib import Path

_FLAG = re.compile(r"^\s*\S+\s+(\w+)\s+=\s+(\S+)")
_SETTING = re.compile(r"^\s*(Provider|Effective CPU Count|Memory Limit|CPU Quota|CPU Period):\s*(.+?)\s*$")


def read(machine_dir: Path) -> dict:
    """The machine's config/jvm-shape.txt read; {} when the machine sent none (a run before it, a machine without
    Java)."""
    try:
        text = (machine_dir / "config" / "jvm-shape.txt").read_text()
    except OSError:
        return {}
    flags, settings = {}, {}
    for line in text.splitlines():
        if (found := _SETTING.match(line)):
            settings[found.group(1)] = found.group(2)
        elif (found := _FLAG.match(line)):
            flags[found.group(1)] = found.group(2)
    if not flags and not settings:
        return {}
    gcs = [name[3:-2] for name, value in flags.items() if name.startswith("Use") and value == "true"]
    shape = {"container_support": settings.get("Provider", "none"),
             "cpus": _int(settings.get("Effective CPU Count")),
             "memory_limit": settings.get("Memory Limit"),
             "max_heap_mb": _mib(flags.get("MaxHeapSize")), "initial_heap_mb": _mib(flags.get("InitialHeapSize")),
             "gc": gcs[0] if gcs else None, "compiler_threads": _int(flags.get("CICompilerCount"))}
    return {k: v for k, v in shape.items() if v is not None}


def words(shape: dict) -> str:
    """e.g. '2 CPUs, memory limit 512.00M, heap ≤ 128 MiB, SerialGC, 2 compiler threads (cgroupv1)'."""
    bits = [f"{shape['cpus']} CPUs" if "cpus" in shape else None,
            f"memory limit {shape['memory_limit']}" if "memory_limit" in shape else None,
            f"heap ≤ {shape['max_heap_mb']} MiB" if "max_heap_mb" in shape else None,
            f"{shape['gc']}GC" if "gc" in shape else None,
            f"{shape['compiler_threads']} compiler threads" if "compiler_threads" in shape else None]
    return ", ".join(b for b in bits if b) + f" ({shape.get('container_support', 'none')})"


def _int(text) -> int | None:
    try:
        return int(str(text).strip())
    except (TypeError, ValueError):
        return None


def _mib(text) -> int | None:
    number = _int(text)
    return None if number is None else number // 1048576
