"""JVM options by allowlist (roles/knobs/tasks/jvm_options.yml, vars/main.yml knobs_jvm_allowed): every option the
knobs hand a JVM takes a listed form, or the knobs are refused before any JVM starts, naming the option.

Options that load code or name a file act while the JVM starts, under -version too: the controller's check (`java
OPTIONS -version` as the lab's user), then the machine. Each hostile option below passed the denylist the lab had
before (knobs_jvm_refused_options) and reached that check.

Five ansible-playbook runs, two at a time: through the validation the lab runs first (lab/provision/playbook.py
validate, the options as data), the hostile options, a line break after an option, and an example of each allowed
form with the jvm_* knobs (Java 17's check too); through the allowlist alone (tasks_from jvm_options), every option
each knob value and each knob set makes, and an option of the lab's the list lacks.
"""
from __future__ import annotations

import json
import subprocess

import pytest
import yaml
from conftest import ANSIBLE_DIR, ROOT, ansible_playbook, run_all

from lab.experiment import service
from lab.provision import catalog, controller_java, knob_sets, playbook

KNOBS_VARS = ANSIBLE_DIR / "roles" / "knobs" / "vars" / "main.yml"
ALLOWED = yaml.safe_load(KNOBS_VARS.read_text()).get("knobs_jvm_allowed", {})
WHERE = "ansible/roles/knobs/vars/main.yml (knobs_jvm_allowed)"

# (option, what it would do where the JVM starts, the knob a refusal names instead or None)
HOSTILE = [
    ("-Xbootclasspath/a:/tmp/lab-hostile/x.jar", "appends a jar to the boot class path", None),
    ("-Djava.system.class.loader=Evil", "makes a class of the user's the system class loader", None),
    ("--patch-module=java.base=/tmp/lab-hostile/p", "replaces classes of java.base", None),
    ("-Djava.security.manager=Evil", "installs a class of the user's as the security manager", None),
    ("--add-modules=ALL-SYSTEM", "resolves modules the service does not ask for", None),
    ("--module-path=/tmp/lab-hostile/mods", "loads modules from a folder", None),
    ("-Djava.class.path=/tmp/lab-hostile/x.jar", "sets the class path", None),
    ("-cp", "takes the next option as the class path", None),
    ("--class-path=/tmp/lab-hostile/x.jar", "sets the class path", None),
    ("-XX:+UnlockDiagnosticVMOptions", "opens the diagnostic flags (CompileCommand, …)", None),
    ("-XX:CompileCommand=quiet", "a compiler command (with options that print or write files)", None),
    ("-Djdk.module.main=evil", "names the main module", None),
    ("-Djava.library.path=/tmp/lab-hostile/native", "loads native code from a folder", "tomcat_ajp_connector=apr"),
    ("-Djava.rmi.server.codebase=http://127.0.0.1/x", "loads classes from a URL", None),
    ("-XX:+EnableDynamicAgentLoading", "lets an agent load into the running JVM", "the profiler the lab attaches"),
    ("-Djava.util.logging.config.class=Evil", "runs a class of the user's at logging's start",
     "the logging configuration a service's descriptor brings"),
    ("-Djava.util.logging.config.file=/etc/shadow", "reads a host file", "logging:"),
    ("-Djava.util.logging.manager=Evil", "runs a class of the user's as the log manager", "logging:"),
    ("-Djava.io.tmpdir=/etc", "temporary files in a host folder", None),
    ("-Dlogback.configurationFile=/etc/shadow", "reads a host file", "logging:"),
    ("-Dspring.config.location=file:/etc/shadow", "reads a host file as the configuration", "properties:"),
    ("-Dspring.config.import=file:/root/x.yml", "imports a host file", "properties:"),
    ("-Dloader.path=/tmp/lab-hostile", "Boot's launcher loads jars from a folder", "properties:"),
    ("-Xlog:help", "prints the help and exits: the service never starts", None),
    ("-XX:AllocateHeapAt=/tmp/lab-hostile", "makes the heap a file in a folder",
     "none (the lab makes and keeps the files a run needs)"),
    ("-XX:SharedArchiveConfigFile=/etc/shadow", "reads a host file", "jvm_cds"),
    ("-XX:+CreateCoredumpOnCrash", "a core file on a crash", "none (the lab makes and keeps the files"),
    ("-XX:+DumpReplayDataOnError", "a replay file on a compiler crash", "none (the lab makes and keeps the files"),
    ("-XX:ReplayDataFile=/tmp/lab-hostile/replay", "names a file", "none (the lab makes and keeps the files"),
    ("-Djavax.net.ssl.trustStore=/etc/shadow", "reads a host file", None),
    ("-Djava.security.properties=/tmp/lab-hostile/s", "reads a file", None),
    ("-Dcom.sun.management.jmxremote.port=9999", "opens a JMX port", "the lab measures the JVM itself"),
    ("-XX:+ManagementServer", "opens a JMX port", "the lab measures the JVM itself"),
    ("-XX:+IgnoreUnrecognizedVMOptions", "hides an option from the JVM's check", None),
    ("--add-opens=java.base/java.lang=ALL-UNNAMED", "opens the JDK's internals", None),
    ("-Djdk.internal.lambda.dumpProxyClasses=/tmp/lab-hostile", "writes class files into a folder", None),
    ("-Djdk.attach.allowAttachSelf=true", "lets the service attach agents to itself", "the profiler the lab attaches"),
    ("-Dlab.x=1", "a property the lab does not list", None),
    ("-Xverify:none", "skips bytecode verification", None),
    # a listed name in another form, or with a value not its own
    ("-XX:MaxHeapSize=/tmp/lab-hostile", "a path as a size", None),
    ("-Dfile.encoding=../../etc/shadow", "a path as an encoding", None),
    ("-Duser.timezone=../../../etc/shadow", "a path as a time zone", None),
    ("-XX:+MaxHeapSize", "a size flag as a switch", None),
    ("-XX:UseG1GC=true", "a switch with a value", None),
    ("-Xmx1g,file=x", "a size with more after it", None),
    ("-Xlog:gc:stdout:time:filecount=1,file=x", "a file named in the output options", None),
]

