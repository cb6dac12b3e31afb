"""The validation play (roles/knobs) refuses bad knobs before any machine is touched.

Each case is `ansible-playbook -i tests/unreachable.yml site.yml -e @overrides.json` with the case's
lab_overrides. A refused case must exit 2 (a failed task), print a failure for the case's machine whose
message names the knob(s), and never reach the provisioning play (no host UNREACHABLE: the validation
play connects to nothing, so an unreachable host would mean validation let the knobs through).

To keep the stage short, cases whose failures stay apart share a run: both machines of a run fail in the
same task (any_errors_fatal ends the play at the first failed task), one that checks each knob or rule
separately and prints one failure per knob, or one assert per machine.
Each run's test also checks it failed for exactly its cases and nothing else, so no case can pass on
another case's failure.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

import pytest
import yaml
from conftest import ANSIBLE_DIR, INVENTORY, PROVISION_PLAY, ansible_playbook, as_the_lab, default_service_vars, run_all

from bench.cycle import KNOB_CHANGES as CYCLE_CHANGES
from lab.experiment import design
from lab.provision.configuration import Configuration

KNOB_SETS = ANSIBLE_DIR / "knob_sets"


@dataclass(frozen=True)
class Case:
    id: str
    run: str                    # cases with the same run go into one ansible-playbook call
    machine: str                # the machine whose lab_overrides carry the knobs
    knobs: dict
    names: tuple[str, ...]      # knobs the failure message must name
    says: str                   # part of the message
    assertion: str | None = None  # the failed condition, where one assert checks several
    hosts: tuple[str, ...] = field(default=())  # machines that fail (default: just `machine`)

    def fails_on(self) -> tuple[str, ...]:
        return self.hosts or (self.machine,)

    def matches(self, failure: dict) -> bool:
        msg = failure["msg"]
        return (failure["host"] in self.fails_on()
                and all(re.search(rf"(?<![\w]){re.escape(n)}(?![\w])", msg) for n in self.names)
                and self.says in msg
                and (self.assertion is None or failure.get("assertion") == self.assertion))


THREADED = "mpm.threads_per_child <= mpm.thread_limit"
WORKERS = "mpm.max_request_workers <= mpm.server_limit * mpm.threads_per_child"
SPARE = "mpm.min_spare_threads <= mpm.max_spare_threads"

CASES = [
    # --- types, ranges, choices (tasks/types.yml: one failure per knob) -------------------------------
    Case("string for int", "types", "tuned", {"tomcat_threads_max": "many"},
         ("tomcat_threads_max",), "must be an integer"),
    Case("numeric string for int", "types", "tuned", {"tomcat_max_connections": "400"},
         ("tomcat_max_connections",), "must be an integer"),
    Case("bool for int", "types", "default", {"app_compose_queue_size": True},
         ("app_compose_queue_size",), "must be an integer"),
    Case("string for bool", "types", "tuned", {"app_audit_enabled": "yes"},
         ("app_audit_enabled",), "must be true or false"),
    Case("string for number", "types", "default", {"mock_error_rate": "often"},
         ("mock_error_rate",), "must be a number"),
    Case("string for list", "types", "tuned", {"jvm_extra_options": "-Xss512k"},
         ("jvm_extra_options",), "must be a list"),
    Case("list for mapping", "types", "default", {"base_sysctl": ["net.core.somaxconn=1024"]},
         ("base_sysctl",), "must be a mapping"),
    Case("null where not allowed", "types", "default", {"tomcat_threads_min_spare": None},
         ("tomcat_threads_min_spare",), "must be set (null is not allowed)"),
    Case("below minimum", "types", "tuned", {"tomcat_accept_count": 0},
         ("tomcat_accept_count",), "must be at least 1"),
    Case("below minimum (heap)", "types", "default", {"jvm_heap_max_mb": 16},
         ("jvm_heap_max_mb",), "must be at least 32"),
    Case("privileged port", "types", "default", {"mock_port": 80},
         ("mock_port",), "must be at least 1024"),
    Case("above maximum", "types", "tuned", {"httpd_timeout_s": 5000},
         ("httpd_timeout_s",), "must be at most 3600"),
    Case("probability above 1", "types", "tuned", {"mock_error_rate": 1.5},
         ("mock_error_rate",), "must be at most 1"),
    Case("machine memory too small", "types", "default", {"lab_memory_mb": 64},
         ("lab_memory_mb",), "must be at least 128"),
    Case("excluded value", "types", "tuned", {"tomcat_max_keep_alive_requests": 0},
         ("tomcat_max_keep_alive_requests",), "must be -1, or from 1 to 100000"),
    Case("bad MPM", "types", "tuned", {"httpd_mpm": "threaded"},
         ("httpd_mpm",), "must be one of prefork, worker, event"),
    Case("bad collector", "types", "default", {"jvm_gc": "cms"},
         ("jvm_gc",), "must be one of serial, parallel, g1, shenandoah, zgc"),
    Case("bad stack", "types", "default", {"app_stack": "camel5"},
         ("app_stack",), "must be one of camel3, camel4"),
    Case("lower-case log level", "types", "default", {"logback_root_level": "debug"},
         ("logback_root_level",), "must be one of TRACE, DEBUG, INFO, WARN, ERROR"),
    Case("JIT level other than 1", "types", "default", {"jvm_tiered_stop_at_level": 2},
         ("jvm_tiered_stop_at_level",), "must be one of 1"),
    Case("bad latency spec", "types", "tuned", {"mock_latency": "slow"},
         ("mock_latency",), "must match"),
    Case("path as time zone", "types", "default", {"base_timezone": "../../etc/passwd"},
         ("base_timezone",), "must match"),
    # --- lab_overrides itself (tasks/overrides.yml) ---------------------------------------------------
    Case("unknown knob", "unknown", "tuned", {"tomcat_threads": 250},
         ("tomcat_threads",), "unknown knob(s) in --set for tuned"),
    Case("unknown knob (default)", "unknown", "default", {"jvm_heap": 256},
         ("jvm_heap",), "unknown knob(s) in --set for default"),
    Case("unknown machine", "machine", "tunned", {"tomcat_threads_max": 250},
         ("tunned",), "lab_overrides names unknown machine(s)", hosts=("default", "tuned")),
    # --- the MPM's limits (tasks/rules.yml; a null knob takes Debian's value for the MPM). One assert
    # checks all of an MPM's limits and stops at the first false condition; its message names them all.
    # Under any_errors_fatal a failure ends the play for both machines, so both machines of a run fail
    # in the same task: the threaded one, or prefork's.
    Case("ThreadsPerChild above ThreadLimit", "mpm1", "tuned", {"httpd_threads_per_child": 40},
         ("httpd_threads_per_child", "httpd_thread_limit"),
         "httpd_threads_per_child (40) must be ≤ httpd_thread_limit (30)",
         assertion=THREADED),
    Case("MaxRequestWorkers above Debian's ServerLimit × ThreadsPerChild", "mpm1", "default",
         {"httpd_max_request_workers": 500},
         ("httpd_max_request_workers", "httpd_server_limit", "httpd_threads_per_child"),
         "httpd_max_request_workers (500) ≤ httpd_server_limit × httpd_threads_per_child (16 × 25)",
         assertion=WORKERS),
    Case("MaxRequestWorkers above ServerLimit × ThreadsPerChild", "mpm2", "tuned",
         {"httpd_max_request_workers": 400},
         ("httpd_max_request_workers", "httpd_server_limit", "httpd_threads_per_child"),
         "httpd_max_request_workers (400) ≤ httpd_server_limit × httpd_threads_per_child (5 × 30)",
         assertion=WORKERS),
    Case("MinSpareThreads above Debian's MaxSpareThreads (event)", "mpm2", "default",
         {"httpd_min_spare_threads": 100},
         ("httpd_min_spare_threads", "httpd_max_spare_threads"),
         "httpd_min_spare_threads (100) ≤ httpd_max_spare_threads (75)", assertion=SPARE),
    Case("MinSpareThreads above MaxSpareThreads", "mpm3", "tuned", {"httpd_min_spare_threads": 30},
         ("httpd_min_spare_threads", "httpd_max_spare_threads"),
         "httpd_min_spare_threads (30) ≤ httpd_max_spare_threads (20)", assertion=SPARE),
    Case("ThreadsPerChild above Debian's ThreadLimit", "mpm3", "default", {"httpd_threads_per_child": 100},
         ("httpd_threads_per_child", "httpd_thread_limit"),
         "httpd_threads_per_child (100) must be ≤ httpd_thread_limit (64)",
         assertion=THREADED),
    Case("prefork MaxRequestWorkers above Debian's ServerLimit", "prefork", "default",
         {"httpd_mpm": "prefork", "httpd_max_request_workers": 300},
         ("httpd_max_request_workers", "httpd_server_limit"),
         "httpd_max_request_workers (300) and httpd_start_servers (5) must be ≤ httpd_server_limit (256)",
         assertion="mpm.max_request_workers <= mpm.server_limit"),
    Case("prefork MinSpareServers above MaxSpareServers", "prefork", "tuned",
         {"httpd_mpm": "prefork", "httpd_server_limit": 300, "httpd_min_spare_servers": 20},
         ("httpd_min_spare_servers", "httpd_max_spare_servers"),
         "httpd_min_spare_servers (20) ≤ httpd_max_spare_servers (10)",
         assertion="mpm.min_spare_servers <= mpm.max_spare_servers"),
    Case("StartServers above ServerLimit", "mpm4", "tuned", {"httpd_start_servers": 6},
         ("httpd_start_servers", "httpd_server_limit"), "httpd_start_servers (6) ≤ httpd_server_limit (5)",
         assertion="mpm.start_servers <= mpm.server_limit"),
    Case("StartServers above Debian's ServerLimit", "mpm4", "default", {"httpd_start_servers": 17},
         ("httpd_start_servers", "httpd_server_limit"), "httpd_start_servers (17) ≤ httpd_server_limit (16)",
         assertion="mpm.start_servers <= mpm.server_limit"),
    Case("prefork StartServers above ServerLimit", "prefork2", "default",
         {"httpd_mpm": "prefork", "httpd_start_servers": 257},
         ("httpd_start_servers", "httpd_server_limit"),
         "and httpd_start_servers (257) must be ≤ httpd_server_limit (256)",
         assertion="mpm.start_servers <= mpm.server_limit"),
    # --- pairs of knobs (tasks/rules.yml: one failure per rule) ----------------------------------------
    # the Tomcat of the build the machine runs (lab_build, from the jar), not the stack's name
    Case("APR on camel4", "pairs", "tuned", {"app_stack": "camel4"},
         ("tomcat_ajp_connector", "app_stack"), "needs Tomcat ≤ 9.0.113 (Tomcat 10.1 has no APR connector), got "
         "sample's Tomcat 10.1"),
    # the lines (ansible/knobs.yml needs:, lab/provision/lines.py): virtual threads need Java 21 and Spring Boot 3.2
    Case("virtual threads on camel3 and Java 21: no Spring Boot for them", "lines", "default",
         {"app_virtual_threads": True, "jvm_version": 21}, ("app_virtual_threads",),
         "needs Spring Boot ≥ 3.2, got sample's Spring Boot 2.7"),
    Case("virtual threads on camel4 and Java 17", "lines", "tuned",
         {"app_stack": "camel4", "tomcat_ajp_connector": "nio", "app_virtual_threads": True},
         ("app_virtual_threads", "jvm_version"), "Java 17 has no virtual threads"),
    # the jvm_* options checked by a JVM of the machine's Java: Java 17 takes -XX:+UseBiasedLocking, 21 refuses it
    Case("a Java 17 option on Java 21", "jvm21", "default",
         {"app_stack": "camel4", "jvm_version": 21, "jvm_extra_options": ["-XX:+UseBiasedLocking"]},
         ("UseBiasedLocking",), "the JVM refuses the options of the jvm_* knobs"),
    Case("AJP connector without AJP proxying", "pairs", "default", {"tomcat_ajp_connector": "nio2"},
         ("tomcat_ajp_connector", "httpd_proxy_protocol"), "has no effect unless httpd_proxy_protocol=ajp"),
    Case("Tomcat min spare above max", "pairs", "tuned", {"tomcat_threads_min_spare": 151},
         ("tomcat_threads_min_spare", "tomcat_threads_max"), "(151) must be ≤ tomcat_threads_max (150)"),
    Case("heap min above max", "pairs", "tuned", {"jvm_heap_min_mb": 300, "jvm_heap_max_mb": 256},
         ("jvm_heap_min_mb", "jvm_heap_max_mb"), "(300) must be ≤ jvm_heap_max_mb (256)"),
    Case("heap above the machine's memory", "pairs", "default", {"jvm_heap_max_mb": 700},
         ("jvm_heap_max_mb", "lab_memory_mb"), "(700) must be below the machine's memory (lab_memory_mb 512)"),
    Case("initial heap above the machine's memory", "pairs", "default", {"jvm_heap_min_mb": 600},
         ("jvm_heap_min_mb", "lab_memory_mb"), "(600) must be below the machine's memory (lab_memory_mb 512)"),
    Case("fewer customers than the load reads", "pairs", "tuned", {"mock_customers": 500},
         ("mock_customers",), "(500) must be ≥ the load's highest customer id (1000)"),
    Case("compose core pool above max", "pairs", "default", {"app_compose_pool_size": 30},
         ("app_compose_pool_size", "app_compose_max_pool_size"), "(30) must be ≤ app_compose_max_pool_size (20)"),
    Case("per-route pool above total", "pairs", "default",
         {"app_backend_connections_per_route": 300, "app_backend_max_connections": 200},
         ("app_backend_connections_per_route", "app_backend_max_connections"), "(300) must be ≤"),
    Case("AJP port on the HTTP port", "pairs", "default", {"tomcat_ajp_port": 8080},
         ("tomcat_http_port", "tomcat_ajp_port"), "must all differ"),
    Case("mock on the AJP port", "pairs", "tuned", {"mock_port": 8009},
         ("tomcat_ajp_port", "mock_port"), "mock_port (8009) must all differ"),
    Case("pre-started threads above systemd's default task limit", "tasks", "default",
         {"tomcat_threads_min_spare": 450, "tomcat_threads_max": 500},
         ("tomcat_threads_min_spare", "app_tasks_max"),
         "(450) + ~60 JVM threads exceed the app's task limit app_tasks_max (496, null"),
    Case("pre-started threads above app_tasks_max", "tasks", "tuned",
         {"tomcat_threads_max": 500, "tomcat_threads_min_spare": 450, "app_tasks_max": 500},
         ("tomcat_threads_min_spare", "app_tasks_max"),
         "(450) + ~60 JVM threads exceed the app's task limit app_tasks_max (500)"),
    Case("discarding threshold not below queue", "pairs", "tuned", {"logback_async_discarding_threshold": 500},
         ("logback_async_discarding_threshold", "logback_async_queue_size"),
         "(500) must be < logback_async_queue_size (500)"),
]

CASES += [
    # --- the items of list and mapping knobs, the kernel's names, the JVM (tasks/values.yml) ------------
    Case("sysctl name the kernel lacks", "sysctl", "default",
         {"base_sysctl": {"net.core.somaxconn": 1024, "net.ipv4.conf.eth1.rp_filter": 2, "net.core.somaxconnn": 1}},
         ("base_sysctl", "net.core.somaxconnn"), "the guest's kernel (Debian 12) has no such setting"),
    Case("empty sysctl value", "sysctl", "tuned", {"base_sysctl": {"vm.swappiness": " "}},
         ("base_sysctl", "vm.swappiness"), "must not be empty"),
    # a name or value that would reach a root shell or a second line of 60-lab.conf (issue 37): refused exactly
    Case("sysctl interface with a command substitution", "sysctl", "default",
         {"base_sysctl": {"net.ipv4.conf.$(touch /tmp/pwned).rp_filter": 1}},
         ("net.ipv4.conf.$(touch /tmp/pwned).rp_filter",), "the part after net.ipv4.conf must be default or all"),
    Case("sysctl interface with a quote", "sysctl", "default", {"base_sysctl": {"net.ipv4.conf.a'b.rp_filter": 1}},
         ("net.ipv4.conf.a'b.rp_filter",), "or an interface's name"),
    Case("sysctl interface with a line break", "sysctl", "default",
         {"base_sysctl": {"net.ipv4.conf.x\nkernel.sysrq = 1\n.rp_filter": 1}},
         ("base_sysctl",), 'entry "net.ipv4.conf.x\\nkernel.sysrq'),
    Case("sysctl glob for the interface", "sysctl", "default", {"base_sysctl": {"net.ipv4.conf.*.rp_filter": 1}},
         ("net.ipv4.conf.*.rp_filter",), "the part after net.ipv4.conf must be default or all"),
    Case("neigh has no all", "sysctl", "tuned", {"base_sysctl": {"net.ipv4.neigh.all.app_solicit": 1}},
         ("net.ipv4.neigh.all.app_solicit",), "the part after net.ipv4.neigh must be default or an interface's"),
    Case("neigh's gc settings exist under default only", "sysctl", "tuned",
         {"base_sysctl": {"net.ipv4.neigh.eth1.gc_thresh3": 2048}},
         ("net.ipv4.neigh.eth1.gc_thresh3",), "under default only: net.ipv4.neigh.default.gc_thresh3"),
    Case("sysctl value with a command", "sysctl", "tuned", {"base_sysctl": {"net.core.somaxconn": "1; reboot"}},
         ("net.core.somaxconn",), "must hold only letters, digits, spaces"),
    Case("sysctl value with a line break", "sysctl", "tuned",
         {"base_sysctl": {"kernel.domainname": "lab\nkernel.sysrq = 1"}},
         ("kernel.domainname",), "must hold only letters, digits, spaces"),
    Case("sysctl text that pipes to a program", "sysctl", "tuned", {"base_sysctl": {"kernel.core_pattern": "|/bin/sh"}},
         ("kernel.core_pattern",), "must hold only letters, digits, spaces"),
    Case("sysctl word for a number", "sysctl", "tuned", {"base_sysctl": {"vm.overcommit_memory": "never"}},
         ("vm.overcommit_memory",), "must be an integer: the kernel's setting holds a number"),
    Case("sysctl fraction for a number", "sysctl", "tuned", {"base_sysctl": {"vm.dirty_ratio": 1.5}},
         ("vm.dirty_ratio",), "must be an integer"),
    Case("sysctl true for a number", "sysctl", "default", {"base_sysctl": {"net.ipv4.ip_forward": True}},
         ("net.ipv4.ip_forward",), "must be an integer"),
    Case("sysctl four numbers for three", "sysctl", "default",
         {"base_sysctl": {"net.ipv4.tcp_rmem": "4096 87380 6291456 1"}},
         ("net.ipv4.tcp_rmem",), "must be up to 3 integers separated by spaces: the kernel's setting holds 3 numbers"),
    Case("sysctl number wider than 32 bits", "sysctl", "default", {"base_sysctl": {"net.core.rmem_max": 5000000000}},
         ("net.core.rmem_max",), "must be from -2147483648 to 4294967295 (the kernel keeps this setting in 32 bits)"),
    Case("sysctl number wider than 64 bits", "sysctl", "tuned",
         {"base_sysctl": {"vm.dirty_bytes": "18446744073709551616"}},
         ("vm.dirty_bytes",), "(the kernel keeps this setting in 64 bits)"),
    # --- base_timezone: a zone of /usr/share/zoneinfo (--set base_timezone=2024-01-01 is that text) -------------
    Case("time zone that does not exist", "timezone", "default", {"base_timezone": "Mars/Olympus_Mons"},
         ("base_timezone",), "no such time zone"),
    Case("a date as the time zone", "timezone", "tuned", {"base_timezone": "2024-01-01"},
         ("base_timezone",), '"2024-01-01": no such time zone'),
    Case("JVM option without its dash", "jvm_items", "default", {"jvm_extra_options": ["-Xss512k", "Xss1m"]},
         ("jvm_extra_options",), 'item "Xss1m": must be one JVM option'),
    Case("two JVM options in one item", "jvm_items", "tuned", {"jvm_extra_options": ["-Xss512k -Xmx64m"]},
         ("jvm_extra_options",), "without spaces"),
    # options that write or read a file, or run code, where the JVM runs (this host's check first): each refused
    # before the controller's JVM is asked, naming the knob to use (vars/main.yml knobs_jvm_instead; every option
    # outside the allowlist knobs_jvm_allowed is refused: tests/test_jvm_allowlist.py)
    Case("a GC log file as an extra option", "jvm_files", "default",
         {"jvm_extra_options": ["-Xss512k", "-Xlog:gc*:file=/tmp/lab-refused-gc.log"]},
         ("jvm_extra_options", "jvm_gc_log"), 'item "-Xlog:gc*:file=/tmp/lab-refused-gc.log": writes or reads a file'),
    Case("an agent as an extra option", "jvm_files", "tuned", {"jvm_extra_options": ["-javaagent:/tmp/agent.jar"]},
         ("jvm_extra_options",), "use instead: the profiler the lab attaches"),
    Case("a command on OutOfMemoryError", "jvm_files_2", "default",
         {"jvm_extra_options": ["-XX:OnOutOfMemoryError=/tmp/x"]}, ("jvm_extra_options", "jvm_exit_on_oom"),
         "runs code"),
    Case("options read from a file", "jvm_files_2", "tuned", {"jvm_extra_options": ["-XX:Flags=/etc/shadow"]},
         ("jvm_extra_options",), "use instead: none (the lab makes and keeps the files a run needs)"),
    Case("an allowed JVM option with a value the JVM refuses", "jvm", "default",
         {"jvm_extra_options": ["-XX:TieredStopAtLevel=7"]},
         ("jvm_*",), "TieredStopAtLevel=7 is outside the allowed range"),
    Case("initial heap above a maximum given as an extra option", "jvm", "tuned",
         {"jvm_heap_min_mb": 200, "jvm_extra_options": ["-Xmx128m"]},
         ("jvm_*",), "Initial heap size set to a larger value than the maximum heap size"),
]

RUNS = sorted({c.run for c in CASES})
# ./start.sh passes the load's highest customer id with the overrides (mock_customers must cover it)
LOAD = ("-e", "lab_load_id_max=1000")
# ./start.sh --insist-memory (lab/provision/playbook.py insist_memory_vars)
INSIST = ("-e", json.dumps({"lab_insist_memory": True}))
# knob sets beyond a 512 MB machine by the lab's estimate: refused unless the run insists (docs/knobs.md says so)
BEYOND_MEMORY = {"article-2018"}


def overrides_of(run: str) -> dict:
    """The run's lab_overrides, on top of each machine's own knob set as the lab gives it (as_the_lab); cases of a
    mapping knob (base_sysctl) on one machine add their entries to it."""
    out: dict[str, dict] = {}
    for case in CASES:
        if case.run == run:
            mine = out.setdefault(case.machine, {})
            for knob, value in case.knobs.items():
                both = isinstance(value, dict) and isinstance(mine.get(knob), dict)
                assert knob not in mine or both and not set(mine[knob]) & set(value), \
                    f"run {run}: two cases set the same knob (or entry) on {case.machine}: {knob}"
                mine[knob] = {**mine[knob], **value} if both else value
    return as_the_lab(out)


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Every validation run, two at a time: the refused batches, the catalog as is, memory refused and insisted on."""
    jobs = {run: (lambda run=run: ansible_playbook("-i", str(INVENTORY), *LOAD, "site.yml", overrides=overrides_of(run),
                                                    tmp=tmp_path_factory.mktemp(run)))
            for run in RUNS}
    jobs["good"] = lambda: ansible_playbook("-i", str(INVENTORY), *LOAD, "site.yml", overrides=as_the_lab(),
                                            tmp=tmp_path_factory.mktemp("good"))
    for name, insist in (("memory", ()), ("memory_insist", INSIST)):
        jobs[name] = lambda insist=insist, name=name: ansible_playbook(
            "-i", str(INVENTORY), *insist, "site.yml", overrides=as_the_lab({"tuned": {"jvm_heap_max_mb": 400}}),
            tmp=tmp_path_factory.mktemp(name))
    # a service of the user's whose own start (service check) took much metaspace and many threads: refused; one
    # never measured: estimated as the sample app, and said so
    for name, footprint in (("service_heavy", {"metaspace_mb": 300, "threads": 120, "rss_mb": 420}),
                            ("service_unmeasured", None)):
        sample = json.loads(default_service_vars().read_text())["lab_service"]
        service = {"lab_service": {**sample, "name": "shop", "footprint": footprint}}
        jobs[name] = lambda service=service, name=name: ansible_playbook(
            "-i", str(INVENTORY), *LOAD, "-e", json.dumps(service), "validate.yml",
            overrides=as_the_lab(), tmp=tmp_path_factory.mktemp(name))
    # every named knob set on both machines (as per-machine overrides, the way a run gives a machine another set)
    for path in sorted(KNOB_SETS.glob("*.yml")):
        # each machine made to run the set as a run makes it (its base set's values in, the machine's own put back)
        runs_the_set = {side: Configuration(path.stem) for side in ("default", "tuned")}
        both = design.Trial(configurations=runs_the_set).overrides()
        for suffix, insist in (("", ()), *((("+insist", INSIST),) if path.stem in BEYOND_MEMORY else ())):
            jobs[f"set:{path.stem}{suffix}"] = lambda both=both, name=path.stem, insist=insist: ansible_playbook(
                "-i", str(INVENTORY), *LOAD, *insist, "site.yml", overrides=both, tmp=tmp_path_factory.mktemp(name))
    # the cycle benchmark's knob changes (bench/cycle.py), on top of the tuned set
    cycle = {"tuned": {k: v[0] for k, v in CYCLE_CHANGES.values()}}
    jobs["cycle"] = lambda: ansible_playbook("-i", str(INVENTORY), *LOAD, "site.yml", overrides=as_the_lab(cycle),
                                             tmp=tmp_path_factory.mktemp("cycle"))
    # knobs the host has already validated in this command (./start.sh passes lab_knobs_checked): not checked again
    jobs["checked_on_host"] = lambda: ansible_playbook(
        "-i", str(INVENTORY), "-e", json.dumps({"lab_knobs_checked": True}), "site.yml",
        overrides=as_the_lab({"tuned": {"jvm_heap_max_mb": 400}}), tmp=tmp_path_factory.mktemp("checked"))
    jobs["bare_inventory"] = lambda: ansible_playbook("-i", str(bare_inventory(tmp_path_factory.mktemp("bare"))),
                                                      "site.yml")
    return run_all(jobs)


