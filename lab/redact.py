"""A secret given in a URL or a connection string (a shared tune study's `postgresql://USER:PASSWORD@HOST/DB`) is never
written: the console, tune.json, run.json's command line and the lab's lock show it as `***`, in every place a
password can sit — a URL's user information (a `:` or `@` in the password too, percent-encoded or not, the URL
itself percent-encoded inside another), a query or JDBC parameter (`?password=`, `&sslpassword=`, `;password=`,
`token=`, `secret=`, `apikey=`), a libpq `key=value` string (`host=db password='a b'`). libpq also reads a password
from PGPASSWORD or ~/.pgpass (0600), which keep it off the command line altogether; no child the lab starts for a
customer's code or text gets such a variable (unprivileged.Account.environment, without_secrets)."""
from __future__ import annotations

import re

HIDDEN = "***"
# scheme://user:password@host — the password up to the last @ before the host (a raw @ or : in it included), also
# percent-encoded inside another value (%3A%2F%2Fuser%3Apassword%40host)
URL_PASSWORD = re.compile(r"(?P<head>\b[A-Za-z][A-Za-z0-9+.-]*://[^:/@\s?#]*:)(?P<password>[^/\s]*)@")
ENCODED_URL_PASSWORD = re.compile(r"(?P<head>%3A%2F%2F(?:(?!%3A|%40|%2F)[^\s&;/?#])*%3A)"
                                  r"(?P<password>(?:(?!%2F)[^\s&;/?#])*)(?P<at>%40)", re.I)
# a key naming a secret (password, sslpassword, PGPASSWORD, client_secret, access_token, api-key, pwd, …), then = and
# its value: quoted, or up to a space or the next parameter (&, ;), as a URL's query, JDBC and libpq write them
SECRET_KEY = r"[\w.-]*(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|access[_-]?key|credentials?)"
KEY_VALUE = re.compile(rf"(?P<head>(?<![\w.-])(?P<key>{SECRET_KEY})\s*=\s*)"
                       r"(?P<value>'(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\"|[^\s&;#'\"]+)", re.I)
# an environment variable's name (not the shell's working folders, PWD and OLDPWD)
SECRET_NAME = re.compile(rf"^(?!(?:OLD)?PWD$){SECRET_KEY}[\w.-]*$|^PG(?:PASS|SERVICE)", re.I)


def redacted(text: str) -> str:
    """text with every secret in it shown as ***."""
    text = URL_PASSWORD.sub(lambda m: f"{m['head']}{HIDDEN}@", text)
    text = ENCODED_URL_PASSWORD.sub(lambda m: f"{m['head']}{HIDDEN}{m['at']}", text)
    return KEY_VALUE.sub(lambda m: f"{m['head']}{HIDDEN}", text)


def argv(args: list[str]) -> list[str]:
    """A command line as the lab records it: each argument redacted."""
    return [redacted(a) for a in args]


def usable(url: str) -> str:
    """A URL as recorded (its password shown as ***) made usable again: without a password, so the driver takes
    it from where it keeps passwords (PGPASSWORD, ~/.pgpass)."""
    url = URL_PASSWORD.sub(lambda m: f"{m['head'][:-1]}@" if m["password"] == HIDDEN else m[0], url)
    dropped = re.sub(rf"(?<=[?&;]){SECRET_KEY}\s*=\s*{re.escape(HIDDEN)}(?:[&;]|(?=#|$))", "", url, flags=re.I)
    return url if dropped == url else re.sub(r"[?&;]+(?=#|$)", "", dropped)


def without_secrets(environment: dict[str, str]) -> dict[str, str]:
    """environment without the variables that hold a secret: named for one (PGPASSWORD, *_TOKEN, *_SECRET, …) or
    holding one (a URL with a password, a `password=` string)."""
    return {name: value for name, value in environment.items()
            if not SECRET_NAME.search(name) and redacted(value) == value}
