"""The load: JMeter runs jmeter/plan.jmx against both machines at once and writes one JTL per machine.

What the run orchestration calls:

    profile = load.Profile(users=150, ramp_up_s=150, duration_s=1200)    # validated; ValueError names the field
    result = load.run(run_dir, {"default": "http://192.168.56.11", "tuned": "http://192.168.56.12"},
                      profile, wrap=netns.wrap)
    load.dashboards(run_dir)                                              # never raises; says what it skipped
    run_json["load"] = result.to_dict()

One module per job: profile (the scenario and the targets as the plan's properties), jmeter (JMeter
assembled from Maven Central, its command line), jtl (reading JTLs, also while they grow), runner (the
load itself), dashboard (JMeter's HTML dashboards), engines (remote JMeter engines on real hosts),
generator_pcp (PCP on a load generator), plan_check (a user's own plan checked), user_plan (that plan made
two-sided), request_list (a service's request list → the plan that replays it).

- `ensure_jmeter()` assembles JMeter from Maven Central (jmeter/pom.xml) into .lab/jmeter/home, once per
  content of that pom (a hash stamp), and returns the home.
  `jmeter_beside()` does it on a thread while the machines come up.
- `run()` starts JMeter as `wrap(argv)` (the orchestrator's wrap runs it inside the lab's namespace, where
  the guests are reachable) in a session of its own, so a Ctrl-C on the terminal reaches only us. Every
  `progress_every_s` it prints the phase (ramp-up/hold), elapsed and remaining time, and per machine the
  req/s and error % of the last interval, read from the JTLs as they grow (JMeter flushes every line).
  Ctrl-C stops the load with JMeter's own mechanism (a "Shutdown" datagram: samples in flight finish),
  escalating on a second Ctrl-C or a timeout to "StopTestNow", SIGTERM (JMeter's shutdown hook still
  flushes the JTLs) and SIGKILL; a half-written last line is cut off, so every JTL stays a valid CSV.
  It then *returns* with `interrupted=True`: the caller collects and reports, then exits as it sees fit.
  A JMeter that fails on its own raises LoadError, which carries the LoadResult (`.result`).
  If our process dies, the kernel sends JMeter SIGTERM (parent-death signal): no orphaned load.
  `LoadResult.test_start_ms` is the origin of JMeter's schedule (ramp-up, hold) for the report.
- `dashboards()` writes JMeter's HTML dashboard of each machine's JTL into <run-dir>/jmeter-dashboard/<machine>/.

Files in the run folder: <machine>/jmeter.jtl, jmeter.log (JMeter's log), jmeter.out (its console),
jmeter-dashboard/<machine>/ and jmeter-dashboard/<machine>.log.
"""
from lab.experiment.load.dashboard import dashboards
from lab.experiment.load.jmeter import (
                             HOME,
                             JVM_OPTIONS,
                             LAB_PROPERTIES,
                             PLAN,
                             POM,
                             STAMP_NAME,
                             LoadError,
                             ensure_jmeter,
                             jmeter_beside,
                             jmeter_command,
                             jmeter_version,
                             pom_hash,
)
from lab.experiment.load.jtl import JTL_COLUMNS, JtlTail, read_jtl, split_records
from lab.experiment.load.profile import (
                             LABELS,
                             LOADS,
                             MACHINES,
                             MIX_KEYS,
                             STEPS_WARMUP_S,
                             Profile,
                             named,
                             target_properties,
)
from lab.experiment.load.runner import LoadResult, run
from lab.experiment.load.settle import check as check_until_settled

__all__ = ["HOME", "JTL_COLUMNS", "JVM_OPTIONS", "LABELS", "LAB_PROPERTIES", "LOADS", "MACHINES", "MIX_KEYS", "PLAN",
           "POM", "STAMP_NAME", "STEPS_WARMUP_S", "JtlTail", "LoadError", "LoadResult", "Profile", "dashboards",
           "check_until_settled", "ensure_jmeter", "jmeter_beside", "jmeter_command", "jmeter_version", "named",
           "pom_hash", "read_jtl", "run", "split_records", "target_properties"]