def bare_inventory(folder) -> str:
    """tests/unreachable.yml without the two variables only an inventory can give (lab_networks, lab_memory_mb)."""
    data = yaml.safe_load(INVENTORY.read_text())
    for name in ("lab_networks", "lab_memory_mb"):
        del data["all"]["vars"][name]
    (folder / "inventory.yml").write_text(yaml.safe_dump(data))
    return folder / "inventory.yml"


def test_there_are_enough_cases():
    assert len(CASES) >= 20


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_refused_before_any_connection(runs, case):
    run = runs[case.run]
    assert run.rc == 2, f"expected exit 2 (a failed validation task)\n{run.describe()}"
    assert "UNREACHABLE" not in run.out and PROVISION_PLAY not in run.out, \
        f"validation let the knobs through: the provisioning play started\n{run.describe()}"
    mine = [f for f in run.failures() if case.matches(f)]
    assert mine, (f"no failure on {case.fails_on()} naming {', '.join(case.names)} and saying {case.says!r}; "
                  f"failures: {[(f['host'], f['msg']) for f in run.failures()]}\n{run.describe()}")
    for name in case.names:
        assert name in run.out


@pytest.mark.parametrize("run_name", RUNS)
def test_each_run_fails_for_its_cases_only(runs, run_name):
    """A shared run must not hide a case behind another: every failure belongs to exactly one case."""
    run = runs[run_name]
    cases = [c for c in CASES if c.run == run_name]
    for failure in run.failures():
        owners = [c.id for c in cases if c.matches(failure)]
        assert len(owners) == 1, (f"failure {failure['host']}: {failure['msg']!r} matches cases {owners}\n"
                                  f"{run.describe()}")
    for machine in {h for c in cases for h in c.fails_on()}:
        assert re.search(rf"^{machine}\s+: .*failed=1", run.out, re.M), f"{machine} did not fail\n{run.describe()}"


