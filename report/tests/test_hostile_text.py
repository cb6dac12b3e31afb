"""Text read from run folders is shown, never run (issue 53): sampler labels, JMeter's error messages, run.json's
label, error, provider, service, knob names and values, versions and folder names reach report.html, compare.html
and history.html as escaped text. Markdown passes raw HTML through, so before the fix each of them was a live
element in the page (an <img onerror>, a <script>, a javascript: link)."""
import csv
import json
import shutil
import subprocess
import sys
from html.parser import HTMLParser

import pytest

from .conftest import FIXTURE, REPO
from .synthetic import paired_samples
from .test_history import write_run as write_indexed_run
from .test_verdict_folders import write_run

# one payload per source (its alert's number), so that where each shows is checked on its own
LABELS = ["x`<img src=x onerror=alert(1)>`",        # closes the code span the per-label table puts a label in
          "</script><script>alert(2)</script>", '"><b>bold</b>']
MESSAGE = "<iframe src=javascript:alert(3)>"        # JMeter's responseMessage
ERROR = "<img src=x onerror=alert(4)>"              # run.json's error
KNOB, VALUE, LINK = "<i>knob</i>", "<img src=x onerror=alert(5)>", "[click](javascript:alert(6))"
SERVICE = "<svg onload=alert(7)>"
VERSION = "</script><script>alert(8)</script>"
QUOTE = '"><b>provider</b>'
FOLDER = "20261123T090000Z-<img src=f onerror=alert(9)>"      # a folder name holds anything but '/'


class Elements(HTMLParser):
    """The start tags of a page, with their attributes."""

    def __init__(self, page: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.feed(page)

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, {k: v or "" for k, v in attrs}))


def live(page: str) -> list[tuple[str, dict]]:
    """The elements planted text would make: a tag the report never writes, an event handler, a script address,
    an image that is not the report's own chart."""
    return [(tag, attrs) for tag, attrs in Elements(page).tags
            if tag in ("script", "iframe", "b")
            or any(k.startswith("on") or v.replace(" ", "").lower().startswith("javascript:") for k, v in attrs.items())
            or (tag == "img" and not attrs.get("src", "").startswith("data:image/png;base64,"))]


def hostile_record(record: dict) -> dict:
    """run.json with planted text wherever the report shows one of its strings."""
    knobs = {KNOB: VALUE, "jvm_gc": LINK}
    return {**record, "label": LABELS[1], "status": "failed", "error": ERROR, "provider": QUOTE,
            "service": {"name": SERVICE},
            "machines": {m: {"knobs": knobs, "versions": {"java": VERSION}} for m in ("default", "tuned")},
            "knob_diff": {KNOB: {"default": VALUE, "tuned": LINK}}, "finish_errors": {"report": QUOTE}}


def plant(folder):
    """JMeter's responseMessage of every failed sample, and run.json's strings, made hostile."""
    for side in ("default", "tuned"):
        jtl = folder / side / "jmeter.jtl"
        with open(jtl, newline="") as f:
            rows = list(csv.reader(f))
        message, success = rows[0].index("responseMessage"), rows[0].index("success")
        for row in rows[1:]:
            if row[success] == "false":
                row[message] = MESSAGE
        with open(jtl, "w", newline="") as f:
            csv.writer(f).writerows(rows)
    record = json.loads((folder / "run.json").read_text())
    (folder / "run.json").write_text(json.dumps(hostile_record(record)))


def report(*args):
    done = subprocess.run([sys.executable, "-m", "report", *map(str, args)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr
    return done


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """A synthetic paired run (its labels get the per-label table) named FOLDER and a copy of the recorded fixture,
    both planted; their reports, their comparison, and the history of two indexed runs with planted run.json."""
    root = tmp_path_factory.mktemp("hostile")
    sides = paired_samples(5, seconds=120, effect=1.3)
    for s in sides.values():
        for i, label in enumerate(LABELS):
            s.label[i::len(LABELS)] = label
    synthetic = write_run(root / FOLDER, sides)
    recorded = shutil.copytree(FIXTURE, root / FIXTURE.name)
    for folder in (synthetic, recorded):
        plant(folder)
        report("run", folder)
    report("compare", root / "compared", synthetic, recorded)
    results = root / "results"
    for n in (1, 2):
        indexed = write_indexed_run(results, n, 30.0)
        record = json.loads((indexed / "run.json").read_text())
        (indexed / "run.json").write_text(json.dumps({**hostile_record(record), "status": "complete"}))
    report("history", results, root / "history")
    return {"synthetic": (synthetic / "report.html").read_text(), "recorded": (recorded / "report.html").read_text(),
            "compare": (root / "compared" / "compare.html").read_text(),
            "history": (root / "history" / "history.html").read_text()}


@pytest.mark.parametrize("page", ["synthetic", "recorded", "compare", "history"])
def test_planted_text_makes_no_live_element(pages, page):
    assert live(pages[page]) == []


def test_planted_text_is_shown_as_written(pages):
    """The text is still there, escaped: the tests above do not pass by leaving it out."""
    synthetic, recorded = pages["synthetic"], pages["recorded"]
    assert "<code>x</code>&lt;img src=x onerror=alert(1)&gt;``" in synthetic           # the sampler labels
    assert "<code>&lt;/script&gt;&lt;script&gt;alert(2)&lt;/script&gt;</code>" in synthetic
    assert "&lt;iframe src=javascript:alert(3)&gt;" in recorded                          # JMeter's message
    assert "&lt;img src=x onerror=alert(4)&gt;" in recorded                              # run.json's error
    assert "&lt;i&gt;knob&lt;/i&gt; | &lt;img src=x onerror=alert(5)&gt; | <a>click</a>" in (
        recorded.replace("</td>\n<td>", " | "))                                          # the knob diff's row
    assert "&lt;svg onload=alert(7)&gt;" in recorded and "&lt;/script&gt;&lt;script&gt;alert(8)" in recorded
    assert "&lt;img src=f onerror=alert(9)&gt;" in pages["compare"]                      # the folder's name
    assert "service &lt;svg onload=alert(7)&gt;" in pages["history"]


def test_a_link_keeps_its_address_only_when_it_runs_and_fetches_nothing():
    from report.render.html import markdown_html
    body = markdown_html("[run](../20261123T090000Z-x/report.html) [js](JaVa&#9;script:alert(1)) "
                         "[web](https://example.org/) ![pixel](//example.org/p.png) ![local](chart.png)")
    assert '<a href="../20261123T090000Z-x/report.html">run</a>' in body
    assert "<a>js</a>" in body and '<a href="https://example.org/">web</a>' in body
    assert '<img alt="pixel" />' in body and '<img alt="local" src="chart.png" />' in body
