"""The controller's check of the jvm_* knobs (roles/knobs/tasks/jvm_check.yml) runs the JVM as the lab's user
(lab/unprivileged.py), in an empty folder of that user's, never as root: a knob's value is a customer's text. The JVM
says who ran it (-XshowSettings:properties: user.name, user.dir)."""
from __future__ import annotations

import os
import re

import pytest
from conftest import ansible_playbook

from lab import unprivileged

PLAY = """
- name: The knobs role's JVM check alone, on this host
  hosts: localhost
  connection: local
  gather_facts: false
  vars:
    ansible_python_interpreter: "{{ ansible_playbook_python }}"
    lab_memory_mb: 512
    jvm_version: 17
    app_jvm_knob_options: ["-XshowSettings:properties"]
    jvm_extra_options: JVM_EXTRA
  tasks:
    - name: Run the check
      ansible.builtin.include_role:
        name: knobs
        tasks_from: jvm_check
    - name: Show what the JVM said
      ansible.builtin.debug:
        msg: "{{ knobs_jvm_check.stderr_lines | default([]) }}"
"""


def check(tmp_path, extra: list[str]):
    play = tmp_path / "jvm_check.yml"
    play.write_text(PLAY.replace("JVM_EXTRA", repr(extra)))
    return ansible_playbook("-i", "localhost,", str(play))


@pytest.mark.skipif(os.geteuid() != 0, reason="only a lab run as root hands the check to its own user")
def test_the_controllers_jvm_runs_as_the_labs_user_in_an_empty_folder(tmp_path):
    run = check(tmp_path, [])
    assert run.rc == 0, run.out[-3000:]
    said = run.out          # the debug task's list of the JVM's lines
    assert re.search(rf"user\.name = {unprivileged.NAME}\b", said), said[-3000:]
    folder = re.search(r"user\.dir = ([^\s']+)", said).group(1)
    assert folder == str(unprivileged.HOME / "jvm-check") and not os.listdir(folder), "not in its own empty folder"


def test_a_jvm_option_the_jvm_refuses_still_fails_the_check_naming_it(tmp_path):
    """The check as the lab's user still tells a refused option from a missing Java."""
    run = check(tmp_path, ["-XX:+NoSuchOptionAnywhere"])
    assert run.rc != 0
    failed = [r for r in run.results() if r["status"] == "failed"]
    assert failed and "NoSuchOptionAnywhere" in failed[0]["msg"], run.out[-3000:]
