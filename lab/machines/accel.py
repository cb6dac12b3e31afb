"""Which accelerator libvirt should use: kvm only where the CPU has vmx/svm and a test boot works.

On some hosts /dev/kvm exists but cannot run a stock kernel (the boot hangs silently), so the flag
alone is not enough: a short test boot of the host's kernel must reach its first console line.
"""
from __future__ import annotations

import functools
import os
import re
import subprocess
from pathlib import Path

TEST_BOOT_SECONDS = 20


def cpu_has_virtualization(cpuinfo: str) -> bool:
    return re.search(r"^flags\s*:.*\b(vmx|svm)\b", cpuinfo, re.MULTILINE) is not None


def _test_kernel() -> Path | None:
    kernels = sorted(Path("/boot").glob("vmlinuz-*"))
    return kernels[-1] if kernels else None


@functools.cache         # once per command: the image made ahead asks for the machines' kind before the run does
def kvm_test_boot(kernel: Path, seconds: int = TEST_BOOT_SECONDS) -> bool:
    """Boots `kernel` under KVM without a root disk; working KVM prints the kernel banner at once."""
    cmd = ["qemu-system-x86_64", "-accel", "kvm", "-m", "128", "-nographic", "-no-reboot",
           "-kernel", str(kernel), "-append", "console=ttyS0 panic=-1"]
    try:
        out = subprocess.run(cmd, capture_output=True, timeout=seconds, text=True, errors="replace").stdout
    except subprocess.TimeoutExpired as slow:
        out = (slow.stdout or b"").decode(errors="replace") if isinstance(slow.stdout, bytes) else (slow.stdout or "")
    except OSError:
        return False
    return "Linux version" in out


def kvm_candidate(cpuinfo: str | None = None) -> bool:
    """KVM might work here (the CPU flag and a usable /dev/kvm): worth QEMU's test boot."""
    if cpuinfo is None:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    return cpu_has_virtualization(cpuinfo) and os.access("/dev/kvm", os.R_OK | os.W_OK)


def detect(requested: str, cpuinfo: str | None = None, test_boot=kvm_test_boot) -> tuple[str, str]:
    """(accelerator, why) for the requested setting auto | kvm | tcg."""
    if requested == "tcg":
        return "tcg", "requested"
    if cpuinfo is None:
        cpuinfo = Path("/proc/cpuinfo").read_text()
    if not cpu_has_virtualization(cpuinfo):
        if requested == "kvm":
            raise ValueError("accelerator: kvm requested but the CPU shows no vmx/svm flag")
        return "tcg", "the CPU has no vmx/svm flag"
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        if requested == "kvm":
            raise ValueError("accelerator: kvm requested but /dev/kvm is not usable")
        return "tcg", "/dev/kvm is missing or not accessible"
    if requested == "kvm":
        return "kvm", "requested"
    kernel = _test_kernel()
    if kernel is None:
        return "tcg", "no kernel in /boot for a KVM test boot"
    if test_boot(kernel):
        return "kvm", f"vmx/svm present and a test boot of {kernel.name} worked"
    return "tcg", f"vmx/svm present but a KVM test boot of {kernel.name} printed nothing in {TEST_BOOT_SECONDS} s"
