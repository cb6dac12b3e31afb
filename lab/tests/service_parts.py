"""What the tests of a service's parts build: Spring Boot jars shaped like spring-boot-maven-plugin's, and JMeter
plans (test_jarinfo, test_plan_check, test_service)."""
from __future__ import annotations

import zipfile

BOOT2 = {"Main-Class": "org.springframework.boot.loader.JarLauncher", "Start-Class": "shop.App",
         "Spring-Boot-Version": "2.7.3", "Spring-Boot-Classes": "BOOT-INF/classes/"}
BOOT32 = {**BOOT2, "Main-Class": "org.springframework.boot.loader.launch.JarLauncher", "Spring-Boot-Version": "3.5.7"}


def boot_jar(path, manifest=BOOT2, libs=("spring-boot-2.7.3.jar", "tomcat-embed-core-9.0.65.jar"),
             major=61, start="shop/App.class", compressed=False):
    """A jar shaped like spring-boot-maven-plugin's: manifest (wrapped at 72 bytes), Start-Class, BOOT-INF/lib."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED if compressed else zipfile.ZIP_STORED) as jar:
        if manifest is not None:
            lines = "".join(f"{k}: {v}\r\n" for k, v in {"Manifest-Version": "1.0", **manifest}.items())
            wrapped = "".join(line[:72] + "\r\n " + line[72:] if len(line) > 74 else line
                              for line in lines.splitlines(keepends=True))
            jar.writestr("META-INF/MANIFEST.MF", wrapped)
        if start:
            jar.writestr(f"BOOT-INF/classes/{start}", b"\xca\xfe\xba\xbe\x00\x00" + major.to_bytes(2, "big"))
        for lib in libs:
            jar.writestr(f"BOOT-INF/lib/{lib}", b"")
    return path


SAMPLER = """<HTTPSamplerProxy guiclass="HttpTestSampleGui" testclass="HTTPSamplerProxy" testname="{name}"
  enabled="{on}">
  <stringProp name="HTTPSampler.domain">{domain}</stringProp>
  <stringProp name="HTTPSampler.port">{port}</stringProp>
  <stringProp name="HTTPSampler.protocol"></stringProp>
  <stringProp name="HTTPSampler.path">/petclinic/api/owners</stringProp>
</HTTPSamplerProxy>
<hashTree/>"""
DEFAULTS = """<ConfigTestElement guiclass="HttpDefaultsGui" testclass="ConfigTestElement"
  testname="HTTP Request Defaults" enabled="true">
  <stringProp name="HTTPSampler.domain">{domain}</stringProp>
  <stringProp name="HTTPSampler.port">${{__P(port,80)}}</stringProp>
  <stringProp name="HTTPSampler.protocol">${{__P(scheme,http)}}</stringProp>
</ConfigTestElement>
<hashTree/>"""
GROUP = """<ThreadGroup guiclass="ThreadGroupGui" testclass="ThreadGroup" testname="users" enabled="{on}">
  <stringProp name="ThreadGroup.num_threads">{users}</stringProp>
  <stringProp name="ThreadGroup.ramp_time">${{__P(ramp_up_s,10)}}</stringProp>
  <stringProp name="ThreadGroup.duration">${{__P(duration_s,60)}}</stringProp>
</ThreadGroup>
<hashTree>{samplers}</hashTree>"""


def plan(tmp_path, samplers=None, defaults_domain="${__P(host)}", users="${__P(users,10)}", group_on="true"):
    samplers = samplers if samplers is not None else [SAMPLER.format(name="GET owners", on="true", domain="", port="")]
    text = f"""<?xml version="1.0" encoding="UTF-8"?>
<jmeterTestPlan version="1.2" properties="5.0" jmeter="5.6.3">
  <hashTree>
    <TestPlan guiclass="TestPlanGui" testclass="TestPlan" testname="petclinic" enabled="true"/>
    <hashTree>
      {DEFAULTS.format(domain=defaults_domain)}
      {GROUP.format(on=group_on, users=users, samplers="".join(samplers))}
    </hashTree>
  </hashTree>
</jmeterTestPlan>"""
    path = tmp_path / "my.jmx"
    path.write_text(text)
    return path