def test_catalog_and_tuned_values_pass(runs):
    """No overrides: validation passes for both machines and the provisioning play starts (and, at
    127.0.0.1:9, finds the machines unreachable: exit 4)."""
    run = runs["good"]
    assert run.rc == 4, run.describe()
    assert not run.failures(), run.describe()
    before, _, after = run.out.partition(PROVISION_PLAY)
    assert after, f"the provisioning play never started\n{run.describe()}"
    assert "fatal: [default]: UNREACHABLE!" in after and "fatal: [tuned]: UNREACHABLE!" in after


def test_every_knob_set_passes_validation_on_both_machines(runs):
    """ansible/knob_sets/*.yml are validated like the catalog: types, ranges, rules, the JVM's options, memory. A set
    beyond the machine's memory (BEYOND_MEMORY) passes with --insist-memory, and only with it."""
    sets = sorted(name for name in runs if name.startswith("set:") and not name.endswith("+insist"))
    assert {"set:tuned", "set:article-2018"} <= set(sets)
    for name in sets:
        run = runs[name + "+insist" if name.removeprefix("set:") in BEYOND_MEMORY else name]
        assert run.rc == 4 and not run.failures(), f"{name}\n{run.describe()}"
        assert PROVISION_PLAY in run.out, f"{name}: validation did not let it through\n{run.describe()}"
    fits = [n for n in sets if n.removeprefix("set:") not in BEYOND_MEMORY]
    assert not [n for n in fits if any(MEMORY.match(m) or WARNING.match(m) for m in runs[n].messages())], \
        "a set beyond the machine's memory must be in BEYOND_MEMORY, and documented as needing --insist-memory"


