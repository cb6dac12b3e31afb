"""A secret is hidden in every place a URL or a connection string keeps one (lab/redact.py), and none reaches the
environment of what runs as the lab's user (JMeter, a build, the JVM check, the report: unprivileged.Account)."""
from __future__ import annotations

from pathlib import Path

import pytest

from lab import redact, unprivileged

SECRET = "s3cr3t"

# (form, text holding SECRET, what must still show)
FORMS = [
    ("query password", "postgresql://tuner@db.lab/study?password=s3cr3t", "postgresql://tuner@db.lab/study?password=***"),
    ("user and password parameters", "postgresql://db.lab/study?user=tuner&password=s3cr3t&sslmode=require",
     "postgresql://db.lab/study?user=tuner&password=***&sslmode=require"),
    ("sslpassword", "postgresql://tuner@db.lab/study?sslmode=verify-full&sslpassword=s3cr3t",
     "postgresql://tuner@db.lab/study?sslmode=verify-full&sslpassword=***"),
    ("JDBC ;password=", "jdbc:sqlserver://db.lab:1433;databaseName=study;user=sa;password=s3cr3t;encrypt=true",
     "jdbc:sqlserver://db.lab:1433;databaseName=study;user=sa;password=***;encrypt=true"),
    ("libpq key=value", "host=db.lab port=5432 dbname=study user=tuner password=s3cr3t",
     "host=db.lab port=5432 dbname=study user=tuner password=***"),
    ("libpq quoted", "host=db.lab password='s3cr3t with spaces' user=tuner", "host=db.lab password=*** user=tuner"),
    ("token", "https://api.lab/v1/runs?access_token=s3cr3t&page=2", "https://api.lab/v1/runs?access_token=***&page=2"),
    ("secret", "https://auth.lab/cb?client_id=lab&client_secret=s3cr3t", "https://auth.lab/cb?client_id=lab&client_secret=***"),
    ("apikey", "https://metrics.lab/push?apikey=s3cr3t", "https://metrics.lab/push?apikey=***"),
    ("api-key", "https://metrics.lab/push?api-key=s3cr3t", "https://metrics.lab/push?api-key=***"),
    ("an @ in the user information's password", "postgresql://tuner:s3cr3t@home@db.lab/study",
     "postgresql://tuner:***@db.lab/study"),
    ("a URL percent-encoded in another", "https://lab/go?next=postgresql%3A%2F%2Ftuner%3As3cr3t%40db.lab%2Fstudy",
     "https://lab/go?next=postgresql%3A%2F%2Ftuner%3A***%40db.lab%2Fstudy"),
    ("an environment assignment on the console", "PGPASSWORD=s3cr3t ./start.sh tune", "PGPASSWORD=*** ./start.sh tune"),
    ("a JVM option", "-Djavax.net.ssl.trustStorePassword=s3cr3t -Xmx64m",
     "-Djavax.net.ssl.trustStorePassword=*** -Xmx64m"),
    # hidden before too: kept hidden
    ("user information", "postgresql://tuner:s3cr3t@db.lab:5432/study", "postgresql://tuner:***@db.lab:5432/study"),
    ("no user", "postgresql://:s3cr3t@db.lab/study", "postgresql://:***@db.lab/study"),
    ("a : in the password", "postgresql://tuner:s3:cr3t@db.lab/study", "postgresql://tuner:***@db.lab/study"),
    ("percent-encoded password", "postgresql://tuner:s3cr3t%40%3A@db.lab/study", "postgresql://tuner:***@db.lab/study"),
]


@pytest.mark.parametrize(("text", "shown"), [f[1:] for f in FORMS], ids=[f[0] for f in FORMS])
def test_every_form_of_a_secret_is_hidden(text, shown):
    assert redact.redacted(text) == shown
    assert SECRET not in redact.redacted(text)


@pytest.mark.parametrize("text", ["http://10.0.0.11:8080/health", "postgresql://tuner@db.lab:5432/study",
                                  "--set tuned:tomcat_threads_max=250", "results/2026-tune/tune.json", "passes=3",
                                  "jdbc:h2:mem:test;MODE=PostgreSQL", "tokens=5 keys=2"])
def test_text_without_a_secret_is_left_as_it_is(text):
    assert redact.redacted(text) == text


def test_a_study_url_on_the_command_line_is_recorded_without_its_password():
    """run.json's command, the lock's and tune.json's go through redact.argv / redacted."""
    argv = ["tune", "--study", "postgresql://db.lab/study?user=tuner&password=s3cr3t",
            "--study=host=db password=s3cr3t"]
    assert not [a for a in redact.argv(argv) if SECRET in a]


