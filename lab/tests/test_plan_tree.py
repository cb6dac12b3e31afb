"""A user's plan judged by what JMeter's own loader builds from it (plan_tree.py, plan_check.py): hostile plans whose
text looked harmless to a check that read it with ElementTree, each refused with a message naming the problem."""
from __future__ import annotations

import os
import re

import pytest
from service_parts import SAMPLER, plan

from lab import confine, unprivileged
from lab.errors import LabError
from lab.experiment.load import jmeter, plan_check, plan_tree

OK = SAMPLER.format(name="GET owners", on="true", domain="", port="")
SCRIPT = '<stringProp name="script">"id".execute()</stringProp>'


def element(tag: str, name: str, body: str = "", gui: str = "TestBeanGUI", attrs: str = "") -> str:
    return f'<{tag} guiclass="{gui}" testname="{name}" enabled="true"{attrs}>{body}</{tag}><hashTree/>'


def sampler_with(extra: str, name: str = "GET owners") -> str:
    """OK with extra properties inside it."""
    return SAMPLER.format(name=name, on="true", domain="", port="").replace("</HTTPSamplerProxy>",
                                                                           f"{extra}</HTTPSamplerProxy>")


FILES = ('<elementProp name="HTTPsampler.Files" elementType="HTTPFileArgs"><collectionProp name="HTTPFileArgs.files">'
         '<elementProp name="{path}" elementType="HTTPFileArg"><stringProp name="File.path">{path}</stringProp>'
         '<stringProp name="File.paramname">f</stringProp><stringProp name="File.mimetype">text/plain</stringProp>'
         '</elementProp></collectionProp></elementProp>')
CSV = ('<stringProp name="filename">{path}</stringProp><stringProp name="variableNames">a,b</stringProp>'
       '<stringProp name="delimiter">,</stringProp><boolProp name="recycle">true</boolProp>')
WRITER = ('<boolProp name="ResultCollector.error_logging">false</boolProp><objProp><name>saveConfig</name>'
          '<value class="SampleSaveConfiguration"><time>true</time></value></objProp>'
          '<stringProp name="filename">{path}</stringProp>')
FRAGMENT = ('<TestFragmentController guiclass="TestFragmentControllerGui" testclass="TestFragmentController" '
            'testname="hidden" enabled="false"/><hashTree>'
            + element("JSR223PreProcessor", "in the fragment", SCRIPT) + '</hashTree>')
MODULE = ('<ModuleController guiclass="ModuleControllerGui" testclass="ModuleController" testname="run it" '
          'enabled="true"><collectionProp name="ModuleController.node_path"><stringProp name="1">Test Plan'
          '</stringProp><stringProp name="2">petclinic</stringProp><stringProp name="3">hidden</stringProp>'
          '</collectionProp></ModuleController><hashTree/>')


def with_top(path, text: str):
    """The plan at path with text put before its thread group (a sibling of it, under the TestPlan)."""
    body = path.read_text()
    path.write_text(body.replace("<ThreadGroup ", text + "<ThreadGroup ", 1))
    return path


