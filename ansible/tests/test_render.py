"""What each machine's configuration files would contain, rendered without a VM (tests/render.yml).

Four renders, two at a time: the catalog and tuned.yml as they are; with --set overrides (parsed by
lab/provision/playbook.py, passed as -e @overrides.json as ./start.sh does); tuned alone with an inventory
that sets its own lab_networks; and a service of the user's instead of the sample app (--service: the extra vars
lab/experiment/service.py ansible_vars makes).
"""
from __future__ import annotations

import glob
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from conftest import ANSIBLE_DIR, INVENTORY, ROOT, TESTS_DIR, ansible_playbook, as_the_lab, run_all

from lab.provision import as_data, catalog, knob_sets

SECRET = "render-test-secret"   # render.yml's stand-in for lab_ajp_secret
# What a machine remembered of its kernel before the lab changed it (tasks/sysctl.yml).
BASELINE = "net.netfilter.nf_conntrack_max = 4096\nnet.core.somaxconn = 4096\n"
OVERRIDES = ["tuned:tomcat_threads_max=250", "tuned:tomcat_threads_min_spare=250", "tuned:httpd_proxy_timeout_s=null",
             "default:httpd_mpm=prefork", "jvm_gc=parallel", "tuned:jvm_cds=true",
             "default:app_unpacked=false", "tuned:camel_type_converter_statistics=true",
             "tuned:app_backend_method_as_enum=true"]


