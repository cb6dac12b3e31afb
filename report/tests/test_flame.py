"""Flame graphs from collapsed profiles: the tree, the hottest methods, each machine's SVG and the
differential one, and their place in the report."""
import re
import xml.etree.ElementTree as ET

import pytest

from report.explain.flame import frame_kind, hottest
from report.read.profiles import read_collapsed
from report.render import flame
from report.tests.conftest import run_report

DEFAULT = """\
java/lang/Thread.run;org/apache/tomcat/util/net/NioEndpoint.run;org/apache/camel/Foo.process 700
java/lang/Thread.run;org/apache/tomcat/util/net/NioEndpoint.run;java/util/zip/Deflater.deflate 200
java/lang/Thread.run;GCTaskThread::run 99
java/lang/Thread.run;org/example/Rare.<init> 1
not a stack line
"""
TUNED = """\
java/lang/Thread.run;org/apache/tomcat/util/net/NioEndpoint.run;org/apache/camel/Foo.process 900
java/lang/Thread.run;GCTaskThread::run 50
java/lang/Thread.run;org/apache/tomcat/util/net/NioEndpoint.run;sys_write_[k] 48
java/lang/Thread.run;org/example/Widget.<init> 2
"""


def write(folder, machine, text, event="cpu"):
    path = folder / machine / "profile" / f"{event}.collapsed"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def rects(svg):
    """{frame label: (x, width, fill)} of the frames drawn, from their tooltips."""
    out = {}
    for g in ET.fromstring(svg).iter("{http://www.w3.org/2000/svg}g"):
        title = g.find("{http://www.w3.org/2000/svg}title").text
        rect = g.find("{http://www.w3.org/2000/svg}rect")
        out[title.split(" — ")[0]] = (float(rect.get("x")), float(rect.get("width")), rect.get("fill"))
    return out


def test_collapsed_stacks_make_a_tree_and_bad_lines_are_skipped(tmp_path):
    root = read_collapsed(write(tmp_path, "default", DEFAULT))
    assert root.total == 1000
    endpoint = root.find(["java/lang/Thread.run", "org/apache/tomcat/util/net/NioEndpoint.run"])
    assert (endpoint.total, endpoint.own) == (900, 0)
    assert root.find(["java/lang/Thread.run", "GCTaskThread::run"]).own == 99
    assert read_collapsed(tmp_path / "absent.collapsed") is None
    assert read_collapsed(write(tmp_path, "tuned", "no samples here\n")) is None


def test_hottest_methods_are_the_java_frames_nearest_the_top(tmp_path):
    root = read_collapsed(write(tmp_path, "default", DEFAULT))
    assert hottest(root, 3) == [("org/apache/camel/Foo.process", 0.7), ("java/util/zip/Deflater.deflate", 0.2),
                                      ("java/lang/Thread.run", 0.099)]
    native = read_collapsed(write(tmp_path, "tuned", "java/lang/Thread.run;a/B.write;__write;sys_write_[k] 3\n"
                                                           "start_thread;GCTaskThread::run 1\n"))
    assert hottest(native) == [("a/B.write", 0.75), ("GCTaskThread::run", 0.25)]


def test_a_machine_flame_graph_is_wide_where_the_samples_are(tmp_path, monkeypatch):
    monkeypatch.setattr(flame, "MIN_SHARE", 0.0015)
    root = read_collapsed(write(tmp_path, "default", DEFAULT))
    svg = flame.flame_svg(root, "default CPU")
    drawn = rects(svg)                                  # well-formed XML, or ET raises
    assert drawn["all"][1] == pytest.approx(flame.WIDTH - 0.5)
    assert drawn["org/apache/camel/Foo.process"][1] == pytest.approx(0.7 * flame.WIDTH - 0.5)
    assert drawn["java/util/zip/Deflater.deflate"][1] == pytest.approx(0.2 * flame.WIDTH - 0.5)
    # alphabetical: GCTaskThread (G) left of java/…, org/… ; callee above its caller
    assert drawn["GCTaskThread::run"][0] == 0 and drawn["org/apache/tomcat/util/net/NioEndpoint.run"][0] > 0
    assert "org/example/Rare.<init>" not in drawn, "0.1 % of the samples: under MIN_SHARE (0.15 % here), left out"
    assert drawn["org/apache/camel/Foo.process"][2].startswith("rgb(") and \
        drawn["GCTaskThread::run"][2] != drawn["org/apache/camel/Foo.process"][2]


