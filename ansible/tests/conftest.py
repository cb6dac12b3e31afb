"""Helpers for the Ansible tests: run ansible-playbook from the lab's venv, read what it printed.

Nothing here reaches a machine: tests/unreachable.yml names `default` and `tuned` at 127.0.0.1:9,
where nothing listens, so a run that gets past the validation play ends UNREACHABLE (exit 4).
"""
from __future__ import annotations

import functools
import os
import re
import subprocess
import sys
import tempfile
import textwrap
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ANSIBLE_DIR = Path(__file__).resolve().parent.parent
ROOT = ANSIBLE_DIR.parent
TESTS_DIR = ANSIBLE_DIR / "tests"
INVENTORY = TESTS_DIR / "unreachable.yml"
VENV_BIN = Path(sys.executable).parent
if str(ROOT) not in sys.path:      # lab.provision (parse_overrides) and lab.provision.knobs
    sys.path.insert(0, str(ROOT))
from lab.provision import as_data, controller_java  # noqa: E402 - after the path that finds it

# The machine has two cores (and often VMs beside the tests): two ansible-playbook runs at a time.
WORKERS = 2

PROVISION_PLAY = "PLAY [Provision the lab machines]"


def ansible_env() -> dict:
    return {**os.environ, "ANSIBLE_CONFIG": str(ANSIBLE_DIR / "ansible.cfg"), "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0", "PATH": f"{VENV_BIN}{os.pathsep}{os.environ.get('PATH', '')}",
            "PYTHONUNBUFFERED": "1"}


@dataclass
class Run:
    """One ansible-playbook run: its exit status and everything it printed (stdout and stderr)."""
    args: list[str]
    rc: int
    out: str

    def results(self) -> list[dict]:
        """Each host result the default callback printed with a body (`ok: [host] =>`, `failed: [host]
        (item=…) =>`, `fatal: [host]: FAILED! =>`, …): the YAML body parsed, plus `host`, `status`
        (ok, changed, failed, unreachable) and `msg` with its line wrapping undone."""
        found = []
        lines = self.out.splitlines()
        head = re.compile(r"^(?P<status>ok|changed|failed|fatal): \[(?P<host>[^\]]+)\]"
                          r"(?: \(item=.*\))?(?::\s*(?P<what>FAILED|UNREACHABLE)!)? =>\s*$")
        for i, line in enumerate(lines):
            m = head.match(line)
            if not m:
                continue
            body = []
            for more in lines[i + 1:]:
                if more.startswith("    ") or not more.strip():
                    body.append(more)
                else:
                    break
            data = yaml.safe_load(textwrap.dedent("\n".join(body))) or {}
            status = m.group("status")
            if status == "fatal":
                status = "unreachable" if m.group("what") == "UNREACHABLE" else "failed"
            data.update(host=m.group("host"), status=status, msg=" ".join(str(data.get("msg", "")).split()))
            found.append(data)
        return found

    def failures(self) -> list[dict]:
        """The failed results (not the unreachable ones)."""
        return [r for r in self.results() if r["status"] == "failed"]

    def messages(self, host: str | None = None) -> list[str]:
        return [r["msg"] for r in self.results() if host in (None, r["host"]) and r["msg"]]

    def describe(self) -> str:
        return f"$ {' '.join(self.args)}\n(exit {self.rc})\n{self.out[-6000:]}"


_ONCE = threading.Lock()


def default_service_vars() -> Path:
    with _ONCE:        # the tests run ansible-playbook from threads (run_all): one file, made once
        return _default_service_vars()


@functools.cache
def _default_service_vars() -> Path:
    """The default service's extra vars (services/sample.yml, both of its builds, made by Maven when missing), as
    lab/experiment/service.py gives them to every run: in a file of their own, once per test session."""
    from lab.experiment import service
    svc = service.load(service.DEFAULT)
    both = dict(zip(("default", "tuned"), ({"app_stack": stack} for stack in svc.stacks), strict=False))
    path = Path(tempfile.mkdtemp(prefix="lab-service-")) / "service.json"
    path.write_text(as_data.extra_vars(service.ansible_vars(svc, both)))
    return path


def ansible_playbook(*args: str, overrides: dict | None = None, tmp: Path | None = None,
                     timeout: float = 300) -> Run:
    """ansible-playbook ARGS, run in ansible/ with the lab's ansible.cfg and the default service's extra vars (a
    later -e lab_service=… in ARGS wins); `overrides` is passed as `-e @file.json` with {"lab_overrides":
    overrides} as data (lab/provision/as_data.py), exactly as lab/provision/playbook.py does, with the
    controller's JVM of each Java as it passes them."""
    with controller_java.play() as controller:
        command = [str(VENV_BIN / "ansible-playbook"), "-e", f"@{default_service_vars()}", *controller, *args]
        if overrides is not None:
            assert tmp is not None, "overrides need a folder for their JSON file"
            tmp.mkdir(parents=True, exist_ok=True)
            path = tmp / "overrides.json"
            path.write_text(as_data.extra_vars({"lab_overrides": overrides}))
            command += ["-e", f"@{path}"]
        result = subprocess.run(command, cwd=ANSIBLE_DIR, env=ansible_env(), stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, timeout=timeout)
    return Run(command, result.returncode, result.stdout)


def as_the_lab(given: dict | None = None) -> dict:
    """lab_overrides as the lab gives them (lab/experiment/design.py machine_overrides): each machine's own knob set
    where it is not the catalog's (the machine tuned: `tuned`; Ansible reads no knob set itself), `given` on top."""
    from lab.experiment import design
    own, given = design.Trial().overrides(), given or {}
    return {vm: {**own.get(vm, {}), **given.get(vm, {})} for vm in {**own, **given}}


def run_all(jobs: dict[str, callable]) -> dict[str, Run]:
    """Runs the callables WORKERS at a time; {name: its Run}."""
    with ThreadPoolExecutor(max_workers=WORKERS) as pool:
        futures = {name: pool.submit(job) for name, job in jobs.items()}
        return {name: future.result() for name, future in futures.items()}


@pytest.fixture(scope="session", autouse=True)
def _base_temp_made_first(tmp_path_factory):
    """The session's temporary folder made once, here: fixtures call tmp_path_factory.mktemp from run_all's
    threads, and two threads making it at once collide (FileExistsError on xdist's popen-gw0)."""
    tmp_path_factory.getbasetemp()
