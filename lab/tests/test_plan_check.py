"""A user's own JMeter plan checked before any machine is touched (lab/experiment/load/plan_check.py)."""
from __future__ import annotations

import pytest
from service_parts import SAMPLER, plan

from lab.experiment.load import plan_check


def test_a_plan_that_reads_the_lab_properties_passes_with_its_samplers(tmp_path):
    facts = plan_check.check(plan(tmp_path, [SAMPLER.format(name="GET owners", on="true", domain="", port=""),
                                             SAMPLER.format(name="GET vets", on="true", domain="${__P(host)}",
                                                            port="${__P(port)}")]))
    assert facts.samplers == ("GET owners", "GET vets")
    assert facts.reads == ("host", "port", "scheme", "users", "ramp_up_s", "duration_s")


def test_a_hard_coded_host_is_refused_naming_the_sampler(tmp_path):
    bad = SAMPLER.format(name="GET owners", on="true", domain="petclinic.example.com", port="")
    with pytest.raises(plan_check.PlanError, match=r"'GET owners': domain is 'petclinic.example.com', typed into "
                                                   r"the plan; read it from the lab with \$\{__P\(host\)\}"):
        plan_check.check(plan(tmp_path, [bad]))


def test_a_hard_coded_port_or_defaults_host_is_refused_too(tmp_path):
    with pytest.raises(plan_check.PlanError, match="'GET owners': port is '9966'"):
        plan_check.check(plan(tmp_path, [SAMPLER.format(name="GET owners", on="true", domain="", port="9966")]))
    with pytest.raises(plan_check.PlanError, match="'HTTP Request Defaults': domain is '10.0.0.5'"):
        plan_check.check(plan(tmp_path, defaults_domain="10.0.0.5"))


def test_a_disabled_sampler_or_group_may_keep_its_host(tmp_path):
    off = SAMPLER.format(name="old", on="false", domain="legacy.example.com", port="")
    on = SAMPLER.format(name="GET owners", on="true", domain="", port="")
    assert plan_check.check(plan(tmp_path, [off, on])).samplers == ("GET owners",)


def test_a_plan_that_ignores_the_load_options_is_refused(tmp_path):
    with pytest.raises(plan_check.PlanError, match=r"never reads the lab's property users \(with \$\{__P\(users\)\}\)"):
        plan_check.check(plan(tmp_path, users="50"))


@pytest.mark.parametrize(("text", "said"), [
    ("not xml at all <", "not XML"),
    ("<project/>", "not a JMeter plan (its root is <project>"),
    ("<jmeterTestPlan><hashTree/></jmeterTestPlan>", "no enabled HTTP sampler"),
])
def test_what_is_not_a_runnable_plan_is_named(tmp_path, text, said):
    path = tmp_path / "x.jmx"
    path.write_text(text)
    with pytest.raises(plan_check.PlanError) as refused:
        plan_check.check(path)
    assert said in str(refused.value)
    with pytest.raises(plan_check.PlanError, match="cannot be read"):
        plan_check.check(tmp_path / "missing.jmx")


# -- issue 53: a plan's code and its targets -----------------------------------------------------------------------

OK = SAMPLER.format(name="GET owners", on="true", domain="", port="")
JSR223 = ('<JSR223PreProcessor guiclass="TestBeanGUI" testclass="JSR223PreProcessor" testname="setup" enabled="{on}">'
          '<stringProp name="script">"id".execute()</stringProp></JSR223PreProcessor><hashTree/>')
OS_PROCESS = ('<SystemSampler guiclass="SystemSamplerGui" testclass="SystemSampler" testname="shell" enabled="true">'
              '<stringProp name="SystemSampler.command">id</stringProp></SystemSampler><hashTree/>')
TCP = ('<TCPSampler guiclass="TCPSamplerGui" testclass="TCPSampler" testname="raw" enabled="true">'
       '<stringProp name="TCPSampler.server">10.0.0.9</stringProp></TCPSampler><hashTree/>')
POST_PROCESSOR = ('<BeanShellPostProcessor guiclass="TestBeanGUI" testclass="BeanShellPostProcessor" '
                  'testname="after" enabled="true"/><hashTree/>')


def with_path(path: str) -> str:
    return OK.replace("/petclinic/api/owners", path)


