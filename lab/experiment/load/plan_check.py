"""A user's own JMeter plan (`--plan my.jmx`, or a service descriptor's load.plan), checked before any machine is
touched (issue 38): the lab runs it against each machine by JMeter properties, so the plan must take its target
and its size from them, never from values typed into it; and JMeter runs it on the lab's host, so the plan may hold
only plain HTTP load.

The plan is judged by what JMeter builds from it, not by its text (issue 85): JMeter's own loader reads it as the
lab's user (plan_tree.py) and every element it makes is judged by its real Java class — taken from a `class`
attribute or a qualified tag as well as from a plain one — against ALLOWED, with its properties as the loader decoded
them (character and entity references), enabled as JMeter takes it (a `TestElement.enabled` child property included).
Before the loader, the raw file is refused when it has a DTD (`<!DOCTYPE`, `<!ENTITY`: entities the check would
have to expand as the parser does) or is not UTF-8 text (what JMeter reads it as).

The properties the lab gives a user's plan (PLAN_PROPERTIES): `host`, `port`, `scheme` (the machine, through
HTTPD), `users`, `ramp_up_s`, `duration_s`, `connect_timeout_ms`, `response_timeout_ms`, read with `${__P(name)}`
or `${__P(name,default)}`. Refused, each named with the element's testname:
- an enabled HTTP sampler or any config element (HTTP Request Defaults, whatever its GUI: JMeter merges every
  config element's properties into the samplers) whose server, port or protocol is typed in rather than read
  from `host`, `port`, `scheme` (empty is fine: the HTTP Request Defaults then give it);
- a plan that never reads `host`, `users`, `ramp_up_s` or `duration_s` (it would load one machine, or ignore
  the lab's load options);
- no enabled HTTP sampler, or a file that is not a JMeter plan;
- a target that is not the lab's property itself: a server of more than `${__P(host)}` (`${__P(host)}.example`),
  a port or protocol of more than its property, a sampler path that is a full URL (`http://elsewhere/x`) or starts
  with a value made while the test runs (`${url}`, which a variable may make a full URL), a sampler
  of another protocol (TCP, JDBC, SMTP, …: the lab cannot point it at each machine), a proxy (HTTPSampler.proxyHost…),
  embedded resources (fetched from wherever the answer points);
- unless the user passes --allow-plan-code (JMeter still runs as the lab's user): an element of a class not in
  ALLOWED, among them those that run code (OS Process, JSR223, BeanShell, BSF, Java and JUnit samplers and every
  JSR223/BeanShell/BSF pre- and post-processor, assertion, timer and listener; an If Controller that evaluates its
  condition as JavaScript; a plan's own class path), that pull in other plans (Include and Module Controllers,
  whose Test Fragments may be disabled elements), that read or upload files outside the service's folder (CSV Data
  Set, the HTTP sampler's files) or write files (a listener with a filename); and a function that runs code, reads
  or writes the host's files or sets JMeter's properties (`__groovy`, `__javaScript`, `__BeanShell`, `__eval`,
  `__FileToString`, `__setProperty`, …; CODE_FUNCTIONS). `__jexl2`/`__jexl3` are taken where they only compute
  (arithmetic, comparisons, quoted text and `${…}` reads: the usual `${__jexl3(${__P(ramp_up_s)} +
  ${__P(duration_s)})}`), not where they call anything.
A disabled element is not judged (JMeter drops it, with all below it, before the test starts) unless the plan has a
Module or Include Controller (allowed with --allow-plan-code only), which may run it.
"""
from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from lab.errors import BadInput
from lab.experiment.load import plan_tree

PLAN_PROPERTIES = ("host", "port", "scheme", "users", "ramp_up_s", "duration_s", "connect_timeout_ms",
                   "response_timeout_ms")
REQUIRED = ("host", "users", "ramp_up_s", "duration_s")
# an HTTP element's target fields → the property each must read
TARGET_FIELDS = {"HTTPSampler.domain": "host", "HTTPSampler.port": "port", "HTTPSampler.protocol": "scheme"}
PROXY_FIELDS = ("HTTPSampler.proxyScheme", "HTTPSampler.proxyHost", "HTTPSampler.proxyPort", "HTTPSampler.proxyUser",
                "HTTPSampler.proxyPass")