def render(folder: Path, overrides: dict | None, *args: str, inventory: Path = INVENTORY):
    """render.yml copied into `folder` beside a link to ansible's group_vars (the vars site.yml gets) and run with
    each machine's own knob set as the lab gives it (as_the_lab), overrides on top; {machine: {"<role>/<file>":
    text}}."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(TESTS_DIR / "render.yml", folder / "render.yml")
    os.symlink(ANSIBLE_DIR / "group_vars", folder / "group_vars")
    run = ansible_playbook("-i", str(inventory), *args, str(folder / "render.yml"),
                           "-e", f"render_dir={folder / 'out'}", overrides=as_the_lab(overrides), tmp=folder)
    assert run.rc == 0, run.describe()
    return {m.stem: json.loads(m.read_text()) for m in (folder / "out").glob("*.json")}


def inventory_with_other_networks(folder: Path) -> Path:
    """tests/unreachable.yml, but its all:vars say lab_networks [10.9.9.0/24] (as the lab's generated
    inventory sets the networks it made)."""
    folder.mkdir(parents=True, exist_ok=True)
    data = yaml.safe_load(INVENTORY.read_text())
    data["all"]["vars"]["lab_networks"] = ["10.9.9.0/24"]
    (folder / "inventory.yml").write_text(yaml.safe_dump(data))
    return folder / "inventory.yml"


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """{"plain" | "override" | "inventory": {machine: {"<role>/<file>": text}}}; the three renders two at a time."""
    base = tmp_path_factory.mktemp("render")
    return run_all({
        "plain": lambda: render(base / "plain", None),
        # prefork with Debian's 150 workers is beyond 512 MB by the memory estimate (~1025 MB): rendered, insisting
        "override": lambda: render(base / "override", catalog.parse_overrides(OVERRIDES), "-e",
                                   json.dumps({"base_sysctl_baseline_text": BASELINE, "lab_insist_memory": True})),
        "inventory": lambda: render(base / "inventory", None, "--limit", "tuned",
                                    inventory=inventory_with_other_networks(base / "inventory")),
        # tuned's APR left out, as the lab leaves it out for a service on Tomcat 10.1 (lab/provision/service_fit.py)
        "service": lambda: render(base / "service", catalog.parse_overrides(["default:app_unpacked=false",
                                                                           "tuned:tomcat_ajp_connector=nio"]), "-e",
                                  as_data.extra_vars(SERVICE_VARS)),
        # an example service's own template (services/examples/tripbooking-knobs.yml.j2): its Camel from the knobs
        "template": lambda: render(base / "template", catalog.parse_overrides(POOL), "-e",
                                   as_data.extra_vars(TEMPLATE_VARS)),
    })


# what lab/experiment/service.py ansible_vars gives a Boot 3.2+ jar with stubs on two extra ports
SERVICE_VARS = {"tomcat_http_port": 9966, "lab_service": {
    "name": "shop", "builds": {"": {"jar": "/srv/shop.jar", "camel": None, "tomcat": "10.1.48", "boot": "3.4.1",
                                 "java": 17}},
    "health": "/shop/actuator/health", "proxy_path": "/shop/",
    "properties": {"spring.profiles.active": "h2", "backend.url": "{mock}/v1", "shop.cache": False, "shop.retries": 3},
    "template": None, "logging": None, "logs": [], "cds": False, "footprint": None,
    "mock": {"stubs": "/srv/stubs", "extra_ports": [8082, 8083], "builtin": False}}}


POOL = ["tuned:app_compose_pool_size=30", "tuned:app_compose_max_pool_size=40",
        "tuned:app_backend_connections_per_route=40", "tuned:tomcat_ajp_connector=nio"]
TEMPLATE_VARS = {**SERVICE_VARS, "lab_service": {
    **SERVICE_VARS["lab_service"], "properties": {"camel.routecontroller.enabled": True},
    "template": str(ROOT / "services" / "examples" / "tripbooking-knobs.yml.j2")}}


@pytest.fixture(scope="module")
def tuned(rendered):
    return rendered["plain"]["tuned"]


@pytest.fixture(scope="module")
def default(rendered):
    return rendered["plain"]["default"]


def directives(text: str) -> dict[str, str]:
    """Apache-style `Name value…` lines (not comments or <sections>) → {Name: value…}; a repeated name
    keeps its last value, as HTTPD does for these."""
    out = {}
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith(("#", "<")):
            name, _, value = line.partition(" ")
            out[name] = value.strip()
    return out


def proxy_pass(text: str) -> list[list[str]]:
    return [line.split()[1:] for line in text.splitlines() if line.startswith("ProxyPass ")]


def jvm_options(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.strip() and not line.startswith("#")]


# --- every template, for both machines ---------------------------------------------------------------

def expected_files(mpm: str) -> set[str]:
    """roles/*/templates/*.j2 as render.yml names them: only the chosen MPM's file, as the httpd role."""
    names = set()
    for path in glob.glob(str(ANSIBLE_DIR / "roles" / "*" / "templates" / "*.j2")):
        role, name = Path(path).parent.parent.name, Path(path).name[:-len(".j2")]
        if re.fullmatch(r"mpm_\w+\.conf", name) and name != f"mpm_{mpm}.conf" or name.startswith("_"):
            continue
        names.add(f"{role}/{name}")
    return names | {"site/manifest.json", "pcp/openmetrics-sources.json"}


def test_every_role_template_is_rendered(rendered):
    for variant, mpms in (("plain", {"default": "event", "tuned": "worker"}),
                          ("override", {"default": "prefork", "tuned": "worker"}), ("inventory", {"tuned": "worker"}),
                          ("service", {"default": "event", "tuned": "worker"})):
        for machine, mpm in mpms.items():
            got = set(rendered[variant][machine])
            assert got == expected_files(mpm), (
                f"{variant} {machine}: rendered {sorted(got)}; a role or template not in tests/render.yml "
                f"(render_roles and the roles: list) is missing there")


def all_files(rendered):
    return [(f"{variant}/{machine}/{name}", text) for variant in ("plain", "override", "service")
            for machine in rendered[variant] for name, text in rendered[variant][machine].items()]


def test_nothing_is_left_unrendered(rendered):
    for where, text in all_files(rendered):
        assert "{{" not in text and "{%" not in text and "}}" not in text, where


def test_no_control_characters(rendered):
    for where, text in all_files(rendered):
        assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f]", text), f"{where}: {text!r}"


def test_ansible_managed_header(rendered):
    """group_vars' ansible_managed reaches the templates (hotproc.conf must start with #pmdahotproc instead;
    the manifest and the scrape URLs are JSON, which has no comments)."""
    for where, text in all_files(rendered):
        if not where.endswith(("pcp/hotproc.conf", "site/manifest.json", "pcp/openmetrics-sources.json")):
            assert "# Managed by the Camel Tuning Lab" in "\n".join(text.splitlines()[:2]), where


def test_hotproc_follows_the_jvm_httpd_the_mock_and_pcp_itself(tuned):
    """PCP's own daemons and agents too (pm*; the openmetrics agent is a Python process): the report states
    what the lab's instruments cost each machine."""
    lines = tuned["pcp/hotproc.conf"].splitlines()
    assert lines[:2] == ["#pmdahotproc", "Version 1.0"]
    assert lines[2] == ('fname == "java" || fname == "apache2" || psargs ~ /mock_service/'
                        ' || fname ~ /^pm/ || psargs ~ /pmdaopenmetrics/')


# --- tuned ----------------------------------------------------------------------------------------------

def test_tuned_httpd_worker_mpm(tuned):
    assert "httpd/mpm_worker.conf" in tuned and "httpd/mpm_event.conf" not in tuned
    text = tuned["httpd/mpm_worker.conf"]
    assert "<IfModule mpm_worker_module>" in text
    assert directives(text) == {"ThreadLimit": "30", "ServerLimit": "5", "StartServers": "3", "MinSpareThreads": "5",
                                "MaxSpareThreads": "20", "MaxRequestWorkers": "150", "ThreadsPerChild": "30",
                                "MaxConnectionsPerChild": "0"}


def test_tuned_httpd_timeouts(tuned):
    d = directives(tuned["httpd/lab-tuning.conf"])
    assert (d["Timeout"], d["ProxyTimeout"]) == ("30", "30")
    assert (d["KeepAlive"], d["MaxKeepAliveRequests"], d["KeepAliveTimeout"]) == ("On", "100", "5")


def test_tuned_proxies_over_ajp_with_the_secret(tuned):
    site = tuned["httpd/lab-site.conf"]
    assert proxy_pass(site) == [["/api/", "ajp://127.0.0.1:8009/api/", f"secret={SECRET}"]], \
        "one ProxyPass (a second to the same AJP URL would share its worker and drop its secret=)"
    assert "ProxyPassReverse /api/ ajp://127.0.0.1:8009/api/" in site
    assert site.count("ServerName tuned") == 2


def test_tuned_application_yml(tuned):
    config = yaml.safe_load(tuned["app/application.yml"])
    tomcat = config["server"]["tomcat"]
    assert tomcat["threads"] == {"max": 150, "min-spare": 25}
    assert (tomcat["max-connections"], tomcat["accept-count"], tomcat["connection-timeout"]) == (200, 100, "30000ms")
    assert "keep-alive-timeout" not in tomcat
    assert config["server"]["compression"]["enabled"] is False
    assert config["lab.kit"]["ajp"] == {"enabled": True, "port": 8009, "address": "127.0.0.1", "secret": SECRET,
                                        "protocol": "apr"}, "the tuning kit's keys (kit/README.md): the AJP connector"
    assert "ajp" not in config["lab"]
    audit = config["lab"]["log"]["audit"]
    assert (audit["appender"], audit["queue-size"], audit["discarding-threshold"]) == ("ASYNC", 500, 0)


def test_tuned_app_may_start_its_threads(tuned, default):
    """Headroom over systemd's default task limit (497 on 512 MB) for 2 × 150 Tomcat threads and the JVM's."""
    assert "TasksMax=1024" in tuned["app/camel-app.service"].splitlines()
    assert "TasksMax" not in default["app/camel-app.service"]


def test_tuned_jvm_options(tuned):
    options = jvm_options(tuned["app/jvm.options"])
    collectors = [o for o in options if o.startswith("-XX:+Use") and o.endswith("GC")]
    jit = [o for o in options if o.startswith("-XX:TieredStopAtLevel")]
    assert collectors == [] and jit == [], "the collector and the JIT stay the JVM's own (C1 and G1: tuned-emulated's)"
    assert any(o.startswith("-Xlog:gc*:file=/var/log/camel-app/gc.log") for o in options)
    assert "-XX:+HeapDumpOnOutOfMemoryError" in options and "-XX:HeapDumpPath=/var/lib/camel-app" in options
    assert not any(o.startswith("-Djava.library.path") for o in options), "APR needs Tomcat Native on the path"
    assert not any(o.startswith(("-Xmx", "-Xms")) for o in options), "heap: ergonomics on both machines"


# --- default ----------------------------------------------------------------------------------------------

def test_default_httpd_event_mpm_with_debians_values(default):
    assert "httpd/mpm_event.conf" in default and "httpd/mpm_worker.conf" not in default
    text = default["httpd/mpm_event.conf"]
    assert "<IfModule mpm_event_module>" in text
    # Debian's mods-available/mpm_event.conf, plus HTTPD's compiled-in ServerLimit
    assert directives(text) == {"StartServers": "2", "ServerLimit": "16", "ThreadLimit": "64", "ThreadsPerChild": "25",
                                "MinSpareThreads": "25", "MaxSpareThreads": "75", "MaxRequestWorkers": "150",
                                "MaxConnectionsPerChild": "0"}


def test_default_httpd_timeouts(default):
    d = directives(default["httpd/lab-tuning.conf"])
    assert d["Timeout"] == "300" and "ProxyTimeout" not in d


def test_default_proxies_over_http_without_secret(default):
    site = default["httpd/lab-site.conf"]
    assert proxy_pass(site) == [["/api/", "http://127.0.0.1:8080/api/"]]
    settings = "\n".join(line for line in site.splitlines() if not line.lstrip().startswith("#"))
    assert "secret=" not in settings and "ajp://" not in settings and SECRET not in settings


def test_default_application_yml(default):
    config = yaml.safe_load(default["app/application.yml"])
    assert config["server"]["address"] == "127.0.0.1", "Tomcat's HTTP connector: the machine's own only"
    tomcat = config["server"]["tomcat"]
    assert tomcat["threads"] == {"max": 200, "min-spare": 10}
    assert (tomcat["max-connections"], tomcat["accept-count"]) == (8192, 100)
    assert "connection-timeout" not in tomcat and "keep-alive-timeout" not in tomcat
    assert config["lab.kit"]["ajp"]["enabled"] is False and config["lab.kit"]["ajp"]["protocol"] == "nio"
    assert config["lab"]["log"]["audit"]["appender"] == "SYNC"
    assert config["lab"]["log"]["audit"]["discarding-threshold"] == -1, "-1: Logback's own default (queueSize/5)"


def test_default_jvm_options(default):
    options = jvm_options(default["app/jvm.options"])
    assert not [o for o in options if re.match(r"-XX:\+Use\w+GC|-Xlog:gc|-XX:\+HeapDump|-Xm[sx]", o)], options
    assert "-Djava.library.path=/nonexistent" in options, "no Tomcat Native: a clean NIO baseline"


# --- both -------------------------------------------------------------------------------------------------

def test_the_app_keys_are_documented(rendered):
    """Every lab.* key of application.yml is in app/README.md (what the app reads)."""
    readme = (ROOT / "app" / "README.md").read_text()

    def keys(node, prefix):
        for key, value in node.items():
            if isinstance(value, dict):
                yield from keys(value, f"{prefix}{key}.")
            else:
                yield f"{prefix}{key}"

    for variant in ("plain", "override"):
        for machine, files in rendered[variant].items():
            config = yaml.safe_load(files["app/application.yml"])
            missing = [k for k in keys(config["lab"], "lab.") if f"`{k}`" not in readme]
            assert not missing, f"{variant}/{machine}: not in app/README.md: {missing}"


def test_jvm_options_are_one_option_per_line(rendered):
    for variant in ("plain", "override"):
        for machine, files in rendered[variant].items():
            for option in jvm_options(files["app/jvm.options"]):
                assert option.startswith("-") and " " not in option, f"{variant}/{machine}: {option!r}"


def test_mock_settings(tuned, default):
    for files in (tuned, default):
        env = dict(line.split("=", 1) for line in files["mock_service/mock-service.env"].splitlines()
                   if line and not line.startswith("#"))
        assert env["MOCK_PORT"] == "9080" and env["MOCK_LATENCY"] == "lognormal:20,0.5"
        assert env["MOCK_KEEP_ALIVE"] == "on" and env["MOCK_SEED"] == "42"


def test_lab_pmlogger_is_valid_sh(tuned, tmp_path):
    script = tmp_path / "lab-pmlogger"
    script.write_text(tuned["pcp/lab-pmlogger"])
    checked = subprocess.run(["sh", "-n", str(script)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stderr


def test_a_pmlogger_restarted_mid_run_waits_for_the_app_metrics_on_the_clock(tuned, tmp_path):
    """pmlogger restarted mid-run (an archive is there already) resolves openmetrics.app once, so it waits for the
    agent to name it, pcp_openmetrics_restart_wait_s (60) on the clock: with lookups of 11 s (the agent's fetch
    timing out under load) 6 sleeps, not 30 sleeps of 2 s (6 minutes of the run unrecorded)."""
    # systemd stood in for: the unit's command runs at once, as a restart, in the run's folder
    run_unit = 'for dir; do :; done; touch "$dir/archive-0.meta"; while [ "$1" != /bin/sh ]; do shift; done; exec "$@"'
    done, said = lab_pmlogger_start(tuned, tmp_path, pminfo=pminfo_names('names "$@"', "exit 0"),
                                    **{"systemd-run": run_unit},
                                    date=slow_clock(tmp_path, 11))
    assert done.returncode == 0, done.stderr
    assert said == ["sleep 1"] * 9 + ["sleep 2"] * 6 + ["pmlogger"]


def test_lab_pmlogger_start_asks_again_each_second_for_a_source_not_read_yet(tuned, tmp_path):
    """Every run's load waits for `lab-pmlogger start`: an agent that answers its second name lookup is asked
    again after 1 s, not 5 (at 5 s a cold container run's requests began 7 s after both machines answered)."""
    # each source's first lookup is empty (the agent retries it), its next one names a metric
    second = 'if [ -e "$0-$1" ]; then echo "$1.up"; else : > "$0-$1"; fi'
    done, said = lab_pmlogger_start(tuned, tmp_path, pminfo=pminfo_names('names "$@"', second))
    assert done.returncode == 0, done.stderr
    sources = openmetrics_sources(tuned)
    assert {"app", "mock"} <= set(sources)
    assert said == ["sleep 1"] * len(sources) + ["systemd-run"]
    assert "warning" not in done.stderr


def test_lab_pmlogger_start_gives_up_on_silent_sources_after_one_wait_on_the_clock(tuned, tmp_path):
    """Each lookup of a source that never answers takes 11 s here (the agent's fetch timing out): the wait ends
    after pcp_openmetrics_wait_s (90) on the clock, 9 lookups, not 90 sleeps of 1 s (16 minutes), and it is one
    wait for all sources, not one each (4 x 90 s and the first records' 60 s would overrun the host's 300 s for
    the whole `mark`)."""
    done, said = lab_pmlogger_start(tuned, tmp_path, pminfo=pminfo_names('names "$@"', "exit 0"),
                                    date=slow_clock(tmp_path, 11))
    assert done.returncode == 0, done.stderr
    sources = openmetrics_sources(tuned)
    assert len(sources) >= 4
    assert said == ["sleep 1"] * 9 + ["systemd-run"]
    assert done.stderr.count("has no metrics after 99 s") == len(sources), "each silent source named"


def test_lab_pmlogger_start_waits_until_the_archive_names_every_logged_metric(tuned, tmp_path):
    """pmlogger fetches nothing while it writes the metadata of a group's first record, one metric after another
    (10-20 s under emulation): the load waits until the archive (the run's folder) names every metric pmcd names
    under what is logged, asked again every 0.25 s (natively all of it is written within 0.2 s)."""
    keys = logged_metrics(tuned)
    assert {"kernel.all.cpu", "network.tcpconn", "openmetrics.app"} <= set(keys)
    # pmcd names every metric; the archive names them all from its third lookup on
    archive = 'n=$(($(cat "$0-n" 2>/dev/null || echo 0) + 1)); echo $n > "$0-n"; [ $n -ge 3 ] && names "$@"'
    done, said = lab_pmlogger_start(tuned, tmp_path, pminfo=pminfo_names(archive, 'names "$@"'))
    assert done.returncode == 0, done.stderr
    assert said == ["systemd-run", "sleep 0.25", "sleep 0.25"]
    assert (tmp_path / "asked").read_text().splitlines() == [f"{tmp_path}/archives/run-1 {' '.join(keys)}"] * 3
    assert "warning" not in done.stderr


def test_lab_pmlogger_start_does_not_wait_for_a_silent_source(tuned, tmp_path):
    """A source that never answered (warned about above) has no metrics for pmlogger to log: not waited for."""
    all_but_app = 'for m; do [ "$m" = openmetrics.app ] || names "$m"; done'
    done, said = lab_pmlogger_start(tuned, tmp_path, pminfo=pminfo_names(all_but_app, all_but_app),
                                    date=slow_clock(tmp_path, 11))
    assert done.returncode == 0, done.stderr
    assert said == ["sleep 1"] * 9 + ["systemd-run"], "the source's own wait, then none for the archive"


def test_lab_pmlogger_start_gives_up_on_first_records_after_its_wait_on_the_clock(tuned, tmp_path):
    """A metric the archive never names (its group never recorded, or lookups of 11 s): the load starts after
    pcp_first_records_wait_s (60) on the clock, 6 lookups here, saying what the load's first seconds may lack."""
    done, said = lab_pmlogger_start(tuned, tmp_path, pminfo=pminfo_names(
        'for m; do [ "$m" = apache ] || names "$m"; done', 'names "$@"'), date=slow_clock(tmp_path, 11))
    assert done.returncode == 0, done.stderr
    assert said == ["systemd-run"] + ["sleep 0.25"] * 6
    assert "after 66 s the archive still lacks 1 metrics (apache.leaf);" in done.stderr


def pminfo_names(archive: str, live: str) -> str:
    """A stand-in pminfo (its body) whose answers are made by `names METRIC…` (a leaf under each): `pminfo -a
    ARCHIVE METRIC…` by archive (each call's arguments written to the file `asked` beside it), a lookup of pmcd's
    names by live."""
    return (f'names() {{ for m; do echo "$m.leaf"; done; }}\n'
            f'if [ "$1" = -a ]; then shift; echo "$*" >> "$(dirname "$0")/../asked"; shift; {archive}\n'
            f'else {live}\nfi')


def logged_metrics(files) -> list[str]:
    """What pmlogger logs, as `lab-pmlogger start` lists it for its wait: the metric list's keys."""
    return re.search(r'logged="([^"]+)"', files["pcp/lab-pmlogger"]).group(1).split()


def slow_clock(tmp_path, step_s: int) -> str:
    """A stand-in for `date` (its body): the epoch seconds from 1000 on, step_s later at each call, as if every
    command between two readings took that long."""
    clock = tmp_path / "clock"
    clock.write_text("1000")
    return f'n=$(cat "{clock}"); echo $((n + {step_s})) > "{clock}"; echo "$n"'


def openmetrics_sources(files) -> list[str]:
    return re.search(r"for source in ([^;]+); do", files["pcp/lab-pmlogger"]).group(1).split()


def lab_pmlogger_start(files, tmp_path, **stand_in_bodies) -> tuple[subprocess.CompletedProcess, list[str]]:
    """`lab-pmlogger start` as rendered, its archive root under tmp_path, PCP's and systemd's commands (and
    any of stand_in_bodies: name -> sh body) stood in for; what it did, and the sleeps and systemd-run it asked."""
    archive_root = "/var/log/pcp/lab"
    assert archive_root in files["pcp/lab-pmlogger"]
    script = tmp_path / "lab-pmlogger"
    stand_ins = tmp_path / "bin"
    stand_ins.mkdir()
    script.write_text(files["pcp/lab-pmlogger"].replace(archive_root, str(tmp_path / "archives"))
                      .replace("/usr/lib/pcp/bin/", f"{stand_ins}/"))
    said = tmp_path / "said"
    said.touch()
    bodies = {"sleep": f'echo "sleep $1" >> "{said}"', "systemctl": "exit 0",
              "systemd-run": f'echo "systemd-run" >> "{said}"', "pmlogger": f'echo "pmlogger" >> "{said}"',
              **stand_in_bodies}
    for name, body in bodies.items():
        (stand_ins / name).write_text(f"#!/bin/sh\n{body}\n")
        (stand_ins / name).chmod(0o755)
    done = subprocess.run(["sh", str(script), "start", "run-1"], capture_output=True, text=True, timeout=60,
                          env={**os.environ, "PATH": f"{stand_ins}:{os.environ['PATH']}"})
    return done, said.read_text().splitlines()


def test_pmlogger_intervals(tuned):
    """Everything every 5 s (pcp_interval_s: 1 s and 2 s put PCP over the lab's CPU budget), but what scans
    /proc (per-process figures, the TCP connection table) every 30 s and the scraped endpoints every 20 s
    (PCP's dearest fetches, the lab's own cost)."""
    groups = re.findall(r"log mandatory on every (\d+) seconds? \{([^}]*)\}", tuned["pcp/pmlogger.config"])
    metrics = {interval: group.split() for interval, group in groups}
    assert set(metrics) == {"5", "20", "30"}
    assert metrics["20"] == ["openmetrics.app", "openmetrics.mock", "openmetrics.conntrack", "openmetrics.machine"]
    assert "network.tcpconn" in metrics["30"]
    assert all(m.startswith("hotproc.") for m in metrics["30"] if m != "network.tcpconn")
    assert "kernel.all.load" in metrics["5"] and "network.tcp" in metrics["5"]
    assert not any(m.startswith(("openmetrics", "hotproc", "network.tcpconn")) for m in metrics["5"])


def test_manifest_names_what_a_run_collects(tuned, default):
    """The host/guest contract lab/experiment/guest/run.sh reads: every log, config and service, the metric list."""
    manifest = json.loads(tuned["site/manifest.json"])
    assert manifest["services"] == ["mock-service", "camel-app", "apache2"]
    assert manifest["logs"] == {"app.log": "/var/log/camel-app/app.log", "audit.log": "/var/log/camel-app/audit.log",
                                "gc.log": "/var/log/camel-app/gc.log",
                                "httpd-access.log": "/var/log/apache2/access.log",
                                "httpd-error.log": "/var/log/apache2/error.log"}
    assert manifest["journals"] == {"mock.log": "mock-service"}
    assert {"/etc/camel-app/application.yml", "/etc/lab/knobs.json", "/etc/pcp/lab/pmlogger.config",
            "/etc/apache2/mods-enabled/mpm_*.conf", "/etc/lab/firewall.nft"} <= set(manifest["configs"])
    assert manifest["info_url"] == "http://127.0.0.1:9464/lab/info", "the tuning kit's"
    assert manifest["pcp"]["archive_root"] == "/var/log/pcp/lab" and manifest["pcp"]["interval_s"] == 5
    # every exported metric is logged: under one of pmlogger's names (a metric or its group)
    logged = tuned["pcp/pmlogger.config"].split()
    metrics = manifest["pcp"]["metrics"]
    assert "kernel.all.cpu.user" in metrics and "openmetrics.app.jvm_memory_used_bytes" in metrics
    assert [m for m in metrics if not any(m == g or m.startswith(g + ".") for g in logged)] == []
    assert json.loads(default["site/manifest.json"])["pcp"] == manifest["pcp"]


def nft_usable() -> str | None:
    """Why `nft -c` cannot check a ruleset here, or None when it can."""
    nft = shutil.which("nft") or ("/usr/sbin/nft" if os.path.exists("/usr/sbin/nft") else None)
    if not nft:
        return "nft is not installed on this host (apt-get install nftables)"
    probe = subprocess.run([nft, "-c", "-f", "-"], input="table inet probe { }\n", capture_output=True, text=True)
    if probe.returncode != 0:
        return f"nft -c cannot run here (needs CAP_NET_ADMIN for its netlink checks): {probe.stderr.strip()}"
    return None


@pytest.mark.parametrize("machine", ["default", "tuned"])
def test_nftables_ruleset_is_accepted_by_nft(rendered, tmp_path, machine):
    why = nft_usable()
    if why:
        pytest.skip(why)
    ruleset = tmp_path / "nftables.conf"
    ruleset.write_text(rendered["plain"][machine]["base/nftables.conf"])
    check = subprocess.run([shutil.which("nft") or "/usr/sbin/nft", "-c", "-f", str(ruleset)],
                           capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    text = ruleset.read_text()
    assert "elements = { 192.168.56.0/24 }" in text and "tcp dport @lab_ports ip saddr @lab_networks_v4 accept" in text


def test_nft_rejects_a_broken_ruleset(tmp_path):
    """The check above can fail: nft -c refuses a ruleset with a syntax error."""
    why = nft_usable()
    if why:
        pytest.skip(why)
    bad = tmp_path / "bad.conf"
    bad.write_text("table inet filter { chain input { tcp dport { 22, } accept } }\n")
    nft = shutil.which("nft") or "/usr/sbin/nft"
    assert subprocess.run([nft, "-c", "-f", str(bad)], capture_output=True).returncode != 0


def test_the_inventory_sets_lab_networks(rendered):
    nft = rendered["inventory"]["tuned"]["base/nftables.conf"]
    assert "elements = { 10.9.9.0/24 }" in nft


# --- with --set overrides -----------------------------------------------------------------------------------

def test_overrides_land(rendered):
    tuned, default = rendered["override"]["tuned"], rendered["override"]["default"]
    config = yaml.safe_load(tuned["app/application.yml"])
    assert config["server"]["tomcat"]["threads"] == {"max": 250, "min-spare": 250}
    assert config["server"]["tomcat"]["max-connections"] == 200, "the rest of tuned.yml still applies"
    assert "ProxyTimeout" not in directives(tuned["httpd/lab-tuning.conf"]), "null: back to HTTPD's own (= Timeout)"
    assert directives(tuned["httpd/lab-tuning.conf"])["Timeout"] == "30"
    for files in (tuned, default):
        options = jvm_options(files["app/jvm.options"])
        assert "-XX:+UseParallelGC" in options and "-XX:+UseG1GC" not in options


def exec_start(unit: str) -> str:
    [line] = [line for line in unit.splitlines() if line.startswith("ExecStart=")]
    return line


def test_the_app_starts_unpacked_from_the_fat_jar_or_from_its_cds_archive(rendered):
    unpacked = exec_start(rendered["plain"]["default"]["app/camel-app.service"]).split()
    fat_jar = exec_start(rendered["override"]["default"]["app/camel-app.service"]).split()
    with_cds = exec_start(rendered["override"]["tuned"]["app/camel-app.service"]).split()
    assert unpacked[1:3] == ["@/etc/camel-app/jvm.options", "@/var/lib/camel-app/unpacked/launch.args"], \
        "unpacked by default"
    # the fat jar as it is: its launch.args name Spring Boot's PropertiesLauncher and the kit (unpack_jar.py --fat)
    assert fat_jar[1:] == ["@/etc/camel-app/jvm.options", "@/var/lib/camel-app/fat/launch.args"]
    assert with_cds[1:] == ["@/etc/camel-app/jvm.options", "-XX:SharedArchiveFile=/var/lib/camel-app/app.jsa",
                            "@/var/lib/camel-app/unpacked/launch.args"]
    assert len(unpacked) == 3, "the configuration is in jvm.options, for the unit and the CDS training start alike"
    # launch.args' class path is relative to the unpacking's parent (unpack_jar.py), where the JVM runs
    assert "WorkingDirectory=/var/lib/camel-app\n" in rendered["plain"]["default"]["app/camel-app.service"]
    for machine in ("default", "tuned"):
        options = jvm_options(rendered["plain"][machine]["app/jvm.options"])
        assert options[-2:] == ["-Dspring.config.additional-location=file:/etc/camel-app/application.yml",
                                "-Dlogging.config=/etc/camel-app/logback.xml"]
    plain_tuned = exec_start(rendered["plain"]["tuned"]["app/camel-app.service"])
    assert "SharedArchiveFile" not in plain_tuned, "no CDS by default"


def test_override_switches_default_to_prefork(rendered):
    default = rendered["override"]["default"]
    assert "httpd/mpm_prefork.conf" in default and "httpd/mpm_event.conf" not in default
    text = default["httpd/mpm_prefork.conf"]
    assert "<IfModule mpm_prefork_module>" in text
    assert directives(text) == {"StartServers": "5", "ServerLimit": "256", "MinSpareServers": "5",
                                "MaxSpareServers": "10", "MaxRequestWorkers": "150", "MaxConnectionsPerChild": "0"}


def test_overrides_touch_only_their_machine(rendered):
    """tuned's overrides leave default's files as they were, and the reverse."""
    plain, override = rendered["plain"], rendered["override"]
    for name in ("app/application.yml", "httpd/lab-site.conf", "httpd/lab-tuning.conf"):
        assert override["default"][name] == plain["default"][name], name
    assert override["tuned"]["httpd/mpm_worker.conf"] == plain["tuned"]["httpd/mpm_worker.conf"]


def test_kernel_settings_no_knob_sets_any_more_get_the_kernels_own_value_back(rendered):
    """After a swap (or an A/A run) the machine that ran tuned must not keep tuned's kernel settings."""
    default = rendered["override"]["default"]["base/60-lab.conf"]
    tuned = rendered["override"]["tuned"]["base/60-lab.conf"]
    assert "net.netfilter.nf_conntrack_max = 4096" in default and "net.core.somaxconn = 4096" in default
    assert "net.netfilter.nf_conntrack_max = 32768" in tuned and "nf_conntrack_max = 4096" not in tuned
    assert "net.core.somaxconn = 4096" in tuned
    assert "the kernel's own values" not in rendered["plain"]["default"]["base/60-lab.conf"]


# -- a service of the user's (--service) instead of the sample app ----------------------------------------------

def test_service_application_yml_gives_the_kit_its_keys_and_the_descriptors_properties(rendered):
    tuned = rendered["service"]["tuned"]
    config = yaml.safe_load(tuned["app/application.yml"])
    assert config["server"]["port"] == 9966 and config["server"]["address"] == "127.0.0.1"
    assert config["server"]["tomcat"]["threads"]["max"] == 150            # tuned.yml's, on every connector (kit)
    assert config["lab.kit"]["ajp"] == {"enabled": True, "port": 8009, "address": "127.0.0.1",
                                        "secret": SECRET, "protocol": "nio"}     # APR left out: Tomcat 10.1
    assert config["lab.kit"]["metrics"] == {"port": 9464}
    # the descriptor's properties as flat keys, typed, {mock} the mock's URL on the machine
    assert config["spring.profiles.active"] == "h2" and config["backend.url"] == "http://127.0.0.1:9080/v1"
    assert config["shop.cache"] is False and config["shop.retries"] == 3
    sample = yaml.safe_load(rendered["plain"]["tuned"]["app/application.yml"])
    assert sample["lab.kit"]["metrics"] == config["lab.kit"]["metrics"], "the sample app gets the kit's keys too"
    assert "lab" not in config, "none of the sample app's own keys"


def test_the_sample_app_is_configured_from_its_descriptor(rendered):
    """services/sample.yml like any descriptor: its property ({mock}), its template's keys from the knobs, its
    logging configuration and the log it names."""
    tuned = rendered["plain"]["tuned"]
    config = yaml.safe_load(tuned["app/application.yml"])
    assert config["lab.backend.url"] == "http://127.0.0.1:9080"
    assert config["lab"]["compose"]["pool-size"] == knob_sets.values("tuned")["app_compose_pool_size"]
    assert config["lab"]["log"]["dir"] == "/var/log/camel-app"
    assert "-Dlogging.config=/etc/camel-app/logback.xml" in jvm_options(tuned["app/jvm.options"])
    assert "StandardOutput" not in tuned["app/camel-app.service"], "it writes app.log itself (its logback.xml)"
    manifest = json.loads(tuned["site/manifest.json"])
    assert manifest["logs"]["audit.log"] == "/var/log/camel-app/audit.log"


def test_an_example_services_template_gives_its_camel_the_knobs(rendered):
    """TripBooking's template: the multicast's pool (Camel's default thread pool profile), camel-http's pool only
    where a knob sets it, the root log level, beside the descriptor's flat Camel keys (one YAML document)."""
    tuned, default = (yaml.safe_load(rendered["template"][m]["app/application.yml"]) for m in ("tuned", "default"))
    assert tuned["camel"]["threadpool"] == {"pool-size": 30, "max-pool-size": 40, "max-queue-size": 1000,
                                            "rejected-policy": "CallerRuns"}
    assert tuned["camel"]["component"] == {"http": {"connections-per-route": 40}}
    assert default["camel"] == {"threadpool": {"pool-size": 10, "max-pool-size": 20, "max-queue-size": 1000,
                                               "rejected-policy": "CallerRuns"}}, "Camel's own defaults, no http pool"
    assert tuned["logging"] == {"level": {"root": "INFO"}} and tuned["camel.routecontroller.enabled"] is True


def test_service_unit_starts_its_jar_with_the_kit_and_keeps_its_console(rendered):
    def exec_start(unit: str) -> str:
        return re.search(r"^ExecStart=(.*)$", unit, re.M).group(1)
    unpacked = rendered["service"]["tuned"]["app/camel-app.service"]      # its class path ends with the kit
    assert exec_start(unpacked) == "/usr/bin/java @/etc/camel-app/jvm.options @/var/lib/camel-app/unpacked/launch.args"
    fat = exec_start(rendered["service"]["default"]["app/camel-app.service"])      # app_unpacked=false
    assert fat == "/usr/bin/java @/etc/camel-app/jvm.options @/var/lib/camel-app/fat/launch.args"
    for machine in ("default", "tuned"):
        unit = rendered["service"][machine]["app/camel-app.service"]
        assert "StandardOutput=append:/var/log/camel-app/app.log" in unit
        options = jvm_options(rendered["service"][machine]["app/jvm.options"])
        assert "-Dspring.config.additional-location=file:/etc/camel-app/application.yml" in options
        assert not [o for o in options if o.startswith("-Dlogging.config")], "a service keeps its own logging"


def test_service_httpd_forwards_its_path(rendered):
    for machine in ("default", "tuned"):
        site = rendered["service"][machine]["httpd/lab-site.conf"]
        assert [p[:2] for p in proxy_pass(site)] == [["/shop/", p[1]] for p in proxy_pass(site)]
        assert proxy_pass(site)[0][1].endswith(":9966/shop/") or proxy_pass(site)[0][1].endswith(":8009/shop/")


def test_service_mock_serves_its_stubs_on_its_ports(rendered):
    env = dict(line.split("=", 1) for line in rendered["service"]["tuned"]["mock_service/mock-service.env"].splitlines()
               if "=" in line and not line.startswith("#"))
    assert env["MOCK_BUILTIN"] == "off" and env["MOCK_STUBS"] == "/etc/mock-service/stubs/shop"
    assert env["MOCK_EXTRA_PORTS"] == "8082,8083"
    plain = dict(line.split("=", 1) for line in rendered["plain"]["tuned"]["mock_service/mock-service.env"].splitlines()
                 if "=" in line and not line.startswith("#"))
    assert plain["MOCK_BUILTIN"] == "on" and plain["MOCK_STUBS"] == "" and plain["MOCK_EXTRA_PORTS"] == ""


def test_camels_conversions_are_counted_and_exported_only_where_the_knob_asks(rendered):
    def exported(render: str, machine: str) -> list[str]:
        return json.loads(rendered[render][machine]["site/manifest.json"])["pcp"]["metrics"]

    counted = "openmetrics.app.camel_type_converter_total"
    assert counted in exported("override", "tuned") and counted not in exported("override", "default")
    assert counted not in exported("plain", "tuned"), "not asked: no run calls it missing"
    assert "openmetrics.app.jvm_compilation_time_ms_total" in exported("plain", "tuned")
    asked = yaml.safe_load(rendered["override"]["tuned"]["app/application.yml"])
    plain = yaml.safe_load(rendered["plain"]["tuned"]["app/application.yml"])
    assert asked["lab.kit"]["camel"] == {"type-converter-statistics": True}
    assert plain["lab.kit"]["camel"] == {"type-converter-statistics": False}
    assert (asked["lab"]["backend"]["method-as-enum"], plain["lab"]["backend"]["method-as-enum"]) == (True, False)


def test_service_metrics_come_from_the_kit_and_its_manifest_has_no_sample_app_parts(rendered):
    manifest = json.loads(rendered["service"]["tuned"]["site/manifest.json"])
    assert manifest["info_url"] == "http://127.0.0.1:9464/lab/info"
    assert "audit.log" not in manifest["logs"] and manifest["logs"]["app.log"] == "/var/log/camel-app/app.log"
    assert "/etc/camel-app/logback.xml" not in manifest["configs"] and "/etc/camel-app/application.yml" in \
        manifest["configs"]
    exported = manifest["pcp"]["metrics"]      # a service without Camel: no route or camel-http series to ask for
    assert "openmetrics.app.tomcat_connector_threads_busy" in exported
    assert "openmetrics.app.camel_route_exchanges_seconds_sum" not in exported
    assert "openmetrics.app.camel_route_exchanges_seconds_sum" in json.loads(
        rendered["plain"]["tuned"]["site/manifest.json"])["pcp"]["metrics"]
    sources = json.loads(rendered["service"]["tuned"]["pcp/openmetrics-sources.json"])
    assert sources["app"]["url"].startswith("http://127.0.0.1:9464/metrics?names=")
    assert "jvm_memory_used_bytes" in sources["app"]["url"].split("=", 1)[1].split(",")
    assert sources["mock"]["url"].startswith("http://127.0.0.1:9080/__mock/metrics?names=")
    plain = json.loads(rendered["plain"]["tuned"]["pcp/openmetrics-sources.json"])
    assert plain["app"]["url"] == sources["app"]["url"], "the sample app's page is the kit's too"
