"""summary.md: the verdict, the verdict table (after warm-up), stops with their evidence, the saturation
analysis, the profiles, the lab's own cost, knob diff, versions, log hints and what is missing from the run folder.
This module holds the document's order and its top (status, run, warm-up, design, results, intervals, steady
state); the later sections come from report/render/sections.py and the other render modules."""
from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

from report import fmt
from report.fmt import utc_clock
from report.read.profiles import Profiles, load_profiles
from report.read.runinfo import RunInfo, design
from report.render.capacity import lines as capacity_lines
from report.render.cost import cost_lines, outside_warning
from report.render.flame import profile_lines
from report.render.generators import lines as generators_lines
from report.render.lines import line_lines
from report.render.saturation import saturation_lines
from report.render.sections import (
    errors_section,
    integrity_section,
    knobs_section,
    logs_section,
    missing_section,
    stops_section,
    table,
    versions_section,
)
from report.render.steady import steady_lines, until_settled
from report.render.verdict import calibration_words, effect_text
from report.stats.between import Calibration
from report.stats.figures import PROCESS_GROUPS
from report.stats.machine import Machine
from report.stats.steady import STILL_COMPILING_CPU, compiling_cpu
from report.stats.uncertainty import CI, CONFIDENCE, Analysis

# The JIT's compiling time per second of the measured window (CPUs busy compiling, on average) from which the
# summary says a side was still warming up: at native speed the sample app, settled, compiled 0.07–0.5 s in 209 s
# (under 0.003 CPU; docs/methods.md, the migration step by step).


def _status_lines(run: RunInfo) -> list[str]:
    if not run.data:
        return [f"> **Run status unknown**: {'; '.join(run.problems)}.", ""]
    lines = []
    if run.status != "complete":
        where = run.get("stopped_at")
        text = f"**Run {run.status}**"
        text += f" — stopped at phase `{where}`" if where else ""
        text += f": {run.get('error')}" if run.get("error") else ""
        lines += [f"> {text}. Figures below cover only what was gathered.", ""]
    # what went wrong after the load (lab/run.py _finish): steps that failed or were interrupted, and what
    # collection could not bring back from each machine
    after = run.get("finish_errors", default=None) or {}
    if after:
        lines += ["> **After the load**: " + "; ".join(f"{step} {what}" for step, what in after.items()) + ".", ""]
    # machines that stopped answering the host's liveness probe during the load (lab/experiment/liveness.py)
    for vm, probe in (run.get("liveness", default=None) or {}).items():
        if probe.get("dead_at"):
            lines += [liveness_line(vm, probe), ""]
    warning = outside_warning(run)
    if warning:
        lines += [warning, ""]
    collect_errors = run.get("collect_errors", default=None) or {}
    for machine, problems in collect_errors.items():
        listed = problems if isinstance(problems, list) else [problems]
        lines += [f"> **Not collected from {machine}**: " + "; ".join(map(str, listed)) + ".", ""]
    return lines


def liveness_line(vm: str, probe: dict[str, Any]) -> str:
    """A machine that stopped answering the host's liveness probe (run.json liveness: its last outage), said
    as the probe saw it: for how long and whether it came back; it died only as far as the probe can tell, so
    a machine that answered again is not called dead."""
    dead_at, back_at = probe["dead_at"], probe.get("back_at")
    deaths = probe.get("deaths") or 0
    times = f" ({deaths} outages; the last)" if deaths > 1 else ""
    failed = f"{probe.get('failed')} of {probe.get('probes')} probes failed"
    if back_at is not None:
        return (f"> **Machine {vm} stopped answering for {back_at - dead_at:.0f} s and came back**{times}: no answer "
                f"to the host's liveness probe from {utc_clock(dead_at)} UTC until {utc_clock(back_at)} UTC "
                f"({failed}).")
    return (f"> **Machine {vm} stopped answering during the load and never answered again**{times}: no answer to "
            f"the host's liveness probe from {utc_clock(dead_at)} UTC ({failed}).")


