"""report.html: one self-contained page (CSS inline, charts as base64 PNGs, flame graphs as inline SVG): the
summary, the charts, then the profiles' flame graphs.

The page's Markdown carries text read from run folders (sampler labels, error messages, run.json's label and knobs,
folder names), so it is converted as text, never as markup: raw HTML in it is shown escaped, a link whose address
would run something (javascript:, data:) loses it, and so does an image from anywhere but beside the page."""
from __future__ import annotations

import base64
import html
import re
from collections.abc import Sequence
from typing import NamedTuple, Protocol
from xml.etree.ElementTree import Element

import markdown
from markdown.extensions import Extension
from markdown.treeprocessors import Treeprocessor

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 1.5em auto; max-width: 1400px; padding: 0 1em; color: #222; }
h1 { font-size: 1.5em; } h2 { margin-top: 1.6em; border-bottom: 1px solid #ddd; } h3 { margin-bottom: .2em; }
table { border-collapse: collapse; margin: .5em 0; } th, td { border: 1px solid #ccc; padding: 3px 8px; }
th { background: #f3f3f3; } td { font-variant-numeric: tabular-nums; }
blockquote { background: #fff3cd; border-left: 4px solid #e0a800; margin: 0; padding: .4em 1em; }
code { background: #f4f4f4; padding: 0 3px; font-size: 90%; }
.chart img { width: 100%; max-width: 1296px; } .about { color: #666; margin: 0 0 .3em; font-size: 90%; }
.flame { max-width: 100%; height: auto; } .flame text { pointer-events: none; fill: #000; }
.flame g:hover rect { stroke: #000; stroke-width: .7; }
"""


# the address kinds a Markdown link or image may keep ('': relative to the page, i.e. a sibling in results/)
SAFE_SCHEMES = {"a": {"", "http", "https", "mailto"}, "img": {""}}
ADDRESS = {"a": "href", "img": "src"}
SCHEME = re.compile(r"([^/?#]*):")


def url_scheme(url: str) -> str:
    """The scheme a browser reads in an attribute's value: '' for a relative path, '//' for another host. Entities
    are decoded and whitespace and control characters dropped first, as a browser does ('java&#9;script:')."""
    bare = "".join(c for c in html.unescape(url) if c.isprintable() and not c.isspace())
    if bare.replace("\\", "/").startswith("//"):
        return "//"
    head = SCHEME.match(bare)
    return head.group(1).lower() if head else ""


class _InertLinks(Treeprocessor):
    """Drops the address of a link or image whose scheme is not safe: its text stays, it runs and fetches nothing."""

    def run(self, root: Element) -> None:
        for element in root.iter():
            attribute = ADDRESS.get(element.tag)
            if attribute and url_scheme(element.get(attribute, "")) not in SAFE_SCHEMES[element.tag]:
                del element.attrib[attribute]


class TextOnly(Extension):
    """Markdown whose raw HTML is text: without the block and inline HTML processors, a '<' is escaped like any
    other character; a link or image whose address is not safe loses it (_InertLinks). Entities ('&amp;') are kept."""

    def extendMarkdown(self, md: markdown.Markdown) -> None:
        md.preprocessors.deregister("html_block")
        md.inlinePatterns.deregister("html")
        md.treeprocessors.register(_InertLinks(md), "inert_links", -1)     # after 'unescape' (0): the final URLs


def markdown_html(text: str) -> str:
    """The Markdown (with tables) as HTML, every character of its text shown as written."""
    return markdown.markdown(text, extensions=["tables", TextOnly()])


class Figure(NamedTuple):
    """A chart that is not one of the run's side-by-side panels (a sweep's, the capacity search's)."""
    key: str
    title: str
    about: str


class Titled(Protocol):
    """What the page needs of a chart: a Figure, or a panels.Chart."""
    key: str
    title: str
    about: str


def render_html(title: str, summary_md: str, charts: Sequence[tuple[Titled, bytes]], dashboards: dict[str, str],
                charts_title: str | None = None, flames: Sequence[tuple[str, str, str, str]] = (),
                no_dashboards: str = "") -> str:
    """charts: [(Chart, png bytes)]; dashboards: {machine: relative link}. charts_title: a page whose charts
    are not the run's side-by-side panels (the combined trials) names them so. flames: [(key, title, about,
    svg text)] (report/render/flame.py). no_dashboards: why a run has none (run.json `dashboards`)."""
    body = markdown_html(summary_md)
    parts = ["<!DOCTYPE html>", "<html lang='en'><head><meta charset='utf-8'>",
             f"<title>{html.escape(title)}</title><style>{CSS}</style></head><body>", body]
    if not charts and not dashboards:       # a page of tables only (comparisons)
        return "\n".join(parts + ["</body></html>"]) + "\n"
    if charts_title:
        parts.append(f"<h2>{html.escape(charts_title)}</h2>")
    else:
        parts += ["<h2>Charts</h2>",
                  "<p class='about'>Left: default, right: tuned, on the same y scale. x: seconds since the machine's "
                  "first sample. Grey: warm-up (excluded from the figures above). Green dotted: where the machine's "
                  "throughput settled (steady state). Red dashed: the machine stopped answering.</p>"]
    if dashboards:
        links = " · ".join(f"<a href='{html.escape(link)}'>{html.escape(m)}</a>" for m, link in dashboards.items())
        parts.append(f"<p>JMeter's own dashboards: {links}</p>")
    elif no_dashboards:
        parts.append(f"<p>JMeter's own dashboards: {html.escape(no_dashboards)}</p>")
    for chart, png in charts:
        data = base64.b64encode(png).decode("ascii")
        parts += [f"<div class='chart' id='{html.escape(chart.key, quote=True)}'><h3>{html.escape(chart.title)}</h3>",
                  f"<p class='about'>{html.escape(chart.about)}</p>",
                  f"<img alt='{html.escape(chart.title)}: default and tuned' src='data:image/png;base64,{data}'>",
                  "</div>"]
    if flames:
        parts += ["<h2 id='profiles'>Profiles</h2>",
                  "<p class='about'>async-profiler's samples of each JVM over the measured window (warm-up cut off). "
                  "Green: Java, yellow: native code (the JVM, libraries), red: the kernel.</p>"]
    for key, name, about, svg in flames:
        parts += [f"<div class='chart' id='{html.escape(key, quote=True)}'><h3>{html.escape(name)}</h3>",
                  f"<p class='about'>{html.escape(about)}</p>", svg, "</div>"]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
