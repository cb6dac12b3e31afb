"""What the lab says to broken and hostile input (issue 53's acceptance): each input given as a user would type it,
the lab's answer and its exit code; and the host's files before and after all of them — created, removed or changed
outside the lab's own folders (the checkout, /var/lib/camel-lab, the lab's run-time folders).

    .venv/bin/python -m bench.inputs [--label L] [--only NAME,…]

Needs root and no lab running (`./start.sh status`); it brings no machine up: every input is meant to be refused
before anything starts, and one that is not (on containers, the cheaper kind) is stopped after TIMEOUT_S and said
as such. Its files (descriptors,
plans, stubs, spaces) are written in its own run folder. Results: results/<stamp>-bench-inputs/inputs.json and
inputs.md (the table). A benchmark, not a CI stage (~5 min: half the inputs reach Ansible's validation).
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from lab import paths
from lab.experiment import record

START = str(paths.ROOT / "start.sh")
TIMEOUT_S = 240
PLANTED = "/tmp/lab-input-planted"      # what an input that ran code would have made
OUTSIDE = "/tmp/lab-input-run"          # a run folder of the user's, outside results/ (made and removed by its input)
# the lab's own folders, and the kernel's and the run-time's, left out of the host's listing
LEFT_OUT = [str(paths.ROOT), "/var/lib/camel-lab", "/proc", "/sys", "/dev", "/run", "/var/run", "/var/cache/apt",
            "/var/lib/apt/lists", "/var/log/journal"]
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]


@dataclass
class Input:
    name: str
    argv: list[str]                                 # after ./start.sh (or a whole command, when `raw`)
    files: dict[str, str] = field(default_factory=dict)   # written in the bench's folder first ({dir} is replaced)
    env: dict[str, str] = field(default_factory=dict)
    raw: bool = False
    watch: list[str] = field(default_factory=list)  # paths that must not exist afterwards

    @property
    def service(self) -> bool:
        """A descriptor of the test service among its files: its jar, stubs and plan go beside it."""
        return any(name.endswith(".yml") and "jar:" in text for name, text in self.files.items())


SERVICE = """name: {name}
jar: testapp/target/lab-testapp.jar
port: 8080
proxy_path: /shop/
health: /shop/ping
check: {{path: /shop/price/1, status: 200}}
properties:
  shop.pricing-url: "{{mock}}"