J = "org.apache.jmeter."
HTTP = J + "protocol.http."
SAMPLER = HTTP + "sampler.HTTPSamplerProxy"
CONFIG = J + "config.ConfigTestElement"
# The classes a plan may hold without --allow-plan-code, and why each is safe to run on the lab's host: none runs a
# script or a class of the plan's, opens a file the check does not confine, or sends anywhere but the lab's target.
# (services/examples/*.jmx, services/testapp and request_list.py's plans use a subset of these.)
ALLOWED = {
    J + "testelement.TestPlan": "the plan itself (a class path of its own refused)",
    J + "threads.ThreadGroup": "users: how many, ramp, duration",
    J + "threads.SetupThreadGroup": "a thread group run before the others",
    J + "threads.PostThreadGroup": "a thread group run after the others",
    J + "threads.openmodel.OpenModelThreadGroup": "arrivals by a schedule of rates (the lab's own plan's open model)",
    SAMPLER: "HTTP to the lab's target alone (host, port, scheme read from the lab; no proxy, no embedded resources; "
             "files sent from the service's folder only)",
    CONFIG: "HTTP Request Defaults (the same target rules as a sampler)",
    HTTP + "control.HeaderManager": "headers sent", HTTP + "control.Header": "one header",
    HTTP + "control.CookieManager": "cookies kept per user", HTTP + "control.Cookie": "one cookie",
    HTTP + "control.CacheManager": "HTTP caching per user",
    J + "config.Arguments": "user defined variables, a sampler's parameters", J + "config.Argument": "one variable",
    HTTP + "util.HTTPArgument": "one parameter", HTTP + "util.HTTPFileArgs": "files a sampler sends (folder checked)",
    HTTP + "util.HTTPFileArg": "one file a sampler sends (in the service's folder)",
    J + "config.CSVDataSet": "rows of a data file in the service's folder",
    J + "control.LoopController": "repeats", J + "control.GenericController": "Simple Controller: groups",
    J + "control.TransactionController": "times its children as one",
    J + "control.RandomController": "one child at random",
    J + "control.RandomOrderController": "children in random order",
    J + "control.SwitchController": "one child by value",
    J + "control.OnceOnlyController": "once per user", J + "control.ThroughputController": "a share of iterations",
    J + "control.InterleaveControl": "one child per iteration in turn", J + "control.RunTime": "children for a time",
    J + "control.WhileController": "while a JMeter expression holds (its functions checked like any)",
    J + "control.IfController": "if a JMeter expression holds (the JavaScript mode refused)",
    J + "control.ForeachController": "over variables", J + "control.CriticalSectionController": "a lock by name",
    J + "timers.ConstantTimer": "a pause", J + "timers.UniformRandomTimer": "a random pause",
    J + "timers.GaussianRandomTimer": "a random pause", J + "timers.PoissonRandomTimer": "a random pause",
    J + "timers.ConstantThroughputTimer": "pauses to a rate", J + "timers.SyncTimer": "users released together",
    J + "timers.poissonarrivals.PreciseThroughputTimer": "arrivals to a rate",
    J + "assertions.ResponseAssertion": "patterns on the answer", J + "assertions.DurationAssertion": "a time limit",
    J + "assertions.SizeAssertion": "a size limit", J + "assertions.JSONPathAssertion": "a JSON path on the answer",
    J + "extractor.RegexExtractor": "a variable from a regular expression",
    J + "extractor.BoundaryExtractor": "a variable between two strings",
    J + "extractor.HtmlExtractor": "a variable from a CSS selector",
    J + "extractor.json.jsonpath.JSONPostProcessor": "a variable from a JSON path",
    J + "sampler.TestAction": "Flow Control Action: a pause or a stop",
    J + "reporters.ResultCollector": "a listener writing no file (the lab writes the results)",
    J + "samplers.SampleSaveConfiguration": "the columns a listener would write",
}
# elements that run a script, a class or a program inside JMeter (class names; JSR223*, BeanShell* and BSF* are
# matched by prefix: every sampler, pre/post-processor, assertion, timer and listener of those families)
CODE_ELEMENTS = ("SystemSampler", "JavaSampler", "JUnitSampler")
CODE_PREFIXES = ("JSR223", "BeanShell", "BSF")
INCLUDES = ("IncludeController", "ModuleController", "TestFragmentController")
# samplers of other protocols: their target is not HTTPD's, so the lab cannot point them at each machine
OTHER_PROTOCOLS = ("TCPSampler", "JDBCSampler", "SmtpSampler", "FTPSampler", "LDAPSampler", "LDAPExtSampler",
                   "JMSSampler", "PublisherSampler", "SubscriberSampler", "MailReaderSampler", "AjpSampler",
                   "AccessLogSampler", "BoltSampler", "MongoScriptSampler", "MailerResultCollector",
                   "BackendListener", "DNSCacheManager")