def test_the_cycle_benchmarks_knob_changes_pass_on_tuned(runs):
    run = runs["cycle"]
    assert run.rc == 4 and not run.failures() and PROVISION_PLAY in run.out, run.describe()


MEMORY = re.compile(r"^by the lab's estimate these knobs need ~(\d+) MB on a (\d+) MB machine")
WARNING = re.compile(r"^WARNING: by the lab's estimate these knobs need ~(\d+) MB on a (\d+) MB machine")


def test_the_article_set_is_refused_for_memory_unless_the_run_insists(runs):
    """The article's fixed 384 MB heap, 70 MB metaspace, 300 threads and 10 HTTPD children ask for more than 512 MB
    by the lab's estimate: refused before any machine is touched (exit 2), each part of the estimate named; with
    --insist-memory it runs as it was, the same words a warning."""
    refused, insisted = runs["set:article-2018"], runs["set:article-2018+insist"]
    assert refused.rc == 2 and PROVISION_PLAY not in refused.out, refused.describe()
    said = {f["host"]: f["msg"] for f in refused.failures()}
    assert sorted(said) == ["default", "tuned"], refused.describe()
    for msg in said.values():
        need, have = (int(g) for g in MEMORY.match(msg).groups())
        assert have == 512 and need > 700, msg
        for part in ("heap 384 MB = jvm_heap_max_mb", "metaspace 70 MB = jvm_metaspace_max_mb",
                     "tomcat_threads_max 300", "httpd_max_request_workers 300", "httpd_threads_per_child 30",
                     "--insist-memory"):
            assert part in msg, (part, msg)
    warned = sorted(r["host"] for r in insisted.results() if WARNING.match(r["msg"]))
    assert warned == ["default", "tuned"], insisted.describe()