# What each failure of these forms says (the form, not only that it is refused)
FORM_SAYS = {
    "-XX:MaxHeapSize=/tmp/lab-hostile": "-XX:MaxHeapSize takes a number",
    "-Dfile.encoding=../../etc/shadow": "-Dfile.encoding takes a value matching",
    "-XX:+MaxHeapSize": "-XX:MaxHeapSize takes a value",
    "-XX:UseG1GC=true": "-XX:UseG1GC is a switch: -XX:+UseG1GC or -XX:-UseG1GC",
    "-Xmx1g,file=x": "-Xmx takes a size",
}

# An example of each allowed form, and more (none of Java 21 only: the controller's Java 17 checks them too)
EXAMPLES_17 = ["-server", "-Xmn32m", "-XX:MaxGCPauseMillis=100", "-XX:+UseStringDeduplication",
               "-XX:ReservedCodeCacheSize=64m", "-XX:ActiveProcessorCount=2", "-XX:MaxRAMPercentage=50.0",
               "-Xlog:gc*=info:stdout:time,uptime,level,tags", "-Xlog:safepoint:stderr", "-Xlog:gc",
               "-Dfile.encoding=UTF-8", "-Duser.timezone=Europe/Paris", "-Djava.net.preferIPv4Stack=true",
               "-Dsun.net.client.defaultConnectTimeout=5000", "-XX:NativeMemoryTracking=summary",
               "-XX:+UseBiasedLocking", "-XX:-OmitStackTraceInFastThrow", "-Xshare:auto", "-XX:-UsePerfData",
               "-XX:MetaspaceSize=70m", "-XX:+ScavengeBeforeFullGC", "-XX:ParallelGCThreads=2",
               "-XX:+ParallelRefProcEnabled"]
EXAMPLES_ANY = EXAMPLES_17 + ["-XX:+ZGenerational", "-Xlog:async", "-Xlog", "-Xlog:disable", "-Xss1m", "-Xmx1G",
                              "-XX:ShenandoahGCHeuristics=compact", "-XX:TieredStopAtLevel=1",
                              "-Djdk.virtualThreadScheduler.parallelism=2", "-verbose:gc"]