def _run_line(run: RunInfo) -> str:
    load = run.load
    mix = ", ".join(f"{k} {v} %" for k, v in (load.get("mix") or {}).items())
    plan = run.get("service", "plan")
    if plan:        # a service's own JMeter plan: its thread groups, not the lab's mix
        mix = ""
    bits = [f"status {run.status}", f"started {run.get('started', default='?')}",
            f"ended {run.get('ended', default='?')}"]
    if load:
        model = load.get("model", "?")
        users = f"{load.get('users')} users" if load.get("users") is not None and model == "closed" else ""
        if model == "steps":
            users = (f"{load.get('ramp_up_s', 0)} s of warm-up at the first rate, then stages of "
                     f"{load.get('step_s', '?')} s at "
                     f"{', '.join(f'{r:g}' for r in load.get('step_rates') or [])} req/s")
        rate = f"{load.get('rate_per_s')} req/s" if load.get("rate_per_s") and model == "open" else ""
        named = f" {load['name']}" if load.get("name") and not plan else ""
        bits.append(f"load{named}: {model} model, {' '.join(x for x in (users, rate) if x)}, "
                    f"ramp-up {load.get('ramp_up_s', '?')} s, {load.get('duration_s', '?')} s"
                    + until_settled(load)
                    + (f", keep-alive {'on' if load.get('keep_alive') else 'off'}" if 'keep_alive' in load else "")
                    + (", over HTTPS (HTTPD's TLS front)" if load.get("scheme") == "https" else "")
                    + (f", mix {mix}" if mix else "")
                    + (f", the service's own plan {Path(str(plan)).name}" if plan else ""))
    commit = run.get("git_commit")
    if commit:
        bits.append(f"git {str(commit)[:12]}")
    if run.get("provider") == "hosts":      # real hosts: no VMs, no accelerator of the lab's
        bits.append(f"real hosts from {run.get('inventory', default='an inventory')}")
    elif run.get("provider") or run.get("accelerator"):
        bits.append(f"{run.get('provider', default='?')} / {run.get('accelerator', default='?')}")
        swap = run.get("core_swap", default={})
        if run.cores == "swapped":
            bits.append(f"host cores swapped between the machines {swap.get('after_s', swap.get('at_s', '?')):.0f} s "
                        "into the load")
        elif swap:
            bits.append(f"host cores fixed ({swap.get('error') or swap.get('why') or 'not swapped'})")
    host = run.get("host", default={})
    if host:
        bits.append(f"host {host.get('cpus', '?')} CPUs, {host.get('memory_mb', '?')} MB")
    return " · ".join(bits)


def _warmup_line(warmup_s: float, source: str) -> str:
    return (f"Figures exclude the first {warmup_s:.0f} s of warm-up (counted from each machine's first sample; "
            f"{source}); the window ends at the machine's last sample.")


def resultstable(machines: dict[str, Machine], analysis: Analysis | None = None, shared_kernel: bool = False
                 ) -> list[str]:
    """shared_kernel: the machines are containers, whose load average is the host's (both twins' and the host's)."""
    d, t = machines["default"], machines["tuned"]
    rows = []

    def ci(figure: str) -> str:
        return effect_text(analysis.effects[figure]) if analysis is not None else "—"

    def row(name: str, dv: float | None, tv: float | None, text: Callable[[float | None], str],
            ratio: str | None = None, figure: str | None = None) -> None:
        rows.append([name, text(dv), text(tv), ratio if ratio is not None else fmt.ratio(tv, dv),
                     ci(figure) if figure else ""])

    row("measured window", d.load.window_s, t.load.window_s, fmt.seconds, "")
    row("requests", d.load.requests, t.load.requests, fmt.count)
    rows.append(["successful TPS (mean ± σ of 1 s)", fmt.mean_sd(d.load.tps, d.load.tps_sd, 1, "req/s"),
                 fmt.mean_sd(t.load.tps, t.load.tps_sd, 1, "req/s"),
                 fmt.ratio(t.load.tps, d.load.tps), ci("tps")])
    row("errors", d.load.error_pct, t.load.error_pct, lambda x: fmt.percent(x, 2), figure="error_pct")
    for p in ("p50", "p95", "p99"):
        row(f"latency {p} (successful)", getattr(d.load, p), getattr(t.load, p), lambda x: fmt.num(x, 0, "ms"),
            figure=p)
    rows.append(["latency mean ± σ (successful)", fmt.mean_sd(d.load.mean_ms, d.load.sd_ms, 1, "ms"),
                 fmt.mean_sd(t.load.mean_ms, t.load.sd_ms, 1, "ms"), fmt.ratio(t.load.mean_ms, d.load.mean_ms), ""])
    row("max load average (1 min" + (", the host's)" if shared_kernel else ")"), d.system.max_load1,
        t.system.max_load1, lambda x: fmt.num(x, 2))
    for group in PROCESS_GROUPS:
        row(f"peak RSS {group}", d.system.peak_rss_mib.get(group), t.system.peak_rss_mib.get(group),
            lambda x: fmt.num(x, 1, "MiB"))
    rows.append(["total GC pause", _gc(d), _gc(t), fmt.ratio(t.system.gc_pause_s, d.system.gc_pause_s), ""])
    d_cpu, t_cpu = d.jvm_cpu_per_success_ms, t.jvm_cpu_per_success_ms
    row("JVM CPU per successful request", d_cpu, t_cpu, lambda x: fmt.num(x, 2, "ms"), figure="cpu")
    rows.append(["JIT compiling (CPU on average)", _jit(d), _jit(t), fmt.ratio(t.system.jit_s, d.system.jit_s), ""])
    if d.system.conversions or t.system.conversions:
        rows.append(["Camel type conversions per request (hit / miss / failed)", _conversions(d), _conversions(t),
                     "", ""])
    return table(["", "default", "tuned", "tuned/default",
                   f"tuned vs default ({CI}, paired windows)"], rows)


