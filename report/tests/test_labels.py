"""The verdict per request label (report/stats/labels.py, render/labels.py): a change that helps one request and hurts
another shows in each label's own interval, from run folders made of synthetic paired samples."""
import json

import numpy as np

from report.commands.run import build_report
from report.read.jtl import Samples

from .synthetic import paired_samples
from .test_verdict_folders import write_run

T0 = 1_795_000_000.0


def labelled(seed, label, **kw):
    sides = paired_samples(seed, seconds=240, t0=T0, **kw)
    for s in sides.values():
        s.label = np.full(len(s.start), label, dtype=object)
    return sides


def merged(*runs):
    out = {}
    for side in ("default", "tuned"):
        parts = [r[side] for r in runs]
        order = np.argsort(np.concatenate([p.start for p in parts]), kind="stable")
        out[side] = Samples(*(np.concatenate([getattr(p, f) for p in parts])[order]
                              for f in ("start", "elapsed_ms", "ok", "label", "error")))
    return out


def write(folder, sides):
    write_run(folder, sides)
    build_report(folder)
    return (folder / "summary.md").read_text(), json.loads((folder / "verdict.json").read_text())


def test_a_change_that_helps_one_request_and_hurts_another_shows_in_each_label(tmp_path):
    sides = merged(labelled(1, "GET /owners", effect=1.4, rate=15.0), labelled(2, "POST /visits", effect=0.6),
                   labelled(3, "GET /rare", rate=0.2))
    summary, verdict = write(tmp_path / "run", sides)
    assert "## Per request label" in summary
    labels = verdict["labels"]
    assert list(labels) == ["GET /owners", "POST /visits", "GET /rare"]      # by requests
    helped, hurt = labels["GET /owners"]["effects"]["tps"], labels["POST /visits"]["effects"]["tps"]
    assert 1.0 < helped["low"] < 1.4 < helped["high"], helped
    assert hurt["low"] < 0.6 < hurt["high"] < 1.0, hurt
    rare = labels["GET /rare"]
    assert rare["effects"] == {} and rare["why_not"].endswith("requests on one machine (need 100)")
    row = next(line for line in summary.splitlines() if line.startswith("| `GET /rare`"))
    assert "need 100" in row


def test_a_run_of_one_label_has_no_breakdown(tmp_path):
    summary, verdict = write(tmp_path / "run", labelled(4, "GET /owners"))
    assert "## Per request label" not in summary and verdict["labels"] == {}
