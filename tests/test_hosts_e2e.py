"""End to end on real hosts (`./start.sh --hosts INVENTORY`): the lab's two machines, brought up as containers (the
fast kind: this path under emulation cost CI ~12 minutes), are given to the lab as hosts on their private addresses,
with this machine as the one remote JMeter engine; the run is of a user's service (services/testapp.yml: the kit,
its stubs, its own plan) over TLS. Then a changed host key is refused, the hosts' own nftables table survives, and
`down --hosts` takes the lab off them. Runs after tests/test_containers_e2e.py, before the VMs' e2e.

Needs root and Docker (./start.sh prereqs installs docker.io); under CI=true it always runs.
"""
import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from lab.machines import vagrant  # noqa: E402
from tests.lab_e2e import (  # noqa: E402
    NEEDS_ROOT,
    ROOT,
    START,
    in_lab,
    run_folders,
    successful_samples,  # noqa: E402
    the_labs_user,
)

pytestmark = NEEDS_ROOT


@pytest.fixture(scope="module")
def lab_up(containers_up):
    """The two machines up as containers (tests/conftest.py; the containers' e2e left them up, fresh from its last
    `up`): for the lab, they are hosts it did not make."""
    return containers_up


def run_json(hosts_run):
    return json.loads((hosts_run["folder"] / "run.json").read_text())


HOSTS_RUN = ["--users", "4", "--ramp-up", "10s", "--duration", "1m", "--label", "e2e-hosts", "--tls",
             "--service", "testapp"]
TESTAPP = ROOT / "services" / "testapp"
FOREIGN_TABLE = "someone_else"           # planted on tuned before the hosts run


def ssh_settings(name: str) -> dict:
    """HostName, User and IdentityFile of a machine in Vagrant's ssh_config."""
    found, current = {}, None
    for line in (ROOT / ".lab" / "ssh_config").read_text().splitlines():
        key, _, value = line.strip().partition(" ")
        if key == "Host":
            current = value.strip()
        elif current == name and key in ("HostName", "User", "IdentityFile"):
            found[key] = value.strip()
    return found