# (what the plan holds inside its thread group, what the refusal says). Each passed the text check before.
HOSTILE = {
    "class attribute: a JSR223 pre-processor written as an HTTP sampler": (
        [OK, element("HTTPSamplerProxy", "looks like HTTP", SCRIPT, gui="HttpTestSampleGui",
                     attrs=' class="org.apache.jmeter.modifiers.JSR223PreProcessor" testclass="HTTPSamplerProxy"')],
        "'looks like HTTP' (JSR223PreProcessor) runs code"),
    "fully qualified tag: a JSR223 post-processor whose testclass says timer": (
        [OK, element("org.apache.jmeter.extractor.JSR223PostProcessor", "pause", SCRIPT,
                     attrs=' testclass="ConstantTimer"')],
        "'pause' (JSR223PostProcessor) runs code"),
    "enabled='false' undone by a TestElement.enabled child property": (
        [OK, element("JSR223PreProcessor", "off", '<boolProp name="TestElement.enabled">true</boolProp>' + SCRIPT)
         .replace('enabled="true"', 'enabled="false"', 1)],
        "'off' (JSR223PreProcessor) runs code"),
    "character references in the class attribute hide a JSR223 element": (
        [OK, element("HTTPSamplerProxy", "refs", SCRIPT, gui="HttpTestSampleGui",
                     attrs=' class="&#x6f;rg.apache.jmeter.extractor.&#74;SR223PostProcessor"')],
        "'refs' (JSR223PostProcessor) runs code"),
    "__FileToString with its brace and first letter as character references": (
        [sampler_with('<stringProp name="HTTPSampler.path">/x/$&#123;__&#x46;ileToString(/etc/shadow)}</stringProp>')
         .replace('<stringProp name="HTTPSampler.path">/petclinic/api/owners</stringProp>', "")],
        "it calls JMeter's __FileToString"),
    # JMeter trims the name inside ${…}: a pattern that wanted __ right after the brace missed it
    "__FileToString after a newline inside the braces": (
        [sampler_with('<stringProp name="HTTPSampler.path">/x/${\n  __FileToString(/etc/shadow)}</stringProp>')
         .replace('<stringProp name="HTTPSampler.path">/petclinic/api/owners</stringProp>', "")],
        "it calls JMeter's __FileToString"),
    "an Include Controller pulls in another plan": (
        [OK, element("IncludeController", "more", '<stringProp name="IncludeController.includepath">/tmp/other.jmx'
                     '</stringProp>', gui="IncludeControllerGui")],
        "'more' (IncludeController) pulls in another plan"),
    "a file uploaded from outside the service's folder": (
        [sampler_with(FILES.format(path="/etc/shadow"))],
        "sends the file '/etc/shadow', which is not in the service's folder"),
    "a relative upload that climbs out of the folder": (
        [sampler_with(FILES.format(path="../../../etc/passwd"))],
        "sends the file '../../../etc/passwd', which is not in the service's folder"),
    "a CSV Data Set reading /etc/shadow": (
        [OK, element("CSVDataSet", "users file", CSV.format(path="/etc/shadow"))],
        "'users file' (CSVDataSet) reads the file '/etc/shadow', which is not in the service's folder"),
    "a Simple Data Writer writing a file of the host": (
        [OK, element("ResultCollector", "log", WRITER.format(path="/root/.bashrc"), gui="SimpleDataWriter")],
        "'log' (ResultCollector) writes results to the file '/root/.bashrc'"),
    "an If Controller whose condition is JavaScript": (
        [OK, element("IfController", "when", '<stringProp name="IfController.condition">java.lang.Runtime'
                     '.getRuntime().exec("id") != null</stringProp><boolProp name="IfController.useExpression">false'
                     '</boolProp>', gui="IfControllerPanel")],
        "'when' (IfController) evaluates its condition as JavaScript"),
    "a Debug Sampler, not on the allowlist": (
        [OK, element("DebugSampler", "debug", gui="TestBeanGUI")],
        "'debug' (DebugSampler) is an element of class org.apache.jmeter.sampler.DebugSampler, not one of the plain"),
}


@pytest.mark.parametrize("case", list(HOSTILE))
def test_a_hostile_plan_is_refused_by_what_jmeter_builds(tmp_path, case):
    samplers, said = HOSTILE[case]
    with pytest.raises(plan_check.PlanError) as refused:
        plan_check.check(plan(tmp_path, samplers))
    assert said in str(refused.value)
    assert "--allow-plan-code" in str(refused.value)


@pytest.mark.parametrize(("top", "said"), [
    # a Module Controller runs a disabled Test Fragment's elements
    (FRAGMENT, "'run it' (ModuleController) pulls in another plan or a test fragment"),
    ('<TestPlan guiclass="TestPlanGui" testclass="TestPlan" testname="again" enabled="true"><stringProp '
     'name="TestPlan.user_define_classpath">/tmp/evil.jar</stringProp></TestPlan><hashTree/>',
     "'again' (TestPlan) adds a class path of its own ('/tmp/evil.jar')"),
])
def test_a_plan_that_pulls_in_code_from_elsewhere_is_refused(tmp_path, top, said):
    path = with_top(plan(tmp_path, [OK, MODULE] if top is FRAGMENT else [OK]), top)
    with pytest.raises(plan_check.PlanError) as refused:
        plan_check.check(path)
    assert said in str(refused.value)