def test_the_scenario_fits_its_machines(runs):
    """The catalog and the tuned values fit 512 MB machines by the knobs role's own estimate."""
    run = runs["good"]
    assert not [m for m in run.messages() if MEMORY.match(m) or WARNING.match(m)], run.describe()


def test_memory_beyond_the_machine_is_refused_unless_the_run_insists(runs):
    refused, insisted = runs["memory"], runs["memory_insist"]
    assert refused.rc == 2 and PROVISION_PLAY not in refused.out, refused.describe()
    [failure] = refused.failures()      # only tuned asks for too much
    assert failure["host"] == "tuned", refused.describe()
    need, have = (int(g) for g in MEMORY.match(failure["msg"]).groups())
    assert have == 512 and need > have, failure["msg"]
    assert "heap 400 MB = jvm_heap_max_mb" in failure["msg"] and "--insist-memory" in failure["msg"]
    assert insisted.rc == 4 and not insisted.failures(), insisted.describe()
    assert PROVISION_PLAY in insisted.out, f"--insist-memory did not let it through\n{insisted.describe()}"
    warnings = [r for r in insisted.results() if WARNING.match(r["msg"])]
    assert [r["host"] for r in warnings] == ["tuned"], insisted.describe()
    assert WARNING.match(warnings[0]["msg"]).groups() == MEMORY.match(failure["msg"]).groups()