# functions that run code, read or write the host's files, or set JMeter's properties (another sampler's target)
CODE_FUNCTIONS = ("__groovy", "__javaScript", "__BeanShell", "__eval", "__evalVar", "__FileToString",
                  "__StringFromFile", "__CSVRead", "__StringToFile", "__XPath", "__setProperty", "__machineIP")
JEXL = ("__jexl2", "__jexl3")
FUNCTION_NAME = re.compile(r"\$\{\s*(__\w+)")      # a JMeter function a text calls: ${__name(…)} or ${__name}
ALLOW_CODE = "--allow-plan-code"
DTD = re.compile(r"<!\s*(DOCTYPE|ENTITY|ELEMENT|ATTLIST)", re.IGNORECASE)


class PlanError(BadInput):
    """A plan the lab cannot run against its machines; the message names the file, the element and why."""


@dataclass(frozen=True)
class PlanFacts:
    path: str
    samplers: tuple[str, ...]            # the enabled HTTP samplers' testnames (the report's labels)
    reads: tuple[str, ...]               # the lab's properties the plan reads


def _reads(text: str) -> set[str]:
    return set(re.findall(r"__P\(\s*([A-Za-z_][\w.]*)", text or ""))


def _whole_read(value: str, prop: str) -> bool:
    """value is exactly ${__P(prop)} or ${__P(prop,default)}: nothing beside it."""
    return re.fullmatch(rf"\$\{{__P\(\s*{prop}\s*(,[^()]*)?\)\}}", value) is not None


def _calls(text: str, name: str) -> list[str]:
    """The argument text of every ${name(…)} in text (parentheses balanced)."""
    found = []
    for start in (m.end() for m in re.finditer(rf"\$\{{\s*{re.escape(name)}\(", text)):
        depth, i = 1, start
        while i < len(text) and depth:
            depth += {"(": 1, ")": -1}.get(text[i], 0)
            i += 1
        found.append(text[start:i - 1])
    return found


def _jexl_calls_something(expression: str) -> bool:
    """A JEXL expression that does more than compute: with its ${…} reads and quoted text taken out, it calls a
    function or method, makes an object or reaches a member."""
    bare = re.sub(r"'[^']*'|\"[^\"]*\"", "''", expression)
    while "${" in bare:
        reduced = re.sub(r"\$\{[^{}]*\}", "0", bare)
        if reduced == bare:
            break
        bare = reduced
    return re.search(r"[A-Za-z_]\w*\s*[(.]|\bnew\b|[{}\[\]]|=~|!~", bare) is not None