@pytest.mark.parametrize(("samplers", "said"), [
    ([sampler_with('<stringProp name="HTTPSampler.proxyHost">10.9.9.9</stringProp>'
                   '<stringProp name="HTTPSampler.proxyPort">3128</stringProp>')],
     "'GET owners': sets a proxy (HTTPSampler.proxyHost = '10.9.9.9')"),
    ([sampler_with('<boolProp name="HTTPSampler.image_parser">true</boolProp>')],
     "'GET owners': retrieves embedded resources"),
    # a TCP sampler under an HTTP sampler's tag and testclass: the lab's JMeter has no TCP sampler at all
    ([OK, element("HTTPSamplerProxy", "raw", gui="HttpTestSampleGui",
                  attrs=' class="org.apache.jmeter.protocol.tcp.sampler.TCPSampler" testclass="HTTPSamplerProxy"')],
     "'raw' (TCPSampler) sends to a target of its own"),
    # an AJP sampler (in JMeter's HTTP jar) under an HTTP sampler's testclass
    ([OK, element("HTTPSamplerProxy", "ajp", gui="HttpTestSampleGui",
                  attrs=' class="org.apache.jmeter.protocol.http.sampler.AjpSampler" testclass="HTTPSamplerProxy"')],
     "'ajp' (AjpSampler) sends to a target of its own"),
    ([OK, element("BackendListener", "influx", gui="BackendListenerGui")],
     "'influx' (BackendListener) sends to a target of its own"),
    # a path made of a variable the plan sets to a full URL: JMeter sends where the URL names
    ([sampler_with('<stringProp name="HTTPSampler.path">${target}</stringProp>').replace(
        '<stringProp name="HTTPSampler.path">/petclinic/api/owners</stringProp>', ""),
      element("Arguments", "vars", '<collectionProp name="Arguments.arguments"><elementProp name="target" '
              'elementType="Argument"><stringProp name="Argument.name">target</stringProp><stringProp '
              'name="Argument.value">http://10.0.0.9:8080/x</stringProp></elementProp></collectionProp>',
              gui="ArgumentsPanel")],
     "'GET owners': path '${target}' starts with a value made while the test runs"),
    # JMeter merges every config element's HTTP fields into the samplers, whatever the GUI it was saved from
    ([OK, element("ConfigTestElement", "sneaky", '<stringProp name="HTTPSampler.domain">10.0.0.5</stringProp>',
                  gui="SimpleConfigGui")],
     "'sneaky': domain is '10.0.0.5', typed into the plan"),
])
def test_a_target_elsewhere_is_refused_even_with_allow_plan_code(tmp_path, samplers, said):
    path = plan(tmp_path, samplers)
    for allow_code in (False, True):
        with pytest.raises(plan_check.PlanError) as refused:
            plan_check.check(path, allow_code=allow_code)
        assert said in str(refused.value)


def test_a_dtd_is_refused_before_any_parser_reads_it(tmp_path):
    """An internal entity spelled a code function where no text check could see it."""
    path = plan(tmp_path, [sampler_with('<stringProp name="HTTPSampler.path">/x/${&f;(/etc/shadow)}</stringProp>')
                           .replace('<stringProp name="HTTPSampler.path">/petclinic/api/owners</stringProp>', "")])
    text = path.read_text().replace("?>\n", '?>\n<!DOCTYPE jmeterTestPlan [<!ENTITY f "__FileToString">]>\n', 1)
    path.write_text(text)
    for allow_code in (False, True):
        with pytest.raises(plan_check.PlanError, match=r"line 2: a DTD \(<!DOCTYPE…\)"):
            plan_check.check(path, allow_code=allow_code)


