"""Writes roles/knobs/files/sysctl-kinds.yml: what each of the guest kernel's sysctl settings (files/sysctl-keys.txt)
takes, so the validation names a value the kernel would refuse (a word for a number, too many numbers, a number
wider than the kernel's type) before anything changes.

    .venv/bin/python ansible/tests/sysctl_kinds.py [--proc /proc/sys] [--source TEXT]

Each setting is read from --proc (this host's /proc/sys by default; a lab machine's is the real thing: copy
the script there and run it with python3). A value made of integers is `int N` (N numbers, e.g. tcp_rmem's 3),
`long N` where the kernel keeps it in 64 bits (LONG below, or a value that does not fit 32 bits); anything else
is `str`. A setting the kernel there lacks takes its kind from ABSENT, else `unknown` (then only the value's
characters are checked).
"""
from __future__ import annotations

import argparse
import re
import sys
import textwrap
from pathlib import Path

FILES = Path(__file__).resolve().parent.parent / "roles" / "knobs" / "files"
KEYS = FILES / "sysctl-keys.txt"
KINDS = FILES / "sysctl-kinds.yml"

# Settings a 64-bit handler serves (proc_doulongvec_minmax, proc_dolongvec_minmax_bpf_restricted, the hung-task and
# taint handlers: unsigned long) in Linux 6.1's sources, whose value on a small machine fits 32 bits.
LONG = {
    "fs.aio-max-nr", "fs.aio-nr", "fs.epoll.max_user_watches", "fs.file-max", "fs.file-nr",
    "fs.pipe-user-pages-hard", "fs.pipe-user-pages-soft",
    "kernel.hung_task_check_count", "kernel.hung_task_check_interval_secs", "kernel.hung_task_timeout_secs",
    "kernel.panic_print", "kernel.shmall", "kernel.shmmax", "kernel.tainted",
    "vm.admin_reserve_kbytes", "vm.dirty_background_bytes", "vm.dirty_bytes", "vm.mmap_min_addr",
    "vm.nr_hugepages", "vm.nr_hugepages_mempolicy", "vm.nr_overcommit_hugepages", "vm.overcommit_kbytes",
    "vm.user_reserve_kbytes",
    "net.core.bpf_jit_limit", "net.ipv4.ipfrag_high_thresh", "net.ipv4.ipfrag_low_thresh", "net.ipv4.tcp_mem",
    "net.ipv4.udp_mem", "net.ipv4.tcp_comp_sack_delay_ns", "net.ipv4.tcp_comp_sack_slack_ns",
    "net.ipv6.ioam6_id_wide", "net.ipv6.ip6frag_high_thresh", "net.ipv6.ip6frag_low_thresh",
    "net.netfilter.nf_conntrack_frag6_high_thresh", "net.netfilter.nf_conntrack_frag6_low_thresh",
}
# Settings of the guest's kernel (Debian 12's config) that a stand-in kernel may lack, or that read empty there
# (a list of ports, an address): their kind from the kernel's documentation (Documentation/admin-guide/sysctl/,
# Documentation/networking/*-sysctl.rst).
ABSENT = {
    **dict.fromkeys((
        "crypto.fips_enabled", "debug.kprobes-optimization", "dev.hpet.max-user-freq",
        "dev.mac_hid.mouse_button2_keycode", "dev.mac_hid.mouse_button3_keycode", "dev.mac_hid.mouse_button_emulation",
        "dev.scsi.logging_level", "fs.quota.warnings", "fs.verity.require_signatures", "kernel.acpi_video_flags",
        "kernel.apparmor_display_secid_mode", "kernel.kexec_load_disabled", "kernel.modules_disabled",
        "kernel.sched_child_runs_first", "kernel.sched_energy_aware", "kernel.sched_schedstats",
        "kernel.stack_tracer_enabled", "kernel.sysrq", "kernel.unprivileged_userns_apparmor_policy",
        "kernel.unprivileged_userns_clone", "kernel.yama.ptrace_scope", "net.netfilter.nf_conntrack_dccp_loose",
        "net.netfilter.nf_conntrack_dccp_timeout_closereq", "net.netfilter.nf_conntrack_dccp_timeout_closing",
        "net.netfilter.nf_conntrack_dccp_timeout_open", "net.netfilter.nf_conntrack_dccp_timeout_partopen",
        "net.netfilter.nf_conntrack_dccp_timeout_request", "net.netfilter.nf_conntrack_dccp_timeout_respond",
        "net.netfilter.nf_conntrack_dccp_timeout_timewait", "net.netfilter.nf_flowtable_tcp_timeout",
        "net.netfilter.nf_flowtable_udp_timeout", "vm.memory_failure_early_kill", "vm.memory_failure_recovery"),
        "int 1"),
    **dict.fromkeys(("crypto.fips_name", "crypto.fips_version", "kernel.modprobe", "net.ipv4.ip_local_reserved_ports",
                     "net.ipv6.conf.*.stable_secret"), "str"),
}
INTEGERS = re.compile(r"-?\d+(\s+-?\d+)*")
INTERFACE_FOR = {"conf": "default", "neigh": "default"}    # a per-interface setting is read from the template


def keys(path: Path = KEYS) -> list[str]:
    return [line.strip() for line in path.read_text().splitlines() if line.strip() and not line.startswith("#")]


def proc_path(proc: Path, key: str) -> Path:
    """A dotted name → its /proc/sys file: a per-interface `*` read from `default`, a `/` in a part is a `.`."""
    parts = key.split(".")
    if len(parts) > 3 and parts[3] == "*" and parts[2] in INTERFACE_FOR:
        parts[3] = INTERFACE_FOR[parts[2]]
    return proc.joinpath(*(p.replace("/", ".") for p in parts))


def kind(key: str, text: str | None) -> str:
    """`int N`, `long N`, `str` or `unknown` for one setting whose value reads `text` (None: unreadable)."""
    value = (text or "").strip()
    if not value:
        return ABSENT.get(key, "unknown")
    if not INTEGERS.fullmatch(value):
        return "str"
    numbers = [int(n) for n in value.split()]
    wide = key in LONG or any(not -2 ** 31 <= n <= 2 ** 32 - 1 for n in numbers)
    return f"{'long' if wide else 'int'} {len(numbers)}"


def render(proc: Path, source: str) -> str:
    lines = ["---",
             "# What each setting of files/sysctl-keys.txt takes, for roles/knobs' check of base_sysctl values:",
             "# `int N` N integers, each within 32 bits (-2^31 … 2^32-1; e.g. tcp_rmem's 3), `long N` the same in 64",
             "# bits, `str` a text, `unknown` only the characters checked. Generated by ansible/tests/sysctl_kinds.py.",
             *textwrap.wrap(f"Source: {source}.", 110, initial_indent="# ", subsequent_indent="# "),
             "# A setting's own bounds (vm.swappiness ≤ 200) are the kernel's to check when the machine applies it."]
    for key in keys():
        try:
            text = proc_path(proc, key).read_text()
        except OSError:
            text = None
        lines.append(f"{key}: {kind(key, text)}")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--proc", type=Path, default=Path("/proc/sys"))
    parser.add_argument("--source", required=True,
                        help="what --proc is, for the file's header (e.g. a lab machine, Debian 12, 6.1.0-50-amd64)")
    args = parser.parse_args(argv)
    KINDS.write_text(render(args.proc, args.source))
    print(f"wrote {KINDS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