def uncertainty_lines(analysis: Analysis | None) -> list[str]:
    """How the intervals were computed, in one paragraph."""
    if analysis is None:
        return ["No intervals: the two machines have no common measured window.", ""]
    p = analysis.paired
    if not analysis.replicates:
        return [f"No intervals: only {p.n} paired 1 s windows (an interval needs 10).", ""]
    b = analysis.blocks
    return [f"Intervals: {CONFIDENCE * 100:.0f} % confidence, circular block bootstrap over the {p.n:,} paired 1 s "
            f"windows both machines were measured in (from {utc_clock(p.start)} UTC), blocks of {b['tps']} s (TPS), "
            f"{b['errors']} s (errors), {b['latency']} s (latency)"
            + (f", {b['cpu']} s (the JVM's CPU per request: at least one of PCP's {p.cpu_step_s:g} s samples)"
               if analysis.effects["cpu"].has_interval else "")
            + f", {analysis.resamples:,} resamples "
            f"(seed {analysis.seed}), Student t with (windows ÷ block − 1) degrees of freedom on the log ratio "
            "(errors: on the difference in percentage points). Latency percentiles are compared only when both "
            "machines served enough successful requests (p50 ≥ 20, p95 ≥ 200, p99 ≥ 1,000). "
            + ("The intervals above also hold the between-run variance of the matching A/A trials (line under the "
               "verdict). " if any(not math.isnan(e.within_low) for e in analysis.effects.values()) else "")
            + "See report/README.md (Uncertainty).", ""]


def _knob_set(name: str) -> str:
    return "the catalog (default)" if name == "default" else f"knob set {name} (ansible/knob_sets/{name}.yml)"


def _given(values) -> str:
    """' with jvm_gc=parallel given' for a side's --set values (two sides may start from one set)."""
    if not isinstance(values, dict) or not values:
        return ""
    return " with " + ", ".join(f"{k}={fmt.typed(v)}" for k, v in sorted(values.items())) + " given"


def knob_sets_text(run: RunInfo) -> str:
    """'the default column ran the catalog (default), the tuned column ran knob set tuned (…) with x=1 given'."""
    given = run.get("overrides", default={}) or {}      # side → the --set values on top of its set
    return ", ".join(f"the {side} column ran {_knob_set(c)}" + _given(given.get(side))
                     for side, c in sorted(design(run)["configurations"].items()))


def design_lines(run: RunInfo) -> list[str]:
    """Which machine ran which configuration, for A/A runs and crossover trials."""
    d = design(run)
    lines = []
    if d["kind"] == "aa":
        lines.append(f"A/A run: both machines ran the {d['configurations']['default']} configuration; the columns "
                     "are machines (default, tuned), so any difference is the twins' own.")
    chosen = {side: c for side, c in d["configurations"].items() if c != side}
    if chosen and d["kind"] != "aa":
        lines.append(f"Knob sets: {knob_sets_text(run)}.")
    swapped = {side: vm for side, vm in d["machines"].items() if side != vm}
    if d["trial"]:
        lines.append(f"Trial {d['trial']} of {d['trials']}" + (f" (series {d['series']})" if d["series"] else "")
                     + (": roles swapped — " + ", ".join(f"the {side} configuration ran on machine {vm}"
                                                        for side, vm in sorted(d["machines"].items()))
                        if swapped else ": each configuration on its own machine") + ".")
    lines += service_lines(run)
    starts = run.get("service_starts", default={})
    if starts:
        spread = starts.get("spread_s")
        lines.append("Equal start: every service of both machines (app, HTTPD, mock, PCP) was restarted together "
                     "before the load" + (f"; the apps became ready {spread:.0f} s apart" if spread is not None else "")
                     + ".")
    else:
        lines.append("Start not equalised: this run did not restart both machines' services together "
                     "(their JVMs may have different histories).")
    return lines + [""]


