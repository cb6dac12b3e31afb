"""Machine settings: defaults, environment overrides, and a clear error naming each bad value."""
import pytest

from lab.machines import settings

DEFAULTS = settings.load(environ={})


def test_defaults_are_the_scenario():
    assert DEFAULTS.memory_mb == 512 and DEFAULTS.cpus == 2
    assert set(DEFAULTS.machines) == {"default", "tuned"}
    assert DEFAULTS.accelerator == "auto" and DEFAULTS.cpu_placement == "auto"
    assert DEFAULTS.tcg_cache_mb == 128


def test_environment_overrides_win():
    s = settings.load(environ={"LAB_MEMORY_MB": "1024", "LAB_ACCELERATOR": "tcg", "LAB_CPUS": "1",
                               "LAB_MACHINES": "default=10.9.8.21,tuned=10.9.8.22",
                               "LAB_CPU_PLACEMENT": "default=0;tuned=1"})
    assert (s.memory_mb, s.accelerator, s.cpus) == (1024, "tcg", 1)
    assert s.machines == {"default": "10.9.8.21", "tuned": "10.9.8.22"}
    assert s.cpu_placement == "default=0;tuned=1"


@pytest.mark.parametrize("env, named", [
    ({"LAB_MEMORY_MB": "lots"}, "memory_mb"),
    ({"LAB_MEMORY_MB": "64"}, "memory_mb"),
    ({"LAB_CPUS": "0"}, "cpus"),
    ({"LAB_ACCELERATOR": "hvf"}, "accelerator"),
    ({"LAB_TCG_CACHE_MB": "4096"}, "tcg_cache_mb"),
    ({"LAB_CPU_PLACEMENT": "left"}, "cpu_placement"),
    ({"LAB_BOOT_TIMEOUT": "5"}, "boot_timeout"),
    ({"LAB_DEBIAN_MIRROR": "ftp://mirror"}, "debian_mirror"),
    ({"LAB_MACHINES": "default=192.168.56.11"}, "machines"),
    ({"LAB_MACHINES": "default=8.8.8.8,tuned=8.8.4.4"}, "machines"),
    ({"LAB_MACHINES": "default=192.168.56.11,tuned=192.168.57.12"}, "machines"),
    ({"LAB_MACHINES": "default=192.168.56.11,tuned=192.168.56.11"}, "machines"),
    ({"LAB_MACHINES": "default=192.168.56.1,tuned=192.168.56.12"}, "machines"),
    ({"LAB_MACHINES": "default=10.0.2.11,tuned=10.0.2.12"}, "machines"),
    ({"LAB_MACHINES": "default=not-an-ip,tuned=192.168.56.12"}, "machines"),
    ({"LAB_MANAGEMENT_NETWORK": "192.168.56.0/24"}, "management_network"),
    ({"LAB_MANAGEMENT_NETWORK": "10.0.2.0/24"}, "management_network"),
    ({"LAB_MANAGEMENT_NETWORK": "192.168.121.0/16"}, "management_network"),
])
def test_bad_values_are_named(env, named):
    with pytest.raises(settings.SettingsError, match=named):
        settings.load(environ=env)


def test_unknown_and_missing_settings_are_named():
    raw = {name: getattr(DEFAULTS, name) for name in settings.Settings.__dataclass_fields__}
    with pytest.raises(settings.SettingsError, match="unknown setting.*memroy_mb"):
        settings.validate({**raw, "memroy_mb": 512})
    del raw["cpus"]
    with pytest.raises(settings.SettingsError, match="missing setting.*cpus"):
        settings.validate(raw)


def test_resolved_settings_round_trip_as_json():
    import json
    assert json.loads(DEFAULTS.to_json())["machines"] == DEFAULTS.machines