def test_a_recorded_url_is_usable_again_without_its_password():
    """--resume: the driver then takes the password from PGPASSWORD or ~/.pgpass."""
    assert redact.usable(redact.redacted("postgresql://db.lab/study?user=tuner&password=s3cr3t&sslmode=require")) == \
        "postgresql://db.lab/study?user=tuner&sslmode=require"
    assert redact.usable(redact.redacted("postgresql://tuner@db.lab/study?password=s3cr3t")) == \
        "postgresql://tuner@db.lab/study"
    given = "postgresql://db.lab/study?password=s3cr3t"
    assert redact.usable(given) == given                 # given on this command line: used as given


ACCOUNT = unprivileged.Account("camel-lab", 990, 990, Path("/var/lib/camel-lab/home"))


def test_the_lab_users_processes_get_no_secret_of_the_labs_environment(monkeypatch):
    for name, value in {"PGPASSWORD": SECRET, "PGPASSFILE": "/root/.pgpass", "LAB_STUDY": f"postgresql://u:{SECRET}@h/db",
                        "LAB_PROVIDER": "containers", "TUNE_STUDY": f"postgresql://h/db?password={SECRET}",
                        "AWS_SECRET_ACCESS_KEY": SECRET, "GITHUB_TOKEN": SECRET, "SSH_AUTH_SOCK": "/tmp/agent",
                        "HTTPS_PROXY": f"http://me:{SECRET}@proxy:3128", "MAVEN_OPTS": f"-Dproxy.password={SECRET}",
                        "HOME": "/root", "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC",
                        "JAVA_HOME": "/usr/lib/jvm/java-17", "JVM_ARGS": "-Xmx256m", "TERM": "dumb"}.items():
        monkeypatch.setenv(name, value)
    env = ACCOUNT.environment()
    assert not [k for k, v in env.items() if SECRET in v], env
    assert not set(env) & {"PGPASSWORD", "PGPASSFILE", "LAB_STUDY", "LAB_PROVIDER", "TUNE_STUDY", "SSH_AUTH_SOCK"}
    assert env == {"PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TZ": "UTC",
                   "JAVA_HOME": "/usr/lib/jvm/java-17", "JVM_ARGS": "-Xmx256m", "TERM": "dumb",
                   "HOME": "/var/lib/camel-lab/home", "USER": "camel-lab", "LOGNAME": "camel-lab"}


def test_a_maven_build_as_the_lab_user_keeps_only_its_options(monkeypatch):
    from lab import maven
    monkeypatch.setenv("PGPASSWORD", SECRET)
    monkeypatch.setenv("MAVEN_OPTS", "-Xmx512m")
    env = maven.environment(ACCOUNT.environment())
    assert "PGPASSWORD" not in env and env["MAVEN_OPTS"].endswith("-Xmx512m")


def test_ansible_gets_no_secret_of_the_labs_environment(monkeypatch):
    """Ansible runs the JVM check of the jvm_* knobs (as the lab's user, in Ansible's environment)."""
    from lab.provision import playbook
    monkeypatch.setenv("PGPASSWORD", SECRET)
    monkeypatch.setenv("LAB_STUDY", f"postgresql://u:{SECRET}@h/db")
    monkeypatch.setenv("PWD", "/work/lab")
    env = playbook.ansible_env()
    assert "PGPASSWORD" not in env and "LAB_STUDY" not in env and env["ANSIBLE_CONFIG"].endswith("ansible.cfg")
    assert env["PWD"] == "/work/lab" and env["PATH"]


def test_a_failure_on_the_console_shows_no_secret(monkeypatch, capsys):
    """A message that quotes a URL (a study's storage the driver could not reach, a tool's output): start.sh prints
    it redacted."""
    from lab import cli
    from lab.cli import commands
    from lab.errors import LabError
    status = commands.of("status")
    for failure, code in ((ValueError, 2), (LabError, 1)):
        def refused(args, failure=failure):
            raise failure(f"could not reach postgresql://tuner:{SECRET}@db.lab/study?sslpassword={SECRET}")
        monkeypatch.setattr(status, "main", refused)
        assert cli.main(["status"]) == code
        err = capsys.readouterr().err
        assert "could not reach postgresql://tuner:***@db.lab/study?sslpassword=***" in err and SECRET not in err
