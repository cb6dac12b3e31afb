"""A machine whose memory ran out: the report says whom the OOM killer killed and what held the memory (the
kernel's process table, report/read/oom.py). Synthetic logs in the form the guests' kernel writes them (Debian 12,
6.1: compare the recorded run's journal in fixtures/20261124T122420Z-both-fell.tar.xz)."""
import tarfile
from pathlib import Path

from report.read.oom import oom_kills

from .test_incomplete_runs import summary_of

HEADER = "[  pid  ]   uid  tgid total_vm      rss pgtables_bytes swapents oom_score_adj name"
# (pid, uid, rss pages, name): the mock (python3) grew to 300 MiB; the JVM held 90 MiB and scored worse
TASKS = [(185, 0, 295, "systemd-journal"), (4814, 999, 338, "pmcd"), (7318, 0, 716, "apache2"),
         (7319, 33, 1111, "apache2"), (7320, 33, 1295, "apache2"), (7375, 996, 76800, "python3"),
         (7376, 995, 23040, "java")]


def journal(stamp="2026-11-22T22:01:50+0000", host="lab-default", tasks=TASKS, killed=(7376, "java", 92160)):
    """journal.txt lines (journalctl -o short-iso) of one OOM kill."""
    def kernel(message):
        return f"{stamp} {host} kernel: {message}\n"
    pid, name, anon_kb = killed
    lines = [kernel("pmdaproc invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE|__GFP_COMP), order=0, "
                    "oom_score_adj=0"),
             kernel("Mem-Info:"), kernel("Tasks state (memory values in pages):"), kernel(HEADER)]
    lines += [kernel(f"[{p:>7}] {uid:>5} {p:>5} {rss * 3:>8} {rss:>8} {rss * 16:>14} {0:>8} {0:>13} {n}")
              for p, uid, rss, n in tasks]
    lines += [kernel(f"oom-kill:constraint=CONSTRAINT_NONE,nodemask=(null),cpuset=/,mems_allowed=0,global_oom,"
                     f"task_memcg=/system.slice/camel-app.service,task={name},pid={pid},uid=995"),
              kernel(f"Out of memory: Killed process {pid} ({name}) total-vm:2885472kB, anon-rss:{anon_kb}kB, "
                     "file-rss:0kB, shmem-rss:0kB, UID:995 pgtables:1136kB oom_score_adj:0"),
              f"{stamp} {host} systemd[1]: camel-app.service: A process of this unit has been killed by the OOM "
              "killer.\n",
              f"{stamp[:17]}51+0000 {host} systemd[1]: camel-app.service: Main process exited, code=killed, "
              "status=9/KILL\n",
              f"{stamp[:17]}56+0000 {host} systemd[1]: camel-app.service: Scheduled restart job, restart counter "
              "is at 1.\n"]
    return "".join(lines)


def test_the_kill_names_the_largest_process_when_it_is_not_the_one_killed():
    [kill] = oom_kills(journal().splitlines())
    assert (kill.pid, kill.name, kill.killed_kb, kill.invoked_by) == (7376, "java", 92160, "pmdaproc")
    assert kill.largest().name == "python3" and kill.largest().rss_kb == 76800 * 4
    assert kill.words() == ("java (pid 7376) was killed holding 90 MiB; the largest process was python3 (pid 7375) "
                            "with 300 MiB (of the 405 MiB all processes held)")


def test_many_small_processes_that_held_the_most_together_are_named():
    workers = [(8000 + i, 33, 1280, "apache2") for i in range(150)]       # 150 × 5 MiB
    lines = journal(tasks=[(7376, 995, 51200, "java"), *workers], killed=(7376, "java", 204800)).splitlines()
    [kill] = oom_kills(lines)
    assert kill.words().endswith("; 150 apache2 processes held 750 MiB together")


def test_the_newer_kernels_table_and_the_serial_console_are_read():
    # 6.x after 6.3: rss split into rss_anon, rss_file, rss_shmem after rss; the console: no date, a boot clock
    lines = ["[  801.120001] java invoked oom-killer: gfp_mask=0x140cca(GFP_HIGHUSER_MOVABLE), order=0",
             "[  801.120400] [  pid  ]   uid  tgid total_vm      rss rss_anon rss_file rss_shmem pgtables_bytes "
             "swapents oom_score_adj name",
             "[  801.120500] [    512]   995   512   721368    70026    70000       26        0  1163264        0"
             "             0 java",
             "[  801.120600] [    600]     0   600     9014     4835     4800       35        0   110592        0"
             "             0 python3",
             "[  801.120900] Out of memory: Killed process 512 (java) total-vm:2885472kB, anon-rss:280000kB, "
             "file-rss:104kB, shmem-rss:0kB, UID:995 pgtables:1136kB oom_score_adj:0"]
    [kill] = oom_kills(lines)
    assert [t.name for t in kill.tasks] == ["java", "python3"] and kill.killed_kb == 280104
    assert kill.words().startswith("java (pid 512) was killed holding 274 MiB; it was the largest process")


def test_a_kill_without_its_table_says_so():
    [kill] = oom_kills(["Nov 22 22:01:50 default kernel: Out of memory: Killed process 4242 (java) "
                        "total-vm:2000000kB"])
    assert kill.words() == "java (pid 4242) was killed; the kernel's process table is not in the log"


def test_the_report_tells_what_held_the_memory(run_copy):
    (run_copy / "default" / "logs" / "journal.txt").write_text(journal())
    summary = summary_of(run_copy)
    said = ("java (pid 7376) was killed holding 90 MiB; the largest process was python3 (pid 7375) with 300 MiB "
            "(of the 405 MiB all processes held)")
    logs = summary.split("## Log findings", 1)[1].split("\n## ", 1)[0]
    assert f"- 22:01:51 UTC camel-app ended — OOM killer ({said}); code=killed, status=9/KILL; " in logs
    assert f"`logs/journal.txt`: OOM killer: what held the memory ×1 — first: `{said}`" in logs


def test_a_machine_whose_journal_did_not_come_back_is_told_from_its_console(tmp_path):
    logs = tmp_path / "default" / "logs"
    logs.mkdir(parents=True)
    (logs / "serial-console.log").write_text("".join(
        f"[  801.12{i:04d}] {line.split(' kernel: ', 1)[1]}" for i, line in enumerate(journal().splitlines(True))
        if " kernel: " in line))
    from report.read.logs import log_hints
    [hint] = [h for h in log_hints(tmp_path / "default") if h.what.startswith("OOM killer: what held")]
    assert hint.file == "logs/serial-console.log" and "not dated" in hint.what
    assert hint.first.startswith("java (pid 7376) was killed holding 90 MiB; the largest process was python3")


def test_the_recorded_runs_journal_reads_as_the_kernel_wrote_it(tmp_path):
    with tarfile.open(Path(__file__).parent / "fixtures" / "20261124T122420Z-both-fell.tar.xz") as tar:
        tar.extractall(tmp_path, filter="data")
    with open(tmp_path / "20261124T122420Z-both-fell" / "tuned" / "logs" / "journal.txt") as f:
        [kill] = oom_kills(f)
    assert (kill.pid, kill.name, kill.invoked_by, len(kill.tasks)) == (7727, "java", "logback-1", 25)
