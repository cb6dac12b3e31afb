"""Secrets never written (issue 53): a password in a study URL is shown as *** wherever the lab writes or says it,
and the lock file that names its holder's command line is the lab's own to read."""
from __future__ import annotations

import re
import stat
import sys
from pathlib import Path

import pytest

from lab import lock, redact
from lab.cli.commands import tune

SECRET = "s3cr#t"
URL = f"postgresql://tuner:{SECRET}@db.lab.internal:5432/study"


@pytest.mark.parametrize(("text", "shown"), [
    (URL, "postgresql://tuner:***@db.lab.internal:5432/study"),
    (f"--study={URL}", "--study=postgresql://tuner:***@db.lab.internal:5432/study"),
    ("postgresql+psycopg2://u:p@h/db and sqlite:///x.db", "postgresql+psycopg2://u:***@h/db and sqlite:///x.db"),
    ("postgresql://tuner@db/study", "postgresql://tuner@db/study"),           # no password: as it is
    ("sqlite:////tmp/a:b/study.sqlite", "sqlite:////tmp/a:b/study.sqlite"),   # a colon in a path is no password
])
def test_a_urls_password_is_shown_as_stars(text, shown):
    assert redact.redacted(text) == shown


def test_a_recorded_url_is_usable_again_without_its_password():
    """tune.json keeps the study as shown; a resumed tune connects without a password (PGPASSWORD, ~/.pgpass)."""
    assert redact.usable(redact.redacted(URL)) == "postgresql://tuner@db.lab.internal:5432/study"
    assert redact.usable(URL) == URL                 # given on this command line: used as given


@pytest.mark.parametrize("url", [URL, f"mysql://tuner:{SECRET}@db/study"])
def test_a_refused_study_url_is_named_without_its_password(url, monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg2", None)     # a controller without PostgreSQL's driver
    with pytest.raises(ValueError) as refused:
        tune.study_url(url)     # PostgreSQL's driver missing; MySQL is no storage the lab takes
    assert SECRET not in str(refused.value) and "tuner:***@" in str(refused.value)


def test_the_lock_file_is_the_labs_own_to_read(tmp_path):
    """It names the holder's command line (redacted, and still nobody else's to read), even one made 0644 before."""
    path = tmp_path / "lock"
    path.write_text("")
    path.chmod(0o644)
    with lock.hold(f"./start.sh tune --study {redact.redacted(URL)}", path=path):
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert SECRET not in path.read_text()


def test_every_command_line_the_lab_records_is_redacted():
    """run.json's, a sweep's and the lock's command line: each goes through redact.argv."""
    lab = Path(__file__).resolve().parent.parent
    raw = [f"{p.relative_to(lab)}:{n}" for p in lab.rglob("*.py") if "tests" not in p.parts
           for n, line in enumerate(p.read_text().splitlines(), 1)
           if re.search(r"sys\.argv\[1:\]", line) and "redact.argv(" not in line]
    assert raw == [], f"command lines recorded as typed: {raw}"