mock: {{stubs: testapp/stubs}}
load: {{plan: testapp/testapp.jmx}}
"""
PLAN_HEAD = ('<?xml version="1.0" encoding="UTF-8"?>\n<jmeterTestPlan version="1.2" properties="5.0"><hashTree>'
             '<TestPlan testname="p"/><hashTree><ThreadGroup testname="g"><stringProp name="ThreadGroup.num_threads">'
             '${__P(users,1)}</stringProp><stringProp name="ThreadGroup.ramp_time">${__P(ramp_up_s,1)}</stringProp>'
             '<stringProp name="ThreadGroup.duration">${__P(duration_s,1)}</stringProp></ThreadGroup><hashTree>')
PLAN_TAIL = "</hashTree></hashTree></hashTree></jmeterTestPlan>\n"
LIST = "method,path,body_file,weight,expected_status\n"   # a request list's header


def sampler(domain: str = "${__P(host)}", path: str = "/shop/ping") -> str:
    return (f'<HTTPSamplerProxy testname="ping"><stringProp name="HTTPSampler.domain">{domain}</stringProp>'
            f'<stringProp name="HTTPSampler.path">{path}</stringProp></HTTPSamplerProxy><hashTree/>')


TESTAPP = paths.ROOT / "services" / "testapp"     # its jar, stubs and plan: put beside each descriptor (service_kit)


def service_with(name: str, extra: str = "", replace: tuple[str, str] | None = None) -> dict[str, str]:
    text = SERVICE.format(name=name)
    if replace:
        text = text.replace(*replace)
    return {f"{name}.yml": text + extra}


def inputs() -> list[Input]:
    svc = lambda name: ["--service", f"{{dir}}/{name}.yml", "--duration", "1m"]  # noqa: E731
    space = lambda name: ["tune", "--space", f"{{dir}}/{name}", "--budget", "1h"]  # noqa: E731
    return [
        # -- run options -----------------------------------------------------------------------------------------
        Input("negative users", ["--users", "-5"]),
        Input("zero duration", ["--duration", "0s"]),
        Input("a ramp-up in words", ["--ramp-up", "soon"]),
        Input("a label with a slash", ["--label", "../../etc"]),
        Input("repeat 0", ["--repeat", "0"]),
        Input("--allow-plan-code alone", ["--allow-plan-code"]),
        Input("a run option with `up`", ["--users", "5", "up"]),
        Input("an unknown provider", ["up"], env={"LAB_PROVIDER": "lxc"}),
        # -- knobs -----------------------------------------------------------------------------------------------
        Input("an unknown knob", ["--set", "tuned:no_such_knob=1"]),
        Input("a word for an integer knob", ["--set", "tuned:tomcat_threads_max=many"]),
        Input("a JVM option that writes a file", ["--set", f"tuned:jvm_extra_options=[-Xlog:gc:file={PLANTED}-gc]"],
              watch=[f"{PLANTED}-gc"]),
        Input("a Java agent", ["--set", "tuned:jvm_extra_options=[-javaagent:/tmp/agent.jar]"]),
        Input("a JVM option off the allowlist (refused before any JVM starts)",
              ["--set", "default:jvm_extra_options=[-XX:+UseNoSuchThing]"]),
        Input("a template in a knob value", ["--set", "tuned:base_timezone=\"{{ lookup('pipe', 'touch " + PLANTED
                                             + "-tz') }}\""], watch=[f"{PLANTED}-tz"]),
        Input("a host-wide kernel setting on containers", ["--set", "tuned:base_sysctl={vm.swappiness: 10}"],
              env={"LAB_PROVIDER": "containers"}),
        Input("an unknown kernel setting", ["--set", "default:base_sysctl={net.core.nosuch: 1}"]),
        Input("a heap above the machine", ["--set", "tuned:jvm_heap_max_mb=700"]),
        Input("an unknown knob set", ["--knob-set", "tuned=nosuch"]),
        Input("a knob set given as a path", ["--knob-set", "tuned={dir}/evil.yml"],
              files={"evil.yml": "tomcat_threads_max: 200\nbase_timezone: \"{{ lookup('pipe', 'touch " + PLANTED
                     + "-set') }}\"\n"}, watch=[f"{PLANTED}-set"]),
        # -- a service's descriptor ------------------------------------------------------------------------------
        Input("an unknown service", ["--service", "nosuch", "--duration", "1m"]),
        Input("a descriptor that is not YAML", svc("broken"), files={"broken.yml": "name: [unclosed\n  : :\n"}),
        Input("a descriptor's logging: a root key", svc("leak"),
              files=service_with("leak", "logging: /root/.ssh/id_ed25519\n")),
        Input("a descriptor's jar outside its root", svc("outside"),
              files=service_with("outside", replace=("jar: testapp/target/lab-testapp.jar", "jar: ../../etc/passwd"))),
        Input("a property a knob owns", svc("owned"),
              files=service_with("owned", replace=('  shop.pricing-url: "{mock}"',
                                                   '  shop.pricing-url: "{mock}"\n  server.tomcat.threads.max: 5'))),
        Input("server.address in properties", svc("address"),
              files=service_with("address", replace=('  shop.pricing-url: "{mock}"',
                                                     '  shop.pricing-url: "{mock}"\n  server.address: 0.0.0.0'))),
        Input("a lookup in a property", svc("lookup"),
              files=service_with("lookup", replace=('  shop.pricing-url: "{mock}"',
                                                    "  shop.pricing-url: \"{{ lookup('pipe', 'touch " + PLANTED
                                                    + "-prop') }}\"")), watch=[f"{PLANTED}-prop"]),
        Input("the kit's metrics port as an extra port", svc("port"),
              files=service_with("port", replace=("mock: {stubs: testapp/stubs}",
                                                  "mock: {stubs: testapp/stubs, extra_ports: [9464]}"))),
        Input("a corrupt jar", svc("corrupt"),
              files={**service_with("corrupt", replace=("jar: testapp/target/lab-testapp.jar",
                                                        "jar: corrupt.jar")),
                     "corrupt.jar": "PK\x03\x04 not really a zip"}),
        # -- a request list --------------------------------------------------------------------------------------
        Input("a request path calling __groovy", svc("groovy"),
              files={**service_with("groovy", replace=("load: {plan: testapp/testapp.jmx}",
                                                       "load: {requests: groovy.csv}")),
                     "groovy.csv": LIST + "GET,/shop/x${__groovy(1+1)},,1,200\n"}),
        Input("a body file outside the list's folder", svc("body"),
              files={**service_with("body", replace=("load: {plan: testapp/testapp.jmx}",
                                                     "load: {requests: body.csv}")),
                     "body.csv": LIST + "POST,/shop/x,../../etc/shadow,1,200\n"}),
        Input("a weight in superscript digits", svc("weight"),
              files={**service_with("weight", replace=("load: {plan: testapp/testapp.jmx}",
                                                       "load: {requests: weight.csv}")),
                     "weight.csv": LIST + "GET,/shop/ping,,\u00b2,200\n"}),
        Input("a CSV field over 128 KiB", svc("huge"),
              files={**service_with("huge", replace=("load: {plan: testapp/testapp.jmx}",
                                                     "load: {requests: huge.csv}")),
                     "huge.csv": LIST + "GET,/" + "x" * 140_000 + ",,1,200\n"}),
        # -- a JMeter plan ---------------------------------------------------------------------------------------
        Input("a plan with an OS Process sampler", svc("p1")[:2] + ["--plan", "{dir}/os.jmx", "--duration", "1m"],
              files={**service_with("p1"), "os.jmx": PLAN_HEAD + sampler()
                     + '<SystemSampler guiclass="SystemSamplerGui" testname="sh">'
                       '<stringProp name="SystemSampler.command">touch</stringProp>'
                       '</SystemSampler><hashTree/>' + PLAN_TAIL}),
        Input("a plan whose path is a full URL", svc("p2")[:2] + ["--plan", "{dir}/url.jmx", "--duration", "1m"],
              files={**service_with("p2"), "url.jmx": PLAN_HEAD + sampler(path="http://elsewhere:8080/x")
                     + PLAN_TAIL}),
        Input("a plan whose host is ${__P(host)}.example",
              svc("p3")[:2] + ["--plan", "{dir}/dom.jmx", "--duration", "1m"],
              files={**service_with("p3"), "dom.jmx": PLAN_HEAD + sampler(domain="${__P(host)}.example")
                     + PLAN_TAIL}),
        Input("a plan that is not XML", svc("p4")[:2] + ["--plan", "{dir}/bad.jmx", "--duration", "1m"],
              files={**service_with("p4"), "bad.jmx": "<jmeterTestPlan><hashTree>\n"}),
        # -- stubs -----------------------------------------------------------------------------------------------
        Input("a stub whose delay overflows", svc("s1"),
              files={**service_with("s1", replace=("mock: {stubs: testapp/stubs}", "mock: {stubs: s1}")),
                     "s1/mappings/price.json": json.dumps({"request": {"urlPathPattern": "/price/.*"}, "response": {
                         "status": 200, "delayDistribution": {"type": "lognormal", "median": 10, "sigma": 800}}})}),
        Input("a stub delay of Infinity", svc("s2"),
              files={**service_with("s2", replace=("mock: {stubs: testapp/stubs}", "mock: {stubs: s2}")),
                     "s2/mappings/price.json": '{"request": {"urlPathPattern": "/price/.*"}, '
                                      '"response": {"status": 200, "fixedDelayMilliseconds": Infinity}}'}),
        Input("a stub header outside ISO-8859-1", svc("s3"),
              files={**service_with("s3", replace=("mock: {stubs: testapp/stubs}", "mock: {stubs: s3}")),
                     "s3/mappings/price.json": json.dumps({"request": {"urlPathPattern": "/price/.*"}, "response": {
                         "status": 200, "headers": {"X-Name": "\u540d\u524d"}}}, ensure_ascii=False)}),
        # -- gates, history, folders -----------------------------------------------------------------------------
        Input("a gate without a bound", ["--gate", "tps>="]),
        Input("a gate in words", ["--gate", "errors<=zero"]),
        Input("history since yesterday", ["history", "--since", "yesterday"]),
        Input("history since 13th month", ["history", "--since", "2026-13-45"]),
        Input("compare one folder", ["compare", "{dir}"]),
        Input("report of a host folder (/etc: it has a default/)", ["report", "/etc"]),
        Input("report of a run folder outside results/, as root",
              ["sh", "-c", f"mkdir -p {OUTSIDE} && cp '{{dir}}/run.json' {OUTSIDE}/ && {START} report {OUTSIDE}; "
                           f"rc=$?; rm -r {OUTSIDE}; exit $rc"], raw=True,
              files={"run.json": '{"run_id": "run", "status": "complete"}'}),
        Input("runs --add as nobody", [*NOBODY, START, "runs", "--add", "{dir}"], raw=True),
        # -- the tuner -------------------------------------------------------------------------------------------
        Input("a study URL with a password", ["tune", "--study", "postgresql://lab:s3cret@127.0.0.1:1/x",
                                              "--budget", "1h"]),
        Input("a space entry of an unknown field", space("unknown.yml"),
              files={"unknown.yml": "tomcat_threads_max: {low: 50, high: 400, steps: 3}\n"}),
        Input("a space choice that is a list", space("listed.yml"),
              files={"listed.yml": "jvm_extra_options: [[-Xss512k], [-Xss1m]]\n"}),
        Input("a space bound of infinity", space("inf.yml"), files={"inf.yml": "tomcat_threads_max: {low: 50, "
                                                                               "high: .inf}\n"}),
        Input("resume a tune that is not there", ["tune", "--resume", "{dir}/no-tune"]),
        Input("an inventory that is not there", ["--hosts", "/nonexistent/hosts.yml", "--duration", "1m"]),
        Input("an inventory without tuned", ["--hosts", "{dir}/hosts.yml", "--duration", "1m"],
              files={"hosts.yml": "all:\n  hosts:\n    default: {ansible_host: 127.0.0.2}\n"}),
    ]


def listing() -> dict[str, tuple[int, float]]:
    """Every file and folder on the host's root file system outside LEFT_OUT: path -> (size, mtime)."""
    prune = [a for p in LEFT_OUT for a in ("-path", p, "-o")][:-1]
    done = subprocess.run(["find", "/", "-xdev", "(", *prune, ")", "-prune", "-o", "-printf", "%p\t%s\t%T@\n"],
                          capture_output=True, text=True)
    found = {}
    for line in done.stdout.splitlines():
        path, size, mtime = line.rsplit("\t", 2)
        found[path] = (int(size), float(mtime))
    return found


