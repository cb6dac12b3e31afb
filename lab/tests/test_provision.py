"""Provisioning's memory watch, read back (lab/machines/memory.py memory_summary, describe_memory)."""
from lab.machines import memory
from lab.provision import playbook

# what site.yml's watch writes: epoch, then MemAvailable, SwapTotal, SwapFree in kB (awk leaves a space)
SAMPLES = ("1795580000 61440 1048572 1048572 \n"
           "1795580002 307200 1048572 1048572 \n"
           "1795580004 20480 1048572 946172 \n"
           "1795580006 153600 1048572 1000000 \n"
           "1795580008 1795\n")


def test_the_summary_names_the_start_the_lowest_point_and_the_swap():
    summary = memory.memory_summary(SAMPLES)
    assert summary == {"samples": 4, "seconds": 6, "available_at_start_mb": 60, "available_min_mb": 20,
                       "available_min_at_s": 4, "swap_used_max_mb": 100}


def test_no_whole_sample_is_no_summary():
    assert memory.memory_summary("") is None
    assert memory.memory_summary("cat: /var/log/lab-provision-memory.txt: No such file\n1795580008 17") is None


def test_the_console_line_says_it_in_megabytes_or_why_not():
    line = memory.describe_memory("default", memory.memory_summary(SAMPLES))
    assert line == ("default: memory while provisioning: 60 MB available at the start, lowest 20 MB at +4 s, "
                    "swap used at most 100 MB (4 samples)")
    assert memory.describe_memory("tuned", "not read: SSH timed out") == \
        "tuned: memory while provisioning not read: SSH timed out"


def test_each_machine_is_read_and_a_silent_one_says_why(monkeypatch):
    import subprocess

    def ssh(name, command, timeout=120):
        assert command == f"cat {playbook.paths.GUEST_PROVISION_MEMORY}"
        if name == "tuned":
            raise subprocess.TimeoutExpired(command, timeout)
        return subprocess.CompletedProcess(command, 0, SAMPLES, "")
    monkeypatch.setattr(memory.reach, "ssh", ssh)
    found = memory.memory_during(("default", "tuned"))
    assert found["default"]["available_min_mb"] == 20 and found["tuned"] == "not read: SSH timed out"


def test_the_host_reads_the_file_ansible_writes():
    import yaml
    lab_vars = yaml.safe_load((playbook.ANSIBLE_DIR / "group_vars" / "all" / "lab.yml").read_text())
    assert lab_vars["lab_provision_memory_file"] == playbook.paths.GUEST_PROVISION_MEMORY
    assert "{{ lab_provision_memory_file }}" in lab_vars["lab_provision_memory_watch"]


def test_report_memory_logs_a_line_per_machine_and_returns_the_summaries(monkeypatch):
    monkeypatch.setattr(memory, "memory_during", lambda names: {n: "not read: SSH timed out" for n in names})
    lines = []
    found = memory.report_memory(["default", "tuned"], lines.append)
    assert found == {"default": "not read: SSH timed out", "tuned": "not read: SSH timed out"}
    assert lines == ["default: memory while provisioning not read: SSH timed out",
                     "tuned: memory while provisioning not read: SSH timed out"]