PLAY = """
- name: JVM options {name}
  hosts: localhost
  connection: local
  gather_facts: false
  vars: {vars}
  tasks:
    - name: Read which JVM options the jvm_* knobs make
      ansible.builtin.include_vars:
        file: {app_vars}
      when: {app_vars_read}
    - name: The allowlist alone
      ansible.builtin.include_role:
        name: knobs
        tasks_from: jvm_options
"""


def jvm_knobs() -> dict[str, list]:
    """{knob: each value worth trying}: every knob whose value lands in jvm.options, at each choice, both ends of its
    range, and unset."""
    out = {}
    for name, spec in catalog.specs().items():
        if "jvm.options" not in str(spec.get("lands")):
            continue
        values = [None] if spec.get("default") is None else []
        if spec.get("type") == "bool":
            values += [True, False]
        values += list(spec.get("choices") or []) + list(spec.get("range") or [])
        out[name] = values or [spec["default"]]
    return out


def plays() -> list[tuple[str, dict]]:
    """(name, the play's vars): each knob of jvm_knobs at each value on the catalog's, every knob set as a machine runs
    it, and the examples."""
    defaults = {name: spec.get("default") for name, spec in catalog.specs().items()}
    out = [(f"{knob}={json.dumps(value)}", {**defaults, knob: value})
           for knob, values in jvm_knobs().items() for value in values]
    out += [(f"knob set {name}", {**defaults, **dict(knob_sets.values(name))}) for name in knob_sets.names()]
    out.append(("examples", {**defaults, "jvm_extra_options": EXAMPLES_ANY}))
    return out


def allowlist_play(folder, cases: list[tuple[str, dict]], app_vars: bool = True):
    text = "".join(PLAY.format(name=json.dumps(name), vars=json.dumps(values), app_vars_read=json.dumps(app_vars),
                               app_vars=ANSIBLE_DIR / "roles" / "app" / "vars" / "main.yml") for name, values in cases)
    (folder / "play.yml").write_text(text)
    return ansible_playbook("-i", "localhost,", str(folder / "play.yml"))


def validate(overrides: dict) -> str:
    """What the validation ./start.sh runs first says of these overrides: '' when it passes."""
    try:
        sample = service.ansible_vars(service.load(service.DEFAULT), {})
        playbook.validate({"memory_mb": 512}, overrides, service_vars=sample)
    except ValueError as refused:
        return str(refused)
    return ""


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    fault = [("a form the list lacks", {"app_jvm_knob_options": ["-XX:+UseKnobOfTheFuture"], "jvm_extra_options": []})]
    return run_all({
        "hostile": lambda: validate({"tuned": {"jvm_extra_options": [option for option, _, _ in HOSTILE]}}),
        "line_break": lambda: validate({"default": {"jvm_extra_options": ["-Xss512k\n"]}}),
        "allowed": lambda: allowlist_play(tmp_path_factory.mktemp("allowed"), plays()),
        "fault": lambda: allowlist_play(tmp_path_factory.mktemp("fault"), fault, app_vars=False),
        "accepted_by_java_17": lambda: validate({"tuned": {"jvm_heap_max_mb": 128, "jvm_heap_min_mb": 64,
                                                           "jvm_metaspace_max_mb": 96, "jvm_thread_stack_kb": 512,
                                                           "jvm_gc": "g1", "jvm_exit_on_oom": True,
                                                           "jvm_tiered_stop_at_level": 1,
                                                           "jvm_extra_options": EXAMPLES_17}}),
    })


def test_there_are_enough_hostile_options():
    assert len(HOSTILE) >= 15 and len({option for option, _, _ in HOSTILE}) == len(HOSTILE)


@pytest.mark.parametrize("option, does, instead", HOSTILE, ids=[option for option, _, _ in HOSTILE])
def test_a_hostile_option_is_refused_naming_it_before_any_jvm_runs(runs, option, does, instead):
    said = runs["hostile"]
    lines = [line for line in said.splitlines() if f"tuned: knob jvm_extra_options item {json.dumps(option)}:" in line]
    assert len(lines) == 1, f"{option} ({does}) not refused on its own line:\n{said}"
    assert WHERE in lines[0], lines[0]
    if instead:
        assert instead in lines[0].partition("; use instead: ")[2], lines[0]
    if option in FORM_SAYS:
        assert FORM_SAYS[option] in lines[0], lines[0]
    assert "the JVM refuses" not in said, "the controller's JVM was asked"


