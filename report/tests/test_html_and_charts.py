"""report.html is one self-contained file; every chart has both machines on one y scale with the warm-up shaded."""
import base64
import re

import pytest

from report.read.runinfo import RunInfo
from report.render import charts, panels
from report.stats.machine import load_machine

from .conftest import FIXTURE, run_report

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_report_html_is_self_contained_with_every_chart(fixture_report):
    folder, summary = fixture_report
    page = (folder / "report.html").read_text()
    images = re.findall(r"src='data:image/png;base64,([^']+)'", page)
    assert len(images) == len(panels.CHARTS)
    assert all(base64.b64decode(i).startswith(PNG_MAGIC) for i in images)
    # nothing fetched from elsewhere: no scripts, stylesheets or remote images
    assert not re.search(r"<script|<link|src=['\"]https?:", page)
    assert "tuned served" in page and "<table>" in page  # the summary, rendered
    assert len(page.encode()) < 600 * 1024, "report.html grew far past its ~300 KB budget"


def test_jmeter_dashboards_are_linked_when_present(run_copy):
    (run_copy / "jmeter-dashboard" / "tuned").mkdir(parents=True)
    (run_copy / "jmeter-dashboard" / "tuned" / "index.html").write_text("<html></html>")
    assert run_report(run_copy).returncode == 0
    page = (run_copy / "report.html").read_text()
    assert "href='jmeter-dashboard/tuned/index.html'" in page
    assert "jmeter-dashboard/default/index.html" not in page


@pytest.fixture(scope="module")
def machines():
    run = RunInfo(FIXTURE)
    return [load_machine(run, m, 30.0) for m in ("default", "tuned")]


@pytest.mark.parametrize("chart", panels.CHARTS, ids=lambda c: c.key)
def test_each_chart_has_two_panels_on_one_scale_with_the_warm_up_shaded(chart, machines, monkeypatch):
    figures = []
    monkeypatch.setattr(charts.plt, "close", figures.append)  # keep the figure to look at it
    png = charts.render(chart, machines, 30.0)
    assert png.startswith(PNG_MAGIC)
    left, right = figures[0].axes[:2]
    assert [left.get_title(loc="left"), right.get_title(loc="left")] == ["default", "tuned"]
    assert left.get_ylim() == right.get_ylim() and left.get_ylim()[1] > 0
    for ax in (left, right):
        spans = [p for p in ax.patches if p.get_x() == 0 and p.get_width() == pytest.approx(30.0)]
        assert spans, "warm-up shaded"
        assert ax.lines or ax.collections, "something plotted (the fixture has every metric)"
    # the frozen default machine is marked where it stopped
    marks = [t.get_text() for t in left.texts if "stopped" in t.get_text()]
    assert marks == [f" stopped +{machines[0].stop.at - machines[0].t0:.0f} s "]
