"""The twin machines' settings: lab/machines/machines.yml, overridden by LAB_* environment variables, validated.

The resolved settings are written to a JSON file that the Vagrantfile reads (LAB_SETTINGS), so Ruby
and Python never disagree about a value.
"""
from __future__ import annotations

import ipaddress
import json
import os
import re
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from lab import machines
from lab.errors import BadInput
from lab.machines import netns

MACHINES_FILE = Path(__file__).parent / "machines.yml"
ACCELERATORS = ("auto", "kvm", "tcg")
PROVIDERS = ("auto", "libvirt", "containers")


class SettingsError(BadInput):
    """A setting with a bad value; the message names the setting."""

    def __str__(self) -> str:
        return f"bad setting: {super().__str__()}"


@dataclass(frozen=True)
class Settings:
    provider: str
    memory_mb: int
    cpus: int
    machines: dict          # name -> private IP, in boot order
    management_network: str
    accelerator: str
    tcg_cache_mb: int
    cpu_placement: str
    boot_timeout: int
    debian_mirror: str

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)


def _int(name: str, value, low: int, high: int) -> int:
    try:
        number = int(str(value).strip())
    except ValueError:
        raise SettingsError(f"{name}: '{value}' is not a whole number") from None
    if not low <= number <= high:
        raise SettingsError(f"{name}: {number} is out of range {low}..{high}")
    return number


def _machines(value) -> dict:
    """Accepts the YAML mapping or 'default=IP,tuned=IP' from the environment."""
    if isinstance(value, str):
        pairs = [p for p in value.split(",") if p.strip()]
        value = {}
        for pair in pairs:
            if "=" not in pair:
                raise SettingsError(f"machines: '{pair}' is not name=IP")
            name, ip = pair.split("=", 1)
            value[name.strip()] = ip.strip()
    if not isinstance(value, dict) or set(value) != set(machines.NAMES):
        raise SettingsError(f"machines: must name exactly the machines {' and '.join(map(repr, machines.NAMES))}")
    ips = {}
    for name, ip in value.items():
        try:
            addr = ipaddress.IPv4Address(str(ip))
        except ValueError:
            raise SettingsError(f"machines: '{ip}' of {name} is not an IPv4 address") from None
        if not addr.is_private or addr.is_loopback or addr.is_link_local:
            raise SettingsError(f"machines: {ip} of {name} must be a private (RFC 1918) address")
        ips[name] = str(addr)
    a, b = (ipaddress.IPv4Interface(f"{ip}/24").network for ip in ips.values())
    if a != b:
        raise SettingsError("machines: both IPs must share one /24 network")
    if len(set(ips.values())) != 2:
        raise SettingsError("machines: the two machines need different IPs")
    last = {int(ip.rsplit(".", 1)[1]) for ip in ips.values()}
    if last & {0, 1, 255}:
        raise SettingsError("machines: .0, .1 (the host's side) and .255 are reserved in the /24")
    return ips


UPLINK_NETWORK = netns.SLIRP_NET      # slirp4netns' fixed network inside the lab namespace (the guests' uplink)


def _management(value, machines: dict) -> str:
    try:
        net = ipaddress.IPv4Network(str(value).strip())
    except ValueError:
        raise SettingsError(f"management_network: '{value}' is not an IPv4 network like 192.168.121.0/24") from None
    if net.prefixlen != 24 or not net.is_private:
        raise SettingsError(f"management_network: {net} must be a private /24")
    private = ipaddress.IPv4Interface(f"{next(iter(machines.values()))}/24").network
    for other, what in ((private, "the machines' network"), (UPLINK_NETWORK, "the lab's uplink network")):
        if net.overlaps(other):
            raise SettingsError(f"management_network: {net} overlaps {what} {other}")
    if private.overlaps(UPLINK_NETWORK):
        raise SettingsError(f"machines: {private} overlaps the lab's uplink network {UPLINK_NETWORK}")
    return str(net)


_PLACEMENT = re.compile(rf"^(auto|none|{machines.NAMES[0]}=[0-9,-]+;{machines.NAMES[1]}=[0-9,-]+)$")
_PLACEMENT_FORMS = f"auto, none or '{machines.NAMES[0]}=CORES;{machines.NAMES[1]}=CORES'"


def validate(raw: dict) -> Settings:
    known = set(Settings.__dataclass_fields__)
    unknown = set(raw) - known
    if unknown:
        raise SettingsError(f"unknown setting(s): {', '.join(sorted(unknown))} (known: {', '.join(sorted(known))})")
    missing = known - set(raw)
    if missing:
        raise SettingsError(f"missing setting(s): {', '.join(sorted(missing))}")
    provider = str(raw["provider"]).strip()
    if provider not in PROVIDERS:
        raise SettingsError(f"provider: '{provider}' is not one of {', '.join(PROVIDERS)}")
    accel = str(raw["accelerator"]).strip()
    if accel not in ACCELERATORS:
        raise SettingsError(f"accelerator: '{accel}' is not one of {', '.join(ACCELERATORS)}")
    placement = str(raw["cpu_placement"]).strip().replace(" ", "")
    if not _PLACEMENT.match(placement):
        raise SettingsError(f"cpu_placement: '{raw['cpu_placement']}' is not {_PLACEMENT_FORMS}")
    mirror = str(raw["debian_mirror"]).strip().rstrip("/")
    if not re.match(r"^https?://[^/\s]+(/\S*)?$", mirror):
        raise SettingsError(f"debian_mirror: '{mirror}' is not an http(s) URL")
    ips = _machines(raw["machines"])
    management = _management(raw["management_network"], ips)
    return Settings(
        provider=provider,
        memory_mb=_int("memory_mb", raw["memory_mb"], 256, 65536),
        cpus=_int("cpus", raw["cpus"], 1, 64),
        machines=ips,
        management_network=management,
        accelerator=accel,
        tcg_cache_mb=_int("tcg_cache_mb", raw["tcg_cache_mb"], 32, 1024),
        cpu_placement=placement,
        boot_timeout=_int("boot_timeout", raw["boot_timeout"], 30, 7200),
        debian_mirror=mirror,
    )


def load(environ=None, path: Path = MACHINES_FILE) -> Settings:
    """Defaults from machines.yml, each overridable by LAB_<NAME>."""
    environ = os.environ if environ is None else environ
    raw = yaml.safe_load(path.read_text())
    for name in Settings.__dataclass_fields__:
        key = f"LAB_{name.upper()}"
        if key in environ:
            raw[name] = environ[key]
    return validate(raw)