def test_knobs_the_host_validated_are_applied_without_a_second_check(runs):
    """site.yml after ./start.sh's own validate.yml (lab_knobs_checked): the overrides are applied, the checks skipped
    (the heap that `memory` refuses goes through: the host refused it before, when it was bad)."""
    run = runs["checked_on_host"]
    assert run.rc == 4 and not run.failures() and PROVISION_PLAY in run.out, run.describe()
    assert "Set this machine's overrides" in run.out
    for check in ("Check every knob's type and range", "Estimate the machine's memory use"):
        # the two hosts' lines come in whichever order their forks finish
        said = re.search(rf"TASK \[knobs : {re.escape(check)}\] \**\n(skipping: \[\w+\]\n)(skipping: \[\w+\]\n)",
                         run.out)
        assert said and sorted(said.groups()) == ["skipping: [default]\n", "skipping: [tuned]\n"], \
            f"{check} ran\n{run.describe()}"
    assert "Find each knob's type and range problem" not in run.out, run.describe()


def test_a_services_measured_start_is_what_its_memory_estimate_takes(runs):
    heavy, unmeasured = runs["service_heavy"], runs["service_unmeasured"]
    assert heavy.rc == 2, heavy.describe()
    failures = heavy.failures()
    assert {f["host"] for f in failures} == {"default", "tuned"}, heavy.describe()
    msg = failures[0]["msg"]
    assert "metaspace 375 MB (jvm_metaspace_max_mb null: shop's own start took 300 MB, + 25 %)" in msg, msg
    assert "+ the service's own 120 threads at start × 0.25 MB of stack" in msg, msg
    assert unmeasured.rc == 0, unmeasured.describe()
    notes = [m for m in unmeasured.messages() if m.startswith("NOTE: the memory estimate of shop")]
    assert len(notes) == 2 and "service check shop" in notes[0], unmeasured.describe()


def test_an_inventory_without_the_machines_networks_and_memory_is_refused(runs):
    """lab_networks and lab_memory_mb come from the inventory (a real-host inventory must set them)."""
    run = runs["bare_inventory"]
    assert run.rc == 2 and PROVISION_PLAY not in run.out, run.describe()
    for host in ("default", "tuned"):
        said = " ".join(run.messages(host))
        for name in ("lab_networks", "lab_memory_mb"):
            assert f"knob {name} = " in said and "the inventory must set it in all:vars" in said, run.describe()