def _raw(path: Path, where: str) -> bytes:
    """The plan's bytes; PlanError when it cannot be read, has a DTD or is not UTF-8 text (JMeter reads UTF-8)."""
    try:
        data = path.read_bytes()
    except OSError as e:
        raise PlanError(f"{where}: cannot be read ({e.strerror or e})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise PlanError(f"{where}: not UTF-8 text at byte {e.start} (JMeter reads a plan as UTF-8)") from None
    if "\x00" in text:
        raise PlanError(f"{where}: holds a NUL character: not a plan JMeter writes")
    dtd = DTD.search(text)
    if dtd:
        line = text.count("\n", 0, dtd.start()) + 1
        raise PlanError(f"{where}: line {line}: a DTD ({dtd.group(0)}…): its entities would change what the plan "
                        "says after the check reads it; JMeter never writes one, so the lab refuses it")
    return data


def _inside(value: str, plan_dir: Path, folder: Path) -> bool:
    """value, a file a plan names (relative to the plan, as JMeter takes it), lies inside folder once resolved (links
    followed); never inside the root or a folder directly under it (/tmp, /etc: a plan lying there has no folder of
    its own), nor where a value made while the test runs (${…}) says."""
    if not value.strip() or "${" in value or len(folder.resolve().parts) <= 2:
        return False
    return (plan_dir / os.path.expanduser(value.strip())).resolve().is_relative_to(folder.resolve())


def _what_needs_code(element: plan_tree.Element, plan_dir: Path, folder: Path) -> str | None:
    """Why this element needs --allow-plan-code (None: it is plain HTTP load), its name and class named."""
    short, said = element.short, f"{element.label} ({element.short})"
    if short in CODE_ELEMENTS or short.startswith(CODE_PREFIXES) or any(p in short for p in CODE_PREFIXES):
        return f"{said} runs code"
    if short == "TestFragmentController":
        return f"{said} is a Test Fragment, which runs only where a Module Controller pulls it in"
    if short in INCLUDES:
        return f"{said} pulls in another plan or a test fragment, which this check does not see"
    if element.cls not in ALLOWED:
        kind = "an element" if element.is_element else "an object"
        return (f"{said} is {kind} of class {element.cls}, not one of the plain HTTP load elements the lab runs "
                "(ALLOWED in lab/experiment/load/plan_check.py)")
    props = element.props
    if element.cls.endswith(".TestPlan") and props.get("TestPlan.user_define_classpath", "").strip():
        return f"{said} adds a class path of its own ({props['TestPlan.user_define_classpath']!r}): code it loads"
    if element.cls.endswith(".IfController") and props.get("IfController.useExpression", "false") != "true":
        if props.get("IfController.condition", "").strip():
            return f"{said} evaluates its condition as JavaScript (tick 'Interpret Condition as Variable Expression')"
    if element.cls.endswith(".CSVDataSet") and not _inside(props.get("filename", ""), plan_dir, folder):
        return f"{said} reads the file {props.get('filename', '')!r}, which is not in the service's folder {folder}"
    if element.cls.endswith(".HTTPFileArg") and not _inside(props.get("File.path", ""), plan_dir, folder):
        return f"{said} sends the file {props.get('File.path', '')!r}, which is not in the service's folder {folder}"
    if element.cls.endswith(".ResultCollector") and props.get("filename", "").strip():
        return f"{said} writes results to the file {props['filename']!r} (the lab writes the results)"
    return None


def _functions(values: list[str]) -> str | None:
    """The first function in the plan's values that runs code or reaches files or properties, named; None if none."""
    called = {name for value in values for name in FUNCTION_NAME.findall(value)}
    for name in CODE_FUNCTIONS:
        if name in called:
            return f"it calls JMeter's {name}, which runs code or reaches the host's files or properties"
    for name in JEXL:
        for expression in (e for value in values for e in _calls(value, name)):
            if _jexl_calls_something(expression):
                return f"{name}({expression[:60]}) calls something (a JEXL expression that only computes is taken)"
    return None


def _target(element: plan_tree.Element, where: str) -> None:
    """PlanError when an HTTP element sends anywhere but the lab's target (these hold with --allow-plan-code too)."""
    name, props = element.label, element.props
    if element.short in OTHER_PROTOCOLS:
        raise PlanError(f"{where}: {name} ({element.short}) sends to a target of its own: the lab loads each machine "
                        "through HTTPD, with HTTP samplers (HTTPSamplerProxy) only")
    if element.cls != CONFIG and not element.short.startswith("HTTPSampler"):     # the older HTTPSampler too
        return
    for field, wanted in TARGET_FIELDS.items():
        value = props.get(field, "").strip()
        if value and not _whole_read(value, wanted):
            raise PlanError(f"{where}: {name}: {field.split('.')[1]} is {value!r}, "
                            + ("typed into the plan" if wanted not in _reads(value) else "more than the lab's "
                               "property") + f"; read it from the lab with ${{__P({wanted})}} alone so that each "
                            "machine gets its own load")
    path = props.get("HTTPSampler.path", "")
    if re.match(r"\s*([A-Za-z][\w+.-]*:)?//", path):
        raise PlanError(f"{where}: {name}: path {path!r} is a full URL, which JMeter sends where it names, "
                        "not to the machine: give the path alone (/api/…)")
    if path.strip().startswith("${"):
        raise PlanError(f"{where}: {name}: path {path!r} starts with a value made while the test runs, which may be a "
                        "full URL (JMeter then sends where it names, not to the machine): start it with the path "
                        "itself (/api/${…})")
    proxy = [f for f in PROXY_FIELDS if props.get(f, "").strip()]
    if proxy:
        raise PlanError(f"{where}: {name}: sets a proxy ({proxy[0]} = {props[proxy[0]]!r}): JMeter would send "
                        "through it, not to the machine")
    if props.get("HTTPSampler.image_parser", "false").strip() == "true":
        raise PlanError(f"{where}: {name}: retrieves embedded resources, which JMeter fetches from wherever the "
                        "answer points: untick 'Retrieve All Embedded Resources'")


def _family(short: str) -> str:
    """What an element of that class name does, for a message about it."""
    if short in CODE_ELEMENTS or any(p in short for p in CODE_PREFIXES):
        return "runs code"
    if short in OTHER_PROTOCOLS:
        return "sends to a target of its own"
    return "is not one of the plain HTTP load elements the lab runs"


def _unloadable(root: ET.Element, refused: str, where: str) -> PlanError:
    """The loader's refusal named by the element of the plan it is about: a class JMeter cannot resolve (not in the
    lab's JMeter, jmeter/pom.xml: core, components, functions and http) names the element and what it does."""
    found = re.search(r"CannotResolveClassException: ([\w.$]+)", refused)
    if not found:
        return PlanError(f"{where}: JMeter's loader refuses it: {refused}")
    cls = found.group(1)
    short = cls.rsplit(".", 1)[-1]
    named = next((e for e in root.iter() if short in {e.tag.rsplit(".", 1)[-1],
                                                       (e.get("class") or "").rsplit(".", 1)[-1]}), None)
    label = repr(named.get("testname")) if named is not None and named.get("testname") else "an element"
    return PlanError(f"{where}: {label} ({short}) {_family(short)}, and the lab's JMeter has no class {cls} "
                     "(jmeter/pom.xml: core, components, functions, http): JMeter could not load the plan")


def _refuse_code(where: str, problem: str) -> PlanError:
    return PlanError(f"{where}: {problem}; JMeter runs it on the lab's host, so the lab refuses it unless you pass "
                     f"{ALLOW_CODE} (the plan is yours and you have read it)")


def check(path: str | Path, allow_code: bool = False, folder: str | Path | None = None) -> PlanFacts:
    """The plan's facts; PlanError naming the first problem. allow_code: the user's --allow-plan-code (what needs
    code is then taken; the targets are checked all the same). folder: the service's folder, which the files the
    plan reads or sends must lie in (the plan's own folder by default). plan_tree.TreeError (a LabError) when
    JMeter's loader cannot be run: the plan is then not taken."""
    path = Path(path)
    where = str(path)
    data = _raw(path, where)
    try:
        root = ET.fromstring(data)
    except ET.ParseError as e:
        raise PlanError(f"{where}: not XML ({e})") from None
    if root.tag != "jmeterTestPlan":
        raise PlanError(f"{where}: not a JMeter plan (its root is <{root.tag}>, not <jmeterTestPlan>)")
    try:
        elements = plan_tree.load(data)
    except plan_tree.LoaderRefused as e:
        raise _unloadable(root, str(e), where) from None
    # a Module or Include Controller may run a disabled element (a Test Fragment): then every element is judged
    replaces = any(e.short in INCLUDES[:2] and e.enabled for e in elements)
    judged = [e for e in elements if e.enabled or replaces]
    values = [v for e in judged for v in e.props.values()]
    for element in judged:          # first: these hold with --allow-plan-code too
        _target(element, where)
    if not allow_code:
        folder = Path(folder) if folder is not None else path.parent
        pulling = [e for e in judged if e.short in INCLUDES[:2]]
        for element in pulling + judged:
            problem = _what_needs_code(element, path.parent, folder)
            if problem:
                raise _refuse_code(where, problem)
        problem = _functions(values)
        if problem:
            raise _refuse_code(where, problem)
    samplers = [e.name or e.short for e in judged if e.cls == SAMPLER and e.in_tree and e.enabled]
    if not samplers:
        raise PlanError(f"{where}: no enabled HTTP sampler (HTTPSamplerProxy): nothing to send")
    reads = _reads("\n".join(values))
    missing = [p for p in REQUIRED if p not in reads]
    if missing:
        raise PlanError(f"{where}: never reads the lab's propert{'y' if len(missing) == 1 else 'ies'} "
                        f"{', '.join(missing)} (with ${{__P({missing[0]})}}): the lab could not point it at each "
                        "machine or size its load")
    return PlanFacts(where, tuple(samplers), tuple(p for p in PLAN_PROPERTIES if p in reads))