def test_nothing_but_the_hostile_options_is_refused(runs):
    said = [line for line in runs["hostile"].splitlines() if line.startswith("  ")]
    assert len(said) == len(HOSTILE), "\n".join(said)


def test_a_line_break_after_an_option_is_refused(runs):
    assert 'default: knob jvm_extra_options item "-Xss512k\\n": must be one JVM option' in runs["line_break"], \
        runs["line_break"]


def test_every_option_a_knob_or_knob_set_makes_and_each_form_passes(runs):
    run = runs["allowed"]
    assert run.rc == 0 and not run.failures(), run.describe()
    checked = run.out.count("TASK [knobs : Check each JVM option is one the lab allows")
    assert checked == len(plays()), f"the allowlist ran {checked} times for {len(plays())} plays\n{run.describe()}"
    judged = [*EXAMPLES_ANY, "-XX:+UseZGC", "-XX:+UseShenandoahGC", "-Xss8192k", "-XX:MaxMetaspaceSize=2048m",
              "-Dspring.threads.virtual.enabled=true", "-XX:+ExitOnOutOfMemoryError"]
    assert not [option for option in judged if f"(item={json.dumps(option)})" not in run.out], run.describe()


def test_an_option_a_knob_makes_outside_the_list_says_the_lab_is_at_fault(runs):
    run = runs["fault"]
    [failure] = run.failures()
    assert failure["msg"].startswith('the JVM option a knob makes (a fault of the lab: its form belongs in '
                                     'knobs_jvm_allowed) "-XX:+UseKnobOfTheFuture"'), failure["msg"]


def test_the_examples_pass_the_validation_and_java_17s_check(runs):
    assert runs["accepted_by_java_17"] == "", runs["accepted_by_java_17"]


def product_flags(java: str) -> dict[str, str]:
    """{flag: its type} of each product flag (manageable ones too) of this JVM, as -XX:+PrintFlagsFinal lists them."""
    listed = subprocess.run([java, "-XX:+PrintFlagsFinal", "-version"], capture_output=True, text=True, check=True)
    out = {}
    for line in listed.stdout.splitlines():
        parts = line.split()
        if len(parts) >= 4 and ("product}" in line or "{manageable}" in line):
            out[parts[1]] = parts[0]
    return out


def test_each_listed_flag_is_a_product_flag_of_the_machines_java_of_its_kind():
    """A -XX name on the list is one the machines' JVM has as a product flag (no diagnostic or experimental one,
    which could run code or write files once unlocked), of the type its form takes."""
    flags = {}
    for java in controller_java.javas().values():
        for name, kind in product_flags(java).items():
            flags.setdefault(name, kind)
    assert len(controller_java.javas()) == 2, "both Javas of the machines are needed to check the list"
    numeric = {"int", "uint", "intx", "uintx", "size_t", "uint64_t", "double"}
    wrong = {name: flags.get(name) for name in ALLOWED["switches"] if flags.get(name) != "bool"}
    wrong |= {name: flags.get(name) for name in ALLOWED["numbers"] if flags.get(name) not in numeric}
    wrong |= {name: flags.get(name) for name in ALLOWED["words"] if flags.get(name) != "ccstr"}
    assert not wrong, f"not a product flag of that type in Java 17 or 21: {wrong}"


def test_docs_list_every_allowed_name():
    text = (ROOT / "docs" / "knobs.md").read_text()
    section = text[text.index("### JVM options: an allowlist"):]
    names = (ALLOWED["as_written"] + ALLOWED["sizes"] + ALLOWED["switches"] + ALLOWED["numbers"]
             + list(ALLOWED["words"]) + list(ALLOWED["properties"]))
    missing = [name for name in names if f"`{name}`" not in section]
    assert not missing, f"docs/knobs.md's allowlist section lacks {missing}"
