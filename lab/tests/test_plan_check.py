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