def test_java_frames_are_told_from_native_ones():
    for java in ("java/lang/Thread.run", "org/x/Foo$Bar.<init>", "com/x/Foo$$Lambda/0x000075c1b8012345.apply",
                 "a/B.write_[j]"):
        assert frame_kind(java) == "java", java
    for native in ("I2C/C2I adapters", "/usr/lib/x86_64-linux-gnu/libc.so.6", "libjvm.so", "GCTaskThread::run",
                   "__write", "itable stub", "Interpreter"):
        assert frame_kind(native) == "native", native
    assert frame_kind("sys_write_[k]") == "kernel"


def test_frame_names_are_escaped(tmp_path):
    root = read_collapsed(write(tmp_path, "default", "a/B.<init>;c/D.&x 10\n"))
    svg = flame.flame_svg(root, "t")
    assert "a/B.&lt;init&gt;" in svg and "<init>" not in svg
    assert "a/B.<init>" in rects(svg)


def test_the_differential_graph_is_tuned_coloured_by_the_change_from_default(tmp_path):
    base = read_collapsed(write(tmp_path, "default", DEFAULT))
    new = read_collapsed(write(tmp_path, "tuned", TUNED))
    svg = flame.diff_svg(base, new, "diff")
    drawn = rects(svg)
    red = drawn["org/apache/camel/Foo.process"][2]      # 70 % → 90 %: the largest change, full red
    assert red == "rgb(235,60,60)"
    gc = re.fullmatch(r"rgb\((\d+),(\d+),(\d+)\)", drawn["GCTaskThread::run"][2])
    assert int(gc[3]) == 235 and int(gc[1]) < 235, "10 % → 5 %: shrank, blue"
    assert drawn["all"][2] == "rgb(235,235,235)"
    assert "java/util/zip/Deflater.deflate" not in drawn, "only default had it: the shape is tuned's"
    assert drawn["sys_write"][1] == pytest.approx(0.048 * flame.WIDTH - 0.5)
    assert "tuned 90.00 %, default 70.00 % (+20.00 points)" in svg


def test_the_report_shows_both_machines_flame_graphs_and_the_differential(run_copy):
    for machine, text in (("default", DEFAULT), ("tuned", TUNED)):
        write(run_copy, machine, text)
        write(run_copy, machine, "java/lang/Thread.run;java/util/HashMap.resize 40\n", event="alloc")
    (run_copy / "default" / "profile" / "profile.json").write_text(
        '{"events": ["cpu", "alloc"], "interval_ms": 20, "engine": "ctimer", "window": ["a", "b"]}')
    done = run_report(run_copy)
    assert done.returncode == 0, done.stderr
    page = (run_copy / "report.html").read_text()
    assert page.count("<svg ") == 6, "cpu and alloc: default, tuned and the differential"
    for key in ("flame-cpu-default", "flame-cpu-tuned", "flame-cpu-diff", "flame-alloc-diff"):
        assert f"id='{key}'" in page
    assert page.index("<h2 id='profiles'>") > page.index("<h2>Charts</h2>")
    summary = (run_copy / "summary.md").read_text()
    section = summary[summary.index("## Profiles"):summary.index("## The lab's own cost")]
    assert "- default: events cpu, alloc; CPU engine ctimer; interval 20 ms" in section
    assert "- tuned: profile.json missing — cpu 1000 samples, alloc 40 samples" in section
    assert "| 1 | `org/apache/camel/Foo.process` 70.0 % | `org/apache/camel/Foo.process` 90.0 % |" in section
    assert "Most allocated types (share of the allocation samples):\n- default: `java/util/HashMap.resize` 100 %" \
        in section


def test_a_run_without_profiles_says_so(fixture_report):
    _folder, summary = fixture_report
    section = summary[summary.index("## Profiles"):]
    assert "- default: not profiled (off by default: ./start.sh --profile)" in section
    assert "Hottest methods" not in section.split("## The lab")[0]


def test_a_recording_the_killed_jvm_never_finished_is_said_in_one_line():
    """results/20261124T122420Z-full-explain: both JVMs OOM-killed mid-run, the converter's stack trace stored."""
    trace = ('ion in thread "main" java.io.IOException: Incomplete JFR file\n'
             '\tat one.jfr.JfrReader.<init>(JfrReader.java:95)')
    info = {"events": ["cpu", "alloc", "lock"], "interval_ms": 20, "error": "stop: Process 7376 not found",
            "converted": {"cpu": trace, "alloc": trace, "lock": trace}}
    said = flame._recorded(info, True)
    assert "not converted (cpu, alloc, lock): Incomplete JFR file;" in said and "JfrReader" not in said
    assert "the JVM was gone before the recording's end" in said
