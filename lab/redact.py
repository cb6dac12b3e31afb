"""A password given in a URL (a shared tune study's `postgresql://USER:PASSWORD@HOST/DB`) is never written: the
console, tune.json, run.json's command line and the lab's lock show it as `***`. libpq also reads a password from
PGPASSWORD or ~/.pgpass (0600), which keep it off the command line altogether."""
from __future__ import annotations

import re

HIDDEN = "***"
# scheme://user:password@ — the password part, up to the @ that ends the credentials
URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s]*:)(?P<password>[^@\s]*)@")


def redacted(text: str) -> str:
    """text with the password of every URL in it shown as ***."""
    return URL_PASSWORD.sub(lambda m: f"{m['head']}{HIDDEN}@", text)


def argv(args: list[str]) -> list[str]:
    """A command line as the lab records it: each argument redacted."""
    return [redacted(a) for a in args]


def usable(url: str) -> str:
    """A URL as recorded (its password shown as ***) made usable again: without a password, so the driver takes
    it from where it keeps passwords (PGPASSWORD, ~/.pgpass)."""
    return URL_PASSWORD.sub(lambda m: f"{m['head'][:-1]}@" if m["password"] == HIDDEN else m[0], url)