def test_what_names_no_file_outside_and_runs_no_code_is_taken(tmp_path):
    """Files in the service's folder, a listener without a file, an If Controller on a JMeter expression: plain load."""
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "ids.csv").write_text("1,2\n")
    (tmp_path / "body.json").write_text("{}")
    samplers = [sampler_with(FILES.format(path="body.json")),
                element("CSVDataSet", "ids", CSV.format(path="data/ids.csv")),
                element("ResultCollector", "view", WRITER.format(path=""), gui="ViewResultsFullVisualizer"),
                element("IfController", "when", '<stringProp name="IfController.condition">${__jexl3(1 &lt; 2)}'
                        '</stringProp><boolProp name="IfController.useExpression">true</boolProp>',
                        gui="IfControllerPanel")]
    assert plan_check.check(plan(tmp_path, samplers), folder=tmp_path).samplers == ("GET owners",)
    # the same plan from a service whose folder is elsewhere: its files are outside it
    with pytest.raises(plan_check.PlanError, match="not in the service's folder"):
        plan_check.check(tmp_path / "my.jmx", folder=tmp_path / "data")


def test_a_plan_lying_directly_under_the_root_has_no_folder_for_its_files(tmp_path):
    """--plan /tmp/x.jmx: its folder would be /tmp, every other user's files in it."""
    samplers = [element("CSVDataSet", "ids", CSV.format(path="ids.csv"))]
    with pytest.raises(plan_check.PlanError, match="'ids.csv', which is not in the service's folder /tmp"):
        plan_check.check(plan(tmp_path, [OK, *samplers]), folder="/tmp")


def test_allow_plan_code_takes_what_jmeter_can_load(tmp_path):
    samplers = [OK, element("IncludeController", "more", gui="IncludeControllerGui"),
                element("CSVDataSet", "users file", CSV.format(path="/etc/shadow"))]
    assert plan_check.check(plan(tmp_path, samplers), allow_code=True).samplers == ("GET owners",)


# -- how the loader runs ---------------------------------------------------------------------------------------------

def test_the_loader_runs_as_the_labs_user_with_a_bare_environment(monkeypatch):
    monkeypatch.setenv("LAB_DB_PASSWORD", "secret")
    home = jmeter.ensure_jmeter()
    argv, env = plan_tree._command(home, plan_tree.ensure_inspector(home))
    assert "LAB_DB_PASSWORD" not in env and set(env) <= {*plan_tree.KEPT_ENVIRONMENT, "HOME", "USER", "LOGNAME"}
    assert not any("secret" in arg for arg in argv)
    account = unprivileged.ensure()
    if account is None:
        assert argv[0] == "java"
    else:
        assert "setpriv" in argv and f"--reuid={account.uid}" in argv and "--no-new-privs" in argv
        assert argv[argv.index("--netns") + 1] == str(confine.sandbox())        # loopback only
        assert env["USER"] == unprivileged.NAME


def test_without_jmeter_the_check_fails_closed(tmp_path, monkeypatch):
    def no_maven(**kw):
        raise jmeter.LoadError("Maven Central cannot be reached")
    monkeypatch.setattr(jmeter, "ensure_jmeter", no_maven)
    path = plan(tmp_path, [SAMPLER.format(name="fresh " + os.urandom(4).hex(), on="true", domain="", port="")])
    with pytest.raises(plan_tree.TreeError, match="JMeter's own loader, and JMeter could not be assembled: Maven "
                                                  "Central cannot be reached") as failed:
        plan_check.check(path)
    assert isinstance(failed.value, LabError) and not isinstance(failed.value, plan_check.PlanError)


def test_without_javac_the_check_fails_closed(monkeypatch):
    monkeypatch.setattr(plan_tree, "BUILD", plan_tree.BUILD.with_name("inspect-none"))
    monkeypatch.setattr(plan_tree.shutil, "which", lambda name: None)
    with pytest.raises(plan_tree.TreeError, match=re.escape("no javac on the PATH")):
        plan_tree.ensure_inspector(jmeter.ensure_jmeter())


def test_output_the_check_cannot_read_fails_it(monkeypatch):
    import subprocess
    monkeypatch.setattr(plan_tree, "_run", lambda home, classes, data: subprocess.CompletedProcess(
        [], 0, b'{"id":0,"parent":-1}\nnot json\n', b""))
    with pytest.raises(plan_tree.TreeError, match="printed what the check cannot read"):
        plan_tree.load(b"<jmeterTestPlan>" + os.urandom(8).hex().encode() + b"</jmeterTestPlan>")
