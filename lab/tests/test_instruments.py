"""What the lab records beside the load: the load generator's watch, the psargs export, and async-profiler
itself (fetched from Maven Central, run as an agent in a real JVM on this host, its recording converted)."""
import json
import os
import shutil
import subprocess
import time

import pytest

from lab.experiment import collect, instruments
from lab.provision import profiler


def test_summary_flags_a_saturated_generator_and_names_why():
    calm = [(t, 40.0, 30.0, 2, 2.0, 0.5) for t in range(100)]
    summary = instruments.summarise(calm)
    assert summary["saturated"] is False and summary["why"] is None
    assert summary["seconds"] == 100 and summary["jmeter_cpu_pct_mean"] == 40.0 and summary["timer_lag_ms_p99"] == 2.0
    lagging = calm[:90] + [(t, 40.0, 30.0, 2, 250.0, 20.0) for t in range(10)]
    summary = instruments.summarise(lagging)
    assert summary["saturated"] is True and "timer lag 250 ms" in summary["why"]
    busy = [(t, 185.0, 97.0, 2, 2.0, 0.5) for t in range(50)]
    assert instruments.summarise(busy)["why"] == "JMeter at 185 % of one core (p99) on 2 cores"
    host_busy = [(t, 40.0, 99.0, 2, 2.0, 0.5) for t in range(50)]     # the machines' emulation, JMeter on time
    assert instruments.summarise(host_busy)["saturated"] is False
    assert instruments.summarise([])["saturated"] is None


def test_the_watch_samples_a_busy_process_and_the_host(tmp_path):
    busy = subprocess.Popen(["python3", "-c", "import time\nend = time.time() + 4\nwhile time.time() < end: pass"])
    try:
        watch = instruments.LoadGeneratorWatch(tmp_path)
        watch.started(busy.pid)
        time.sleep(3.2)
        summary = watch.stop()
    finally:
        busy.kill()
        busy.wait()
    rows = (tmp_path / "host" / "load-generator.csv").read_text().splitlines()
    assert rows[0].startswith("time,jmeter_cpu_pct,host_busy_pct") and len(rows) >= 3
    assert summary["seconds"] >= 2
    assert summary["jmeter_cpu_pct_mean"] > 50, summary     # a spinning process: most of one core
    assert 0 < summary["host_busy_pct_mean"] <= 100


def test_psargs_export_becomes_one_command_line_per_process(tmp_path):
    wide = tmp_path / "psargs.csv"
    wide.write_text('Time,"hotproc.psinfo.psargs-003436 /usr/bin/python3",'
                    '"hotproc.psinfo.psargs-000812 /usr/libexec/pcp/bin/pmcd"\n'
                    '1795471604,,/usr/libexec/pcp/bin/pmcd -A\n'
                    '1795471634,/usr/bin/python3 -m mock_service --port 9080,/usr/libexec/pcp/bin/pmcd -A\n')
    assert collect.tidy_processes(wide, tmp_path / "processes.csv") == 2
    lines = (tmp_path / "processes.csv").read_text().splitlines()
    assert lines == ["instance,psargs", "000812 /usr/libexec/pcp/bin/pmcd,/usr/libexec/pcp/bin/pmcd -A",
                     "003436 /usr/bin/python3,/usr/bin/python3 -m mock_service --port 9080"]


HOT = """
public class Hot {
    static volatile Object sink;
    public static void main(String[] args) {
        long end = System.currentTimeMillis() + 2500;
        while (System.currentTimeMillis() < end) {
            sink = spin();
        }
    }
    static String spin() {
        StringBuilder b = new StringBuilder();
        for (int i = 0; i < 2000; i++) b.append(i);
        return b.toString();
    }
}
"""


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the lab's machines and this agent are linux-x64")
def test_async_profiler_records_a_real_jvm_and_the_recording_converts(tmp_path):
    home = profiler.ensure(log=lambda *a: None)
    assert (home / profiler.LIBRARY).stat().st_size > 100_000
    assert profiler.ensure(log=lambda *a: None) == home, "fetched again without a pom change"
    out = tmp_path / "profile"
    out.mkdir()
    (tmp_path / "Hot.java").write_text(HOT)
    # the options lab/experiment/guest/run.sh gives the agent (there through jattach into the running JVM)
    agent = (f"{home / profiler.LIBRARY}=start,jfr,file={out / 'profile.jfr'},log={out / 'profile.log'},"
             "interval=10ms,event=cpu,alloc=262144,lock=1000000")
    subprocess.run(["java", f"-agentpath:{agent}", str(tmp_path / "Hot.java")], check=True, timeout=120,
                   capture_output=True)
    (out / "profile.json").write_text(json.dumps({"events": ["cpu", "alloc", "lock"]}))
    outcome = profiler.convert(out, home)
    assert outcome["cpu"] is None and outcome["alloc"] is None, outcome
    cpu = (out / "cpu.collapsed").read_text()
    assert "Hot.spin" in cpu, cpu[:500]
    stacks = [line.rsplit(" ", 1) for line in cpu.splitlines()]
    assert sum(int(n) for _, n in stacks) > 20
    assert "StringBuilder" in (out / "alloc.collapsed").read_text()
    info = json.loads((out / "profile.json").read_text())
    assert info["converted"]["cpu"] is None
    if shutil.which("jfr"):     # the JDK's tool reads which agent and engine recorded it
        assert info["version"].startswith("4.") and info["engine"], info


@pytest.mark.skipif(os.uname().machine != "x86_64", reason="the lab's machines and this agent are linux-x64")
def test_a_jvm_killed_mid_recording_leaves_its_finished_chunks_convertible(tmp_path):
    """A JVM OOM-killed during the load never finishes its recording: with one chunk per run nothing converted
    (results/20261124T122420Z-full-explain: 'Incomplete JFR file'); with short chunks the finished ones do."""
    home = profiler.ensure(log=lambda *a: None)
    out = tmp_path / "profile"
    out.mkdir()
    (tmp_path / "Hot.java").write_text(HOT.replace("+ 2500", "+ 60000").replace(
        "while (System", 'System.out.println("go"); System.out.flush();\n        while (System'))
    agent = (f"{home / profiler.LIBRARY}=start,jfr,file={out / 'profile.jfr'},log={out / 'profile.log'},"
             "interval=10ms,event=cpu,chunktime=1s")
    jvm = subprocess.Popen(["java", f"-agentpath:{agent}", str(tmp_path / "Hot.java")], stdout=subprocess.PIPE,
                           text=True)
    recording = out / "profile.jfr"
    try:
        assert jvm.stdout.readline().strip() == "go"
        # the agent rotates chunks every few seconds at the earliest: kill once a second chunk has begun
        deadline = time.time() + 60
        while time.time() < deadline and recording.read_bytes().count(b"FLR\0") < 2:
            time.sleep(0.5)
        assert recording.read_bytes().count(b"FLR\0") >= 2, "no chunk finished in 60 s"
    finally:
        jvm.kill()      # SIGKILL, as the OOM killer: the agent gets no chance to finish
        jvm.wait()
    (out / "profile.json").write_text(json.dumps({"events": ["cpu"]}))
    outcome = profiler.convert(out, home)
    assert outcome["cpu"] is None, outcome
    assert "Hot.spin" in (out / "cpu.collapsed").read_text()