def pmcd_pid():
    try:
        return int(Path("/run/pcp/pmcd.pid").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


@pytest.fixture(scope="module")
def hosts_run(lab_up, tmp_path_factory):
    """./start.sh --hosts INVENTORY inside the lab namespace: the machines as hosts on their private addresses, this
    machine as the one load generator. pmcd, if the loadgen play started it here, is stopped again by its PID."""
    private = dict((vagrant.read_resolved() or {})["machines"])
    host_side = subprocess.run(["ip", "netns", "exec", "camel-lab", "ip", "-o", "route", "get", private["tuned"]],
                               capture_output=True, text=True).stdout.split(" src ")[1].split()[0]
    subprocess.run(["bash", str(ROOT / "lab" / "sh" / "install-pcp.sh")], check=True)
    inventory = tmp_path_factory.mktemp("hosts") / "hosts.yml"
    inventory.write_text(json.dumps({"all": {
        "hosts": {side: {"ansible_host": ip, "ansible_user": ssh_settings(side)["User"],
                         "ansible_ssh_private_key_file": ssh_settings(side)["IdentityFile"]}
                  for side, ip in private.items()},
        "children": {"loadgen": {"hosts": {"lab-host": {"ansible_connection": "local", "ansible_host": host_side}}}}}}))
    # the lab learns real hosts' keys once and refuses a changed one: these are machines made by this test run,
    # whose keys an earlier run of the e2e on this checkout could not know
    (ROOT / ".lab" / "hosts" / "known_hosts").unlink(missing_ok=True)
    # a table of the host's own (a container runtime's, fail2ban's): the lab must leave it as it is
    planted = in_lab("tuned", f"sudo nft add table inet {FOREIGN_TABLE} && sudo nft 'add chain inet {FOREIGN_TABLE} "
                              "input { type filter hook input priority 10; policy accept; }'")
    assert planted.returncode == 0, planted.stderr
    pmcd_before = pmcd_pid()
    if not (TESTAPP / "target" / "lab-testapp.jar").exists():      # the app stage builds it; `./test.sh e2e` alone
        subprocess.run([str(ROOT / "app" / "mvnw"), "-B", "-q", "-ntp", "-f", str(TESTAPP / "pom.xml"), "package",
                        "-DskipTests"], cwd=ROOT / "app", check=True, timeout=15 * 60)
    results = ROOT / "results"
    before = run_folders(results)
    try:
        run = subprocess.run(["ip", "netns", "exec", "camel-lab", START, "--hosts", str(inventory), *HOSTS_RUN],
                             cwd=ROOT, capture_output=True, text=True, timeout=45 * 60)
    finally:
        started = pmcd_pid()
        if started and started != pmcd_before:
            subprocess.run(["kill", str(started)])
    print(run.stdout[-6000:], run.stderr[-3000:])
    made = sorted(run_folders(results) - before)
    assert run.returncode == 0, f"./start.sh --hosts failed:\n{run.stdout[-4000:]}\n{run.stderr[-3000:]}"
    assert len(made) == 1, made
    return {"result": run, "folder": made[0], "private": private, "generator": host_side, "inventory": inventory}


def test_a_run_on_hosts_loads_them_from_a_remote_engine_and_reports_it(hosts_run):
    folder = hosts_run["folder"]
    record = run_json(hosts_run)
    assert record["status"] == "complete" and record["provider"] == "hosts", record.get("error")
    assert "up_s" not in record["phases"], "the VM path was used"
    for side in ("default", "tuned"):
        facts = record["hosts"][side]
        assert facts["address"] == hosts_run["private"][side] and facts["memory_mb"] > 300 and facts["cpus"] == 2
        assert facts["kernel"] and facts["virtualization"]
        assert successful_samples(folder / side / "jmeter.jtl") > 0, side
        assert (folder / side / "pcp" / "metrics.csv").stat().st_size > 0, side
        assert record["machines"][side]["versions"].get("java"), side
    engines = record["load"]["engines"]
    assert [e["name"] for e in engines] == ["lab-host"] and engines[0]["address"] == hosts_run["generator"]
    # the controller and the engine on this machine (the one that runs the plan's samplers) as the lab's user
    assert record["load"]["jmeter_uid"] == the_labs_user(record["load"]["runs_as"]), "JMeter ran as root"
    the_labs_user(engines[0]["runs_as"])
    assert "Starting distributed test" in (folder / "jmeter.out").read_text()
    with (folder / "default" / "jmeter.jtl").open(newline="") as f:
        assert all(row["threadName"].startswith(f"{hosts_run['generator']}:1099-") for row in csv.DictReader(f))
    generator = folder / "loadgen" / "lab-host"
    assert "Bound to RMI registry" in (generator / "jmeter-server.log").read_text()
    assert "kernel.all.cpu.idle" in (generator / "pcp" / "metrics.csv").read_text()
    summary = (folder / "summary.md").read_text()
    assert "## Load generators" in summary and "| lab-host | " + hosts_run["generator"] in summary
    assert not record.get("loadgen_problems"), record["loadgen_problems"]
    assert not list(Path("/tmp/camel-lab-engines").glob(record["run_id"] + "*")), "the engines' run files remain"


def test_a_load_over_tls_goes_through_httpds_443_front(hosts_run):
    """The hosts run carries --tls (one run for both)."""
    record = run_json(hosts_run)
    assert record["status"] == "complete" and record["load"]["scheme"] == "https", record
    for side in ("default", "tuned"):
        assert successful_samples(hosts_run["folder"] / side / "jmeter.jtl") > 0, side
        ip = record["machines"][side]["ip"]
        fetched = subprocess.run(["ip", "netns", "exec", "camel-lab", "curl", "-sk", "-o", "/dev/null", "-w",
                                  "%{http_code} %{scheme}", f"https://{ip}/shop/price/1"],
                                 capture_output=True, text=True, timeout=120)
        assert fetched.stdout.split() == ["200", "HTTPS"], fetched.stdout + fetched.stderr
    assert "over HTTPS (HTTPD's TLS front)" in (hosts_run["folder"] / "summary.md").read_text()


def test_a_service_of_the_users_runs_with_the_kit_its_stubs_and_its_own_plan(hosts_run):
    """The hosts run is of services/testapp.yml: its jar with the tuning kit behind HTTPD over AJP, its backend
    answered by the mock's stub, its plan's labels in each JTL, the kit's metrics in PCP, its console in app.log."""
    folder, record = hosts_run["folder"], run_json(hosts_run)
    assert record["service"]["name"] == "testapp" and record["service"]["facts"]["boot_version"].startswith("3.")
    assert "tomcat_ajp_connector" in record["service"]["left_out"]["tuned"]       # apr: not on Tomcat 10.1
    assert (folder / "plan.jmx").exists()
    for side in ("default", "tuned"):
        with (folder / side / "jmeter.jtl").open(newline="") as f:
            rows = list(csv.DictReader(f))
        assert {r["label"] for r in rows} == {"price", "ping"}, side
        assert sum(r["success"] == "true" for r in rows if r["label"] == "price") > 0, side
        # its console goes to app.log (the run folder keeps the load's lines only: its start was before them)
        console = in_lab(side, "sudo grep -c 'Started ShopApplication' /var/log/camel-app/app.log")
        assert console.stdout.strip() not in ("", "0"), f"{side}: {console.stdout} {console.stderr}"
        metrics = (folder / side / "pcp" / "metrics.csv").read_text()
        assert "openmetrics.app.jvm_memory_used_bytes" in metrics, side          # the kit's page, no actuator
        assert "openmetrics.app.tomcat_connector_threads_busy" in metrics, side
        assert "openmetrics.app.lab_kit_scrape_seconds_sum" in metrics, side  # its scrape time: the kit's own
        mock = in_lab(side, "curl -s http://127.0.0.1:9080/__mock/metrics")       # every call matched a stub
        assert "mock_http_requests_total" in mock.stdout and "mock_unmatched_requests_total{" not in mock.stdout, side
    tuned = (folder / "tuned" / "config" / "application.yml").read_text()
    assert "protocol: nio" in tuned and 'shop.pricing-url: "http://127.0.0.1:9080"' in tuned
    assert not (folder / "tuned" / "config" / "logback.xml").exists()       # the sample app's, not the service's
    assert "ProxyPass /shop/ ajp://127.0.0.1:8009/shop/" in (folder / "tuned" / "config" / "lab.conf").read_text()


def test_a_hosts_own_nftables_table_survives_the_lab(hosts_run):
    """The lab's firewall is a table of its own (inet camel_lab): provisioning and the run leave the host's tables."""
    for table in (FOREIGN_TABLE, "camel_lab"):
        listed = in_lab("tuned", f"sudo nft list table inet {table}")
        assert listed.returncode == 0, f"table inet {table} is gone: {listed.stderr}"


def test_a_changed_host_key_is_refused_naming_the_host(hosts_run, tmp_path):
    """The hosts' keys were learnt on first contact into .lab/hosts/known_hosts; a host that then shows another key
    is refused before anything is changed on it (no run folder), by name."""
    known = ROOT / ".lab" / "hosts" / "known_hosts"
    kept = known.read_text()
    address = hosts_run["private"]["tuned"]
    found = subprocess.run(["ssh-keygen", "-F", address, "-f", str(known)], capture_output=True, text=True)
    lines = {int(n) for n in re.findall(r"found: line (\d+)", found.stdout)}
    assert lines, f"no key learnt for {address}: {found.stdout}"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(tmp_path / "other")], check=True)
    other = (tmp_path / "other.pub").read_text().split()[1]
    forged = [line.rsplit(" ", 1)[0].split(" ", 1)[0] + " ssh-ed25519 " + other if i in lines else line
              for i, line in enumerate(kept.splitlines(), 1)]
    known.write_text("\n".join(forged) + "\n")
    results = ROOT / "results"
    before = run_folders(results)
    try:
        run = subprocess.run(["ip", "netns", "exec", "camel-lab", START, "--hosts", str(hosts_run["inventory"]),
                              *[a for a in HOSTS_RUN if a not in ("--label", "e2e-hosts")],
                              "--label", "e2e-forged-key"],
                             cwd=ROOT, capture_output=True, text=True, timeout=15 * 60)
    finally:
        known.write_text(kept)
    said = run.stdout + run.stderr
    assert run.returncode != 0 and "tuned" in said and "key" in said.lower(), said[-3000:]
    assert run_folders(results) == before, "a run folder was made for hosts that were refused"


def test_down_on_hosts_deletes_the_lab_table_and_nothing_else(hosts_run):
    """`./start.sh down --hosts INVENTORY` (last: it stops HTTPD on the hosts): the lab's table inet camel_lab is gone
    from both, HTTPD stopped, the host's own table still there."""
    done = subprocess.run(["ip", "netns", "exec", "camel-lab", START, "down", "--hosts", str(hosts_run["inventory"])],
                          cwd=ROOT, capture_output=True, text=True, timeout=15 * 60)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    for side in ("default", "tuned"):
        assert in_lab(side, "sudo nft list table inet camel_lab").returncode != 0, f"{side}: the lab's table remains"
        assert in_lab(side, "systemctl is-active apache2").stdout.strip() != "active", f"{side}: HTTPD still runs"
    assert in_lab("tuned", f"sudo nft list table inet {FOREIGN_TABLE}").returncode == 0, "the host's table is gone"