def run_one(item: Input, folder: Path) -> dict:
    here = folder / item.name.replace(" ", "-").replace("/", "-")
    here.mkdir(parents=True, exist_ok=True)
    if item.service:        # a descriptor's paths stay in its folder: the test service's files are put there
        (here / "testapp" / "target").mkdir(parents=True, exist_ok=True)
        jar = TESTAPP / "target" / "lab-testapp.jar"
        try:
            os.link(jar, here / "testapp" / "target" / jar.name)
        except OSError:
            shutil.copy2(jar, here / "testapp" / "target" / jar.name)
        shutil.copytree(TESTAPP / "stubs", here / "testapp" / "stubs")
        shutil.copy2(TESTAPP / "testapp.jmx", here / "testapp" / "testapp.jmx")
    for name, text in item.files.items():
        target = here / name.replace("{dir}", str(here))
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text.replace("{dir}", str(here)))
    argv = [a.replace("{dir}", str(here)) for a in item.argv]
    command = argv if item.raw else [START, *argv]
    started = time.monotonic()
    proc = subprocess.Popen(command, cwd=paths.ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "LAB_PROVIDER": "containers", **item.env}, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=TIMEOUT_S)
        code = proc.returncode
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=120)
        code = f"not refused: stopped after {TIMEOUT_S} s"
    said = [line.strip() for line in (err or out).strip().splitlines() if line.strip()]
    first = next((i for i, line in enumerate(said) if "error" in line.lower() or "refus" in line.lower()
                  or line.startswith("start.sh")), len(said) - 1)
    message = " / ".join(said[first:first + 3]) if said else ""      # a heading line and what it names
    return {"name": item.name, "argv": argv, "exit": code, "said": message[:500],
            "seconds": round(time.monotonic() - started, 1),
            "planted": [p for p in item.watch if os.path.exists(p)],
            "secret_shown": "s3cret" in (out or "") + (err or "")}