def service_lines(run: RunInfo) -> list[str]:
    """The service the machines ran (run.json service; none in runs from before the sample app had a descriptor): what
    its jar is (or its builds, when the machines ran two), and the knobs of a configuration's knob set it could not
    take (left out of that side)."""
    svc = run.get("service", default=None)
    if not isinstance(svc, dict) or not svc.get("name"):
        return []
    facts = svc.get("facts") or {}
    what = ", ".join(x for x in (f"Spring Boot {facts['boot_version']}" if facts.get("boot_version") else "",
                                 f"Tomcat {facts['tomcat_version']}" if facts.get("tomcat_version") else "",
                                 f"Camel {facts['camel_version']}" if facts.get("camel_version") else "") if x)
    jar = (Path(str(svc["jar"])).name if svc.get("jar") else
           f"builds {', '.join(svc.get('stacks') or [])} by app_stack: each machine's versions below")
    lines = [f"Service: **{svc['name']}** ({jar}{': ' + what if what else ''}), with the lab's tuning kit on its class "
             "path; HTTPD forwards " + str(svc.get("proxy_path", "?")) + "."]
    for config, left in sorted((svc.get("left_out") or {}).items()):
        if isinstance(left, dict) and left:
            lines.append(f"Left out of {config} (the service, or the machines' kind, cannot take them): "
                         + ", ".join(sorted(left)) + ".")
    return lines


def _jit(machine: Machine) -> str:
    cpu = compiling_cpu(machine)
    return fmt.NA if fmt.missing(cpu) else f"{machine.system.jit_s:,.1f} s ({cpu:.2f})"


def _conversions(machine: Machine) -> str:
    c, requests = machine.system.conversions, machine.load.requests
    if not c or not requests:
        return fmt.NA
    return " / ".join(fmt.NA if fmt.missing(c.get(k)) else f"{c[k] / requests:,.2f}" for k in ("hit", "miss", "failed"))


def compiling_lines(machines: dict[str, Machine]) -> list[str]:
    """A warning when a side's JIT still compiled through the measured window: its figures then hold warm-up
    (on emulated machines compiling is ~25× slower, and the side with more code to compile loses for that)."""
    busy = {m.name: cpu for m in machines.values() if not fmt.missing(cpu := compiling_cpu(m))}
    if not busy or max(busy.values()) < STILL_COMPILING_CPU:
        return []
    return ["**Still compiling:** the JIT compiled through the measured window ("
            + ", ".join(f"{name} {cpu:.2f} CPU on average" for name, cpu in sorted(busy.items()))
            + f"; {STILL_COMPILING_CPU} or more is named here). The verdict then holds warm-up as well as the "
            "configurations: the side with more code to compile pays for it, most on emulated machines, where "
            "compiling is ~25× slower. A longer warm-up or hold, or faster machines, measures the configurations "
            "themselves.", ""]


def _gc(machine: Machine) -> str:
    s = machine.system
    if fmt.missing(s.gc_pause_s):
        return fmt.NA
    pauses = f" ({fmt.count(s.gc_pauses)} pauses)" if not fmt.missing(s.gc_pauses) else ""
    return f"{s.gc_pause_s:,.3f} s{pauses}"


def render_summary(run: RunInfo, machines: dict[str, Machine], warmup_s: float, warmup_source: str, sentence: str,
                   analysis: Analysis | None = None, calibration: Calibration | None = None,
                   profiles: Profiles | None = None, per_label: list[str] | None = None) -> str:
    lines = [f"# Camel Tuning Lab — run {run.run_id}", ""]
    lines += _status_lines(run)
    lines += [f"**Verdict:** {sentence}", ""]
    lines += line_lines(run)       # the boxes when they differ, a knob set moved to another line
    if calibration is not None and analysis is not None:     # without a paired window there is no interval
        lines += [calibration_words(calibration, design(run)["kind"]), ""]
    lines += [_run_line(run), "", _warmup_line(warmup_s, warmup_source), ""]
    lines += design_lines(run)
    lines += ["## Results", ""] + resultstable(machines, analysis, run.get("provider") == "containers") + [""]
    lines += capacity_lines(run, machines)
    lines += uncertainty_lines(analysis)
    lines += per_label or []        # report/render/labels.py
    lines += steady_lines(machines)
    lines += compiling_lines(machines)
    lines += stops_section(machines)
    lines += saturation_lines(run, machines)
    lines += profile_lines(profiles if profiles is not None else load_profiles(run))
    lines += cost_lines(run, machines)
    lines += generators_lines(run, machines)
    lines += errors_section(machines)
    lines += knobs_section(run)
    lines += versions_section(run)
    lines += logs_section(run, machines)
    lines += integrity_section(run, machines)
    lines += missing_section(run, machines)
    return "\n".join(lines).rstrip() + "\n"