@pytest.mark.parametrize(("samplers", "said"), [
    ([OK, JSR223.format(on="true")], "'setup' (JSR223PreProcessor) runs code"),
    ([OK, POST_PROCESSOR], "'after' (BeanShellPostProcessor) runs code"),
    ([with_path("/x/${__groovy(System.exit(0))}")], "calls JMeter's __groovy"),
    ([with_path("/x/${__FileToString(/etc/shadow)}")], "calls JMeter's __FileToString"),
    ([with_path("/x/${__setProperty(host,10.0.0.1)}")], "calls JMeter's __setProperty"),
    ([with_path('/x/${__jexl3("".getClass().forName("java.lang.Runtime"))}')], "__jexl3(\"\".getClass()"),
])
def test_a_plan_that_runs_code_in_jmeter_is_refused_unless_allowed(tmp_path, samplers, said):
    """JMeter runs on the lab's host: a plan's code runs there (before: every one of these passed)."""
    path = plan(tmp_path, samplers)
    with pytest.raises(plan_check.PlanError) as refused:
        plan_check.check(path)
    assert said in str(refused.value) and "--allow-plan-code" in str(refused.value)
    assert plan_check.check(path, allow_code=True).samplers == ("GET owners",)


@pytest.mark.parametrize("sampler", [
    OS_PROCESS,
    # JMeter makes an element of its tag's class: without the testclass attribute it passed (bench/inputs.py)
    OS_PROCESS.replace(' testclass="SystemSampler"', ""),
])
def test_a_code_element_the_labs_jmeter_cannot_load_is_refused_even_when_allowed(tmp_path, sampler):
    """The lab's JMeter (jmeter/pom.xml) has no OS Process sampler: its loader refuses the plan, named by the
    element."""
    path = plan(tmp_path, [sampler, OK])
    for allow_code in (False, True):
        with pytest.raises(plan_check.PlanError, match=r"'shell' \(SystemSampler\) runs code, and the lab's JMeter "
                           r"has no class org\.apache\.jmeter\.protocol\.system\.SystemSampler"):
            plan_check.check(path, allow_code=allow_code)


def test_a_disabled_script_and_a_jexl_that_only_computes_are_taken(tmp_path):
    computing = with_path("/x/${__jexl3(${__P(ramp_up_s,10)} + ${__P(duration_s,60)} > 5 ? 'a(b)' : 'c')}")
    assert plan_check.check(plan(tmp_path, [JSR223.format(on="false"), computing])).samplers == ("GET owners",)


@pytest.mark.parametrize(("samplers", "defaults", "said"), [
    ([SAMPLER.format(name="GET owners", on="true", domain="${__P(host)}.example", port="")], "${__P(host)}",
     "domain is '${__P(host)}.example', more than the lab's property"),
    ([SAMPLER.format(name="GET owners", on="true", domain="", port="${__P(port)}0")], "${__P(host)}",
     "port is '${__P(port)}0', more than the lab's property"),
    ([OK], "${__P(host)}:8080", "'HTTP Request Defaults': domain is '${__P(host)}:8080'"),
    ([with_path("http://elsewhere:8080/api")], "${__P(host)}", "path 'http://elsewhere:8080/api' is a full URL"),
    ([with_path("//elsewhere/api")], "${__P(host)}", "is a full URL"),
    ([OK, TCP], "${__P(host)}", "'raw' (TCPSampler) sends to a target of its own, and the lab's JMeter has no class"),
])
def test_a_target_that_is_not_the_labs_host_alone_is_refused(tmp_path, samplers, defaults, said):
    """Before, a value that read the property anywhere passed (both machines could be sent to one target)."""
    with pytest.raises(plan_check.PlanError) as refused:
        plan_check.check(plan(tmp_path, samplers, defaults_domain=defaults), allow_code=True)
    assert said in str(refused.value)


def test_the_labs_example_plans_pass():
    from lab import paths
    for path in sorted((paths.ROOT / "services").rglob("*.jmx")):
        assert plan_check.check(path).samplers, path


def test_allow_plan_code_goes_with_a_plan_of_the_users(tmp_path):
    from lab.cli import arguments
    from lab.experiment import options
    alone = options.contradictions(arguments.parser().parse_args(["--allow-plan-code"]))
    assert alone and "--allow-plan-code takes a plan of yours" in alone[0]
    assert options.contradictions(arguments.parser().parse_args(
        ["--allow-plan-code", "--service", "shop", "--plan", str(tmp_path / "p.jmx")])) == []