def table(rows: list[dict], changed: dict) -> str:
    lines = ["| # | input | exit | what the lab said |", "| --- | --- | --- | --- |"]
    for i, row in enumerate(rows, 1):
        said = row["said"].replace("|", "\\|")
        flags = "".join([" **planted file made**" if row["planted"] else "",
                         " **password shown**" if row["secret_shown"] else ""])
        lines.append(f"| {i} | {row['name']} | {row['exit']} | {said}{flags} |")
    lines += ["", "Host files outside the lab's folders, before → after all inputs:", ""]
    for kind in ("created", "removed", "changed"):
        lines.append(f"- {kind}: " + (", ".join(f"`{p}`" for p in changed[kind]) or "none"))
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.inputs", description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", default="")
    parser.add_argument("--only", default="", help="these inputs only (names, comma-separated)")
    args = parser.parse_args(argv)
    chosen = [i for i in inputs() if not args.only or i.name in args.only.split(",")]
    folder = paths.RESULTS / record.new_run_id("bench-inputs" + (f"-{args.label}" if args.label else ""))
    folder.mkdir(parents=True)
    folder.chmod(0o755)
    before = listing()
    rows = []
    for item in chosen:
        rows.append(run_one(item, folder))
        print(f"{len(rows):2d} {item.name}: exit {rows[-1]['exit']}: {rows[-1]['said'][:150]}", flush=True)
    after = listing()
    changed = {"created": sorted(set(after) - set(before)), "removed": sorted(set(before) - set(after)),
               "changed": sorted(p for p in set(before) & set(after) if before[p] != after[p])}
    (folder / "inputs.json").write_text(json.dumps({"inputs": rows, "host_files": changed}, indent=1) + "\n")
    (folder / "inputs.md").write_text(table(rows, changed))
    print(f"\n{len(rows)} inputs; host files outside the lab's: {len(changed['created'])} created, "
          f"{len(changed['removed'])} removed, {len(changed['changed'])} changed\n{folder / 'inputs.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
