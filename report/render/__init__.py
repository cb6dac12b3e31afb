"""Rendering: the documents' Markdown (summary.md, compare.md, the combined trials, sweep.md), their HTML pages,
the charts (PNG), the flame graphs (SVG) and verdict.json. Imports: `report.explain`, `report.stats` and
`report.read`; it writes no file (the commands do)."""
