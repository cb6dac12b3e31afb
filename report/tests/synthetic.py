"""Synthetic paired runs with a known truth, for the uncertainty tests.

Both machines share a common-mode slowdown (the host: one busy core slows both) and each has its own
noise; every noise is an AR(1) process, so per-second figures are autocorrelated as in the lab. The truth:
- successful TPS: tuned's expected rate is `effect × bias` times default's (bias: the machine, not the
  configuration);
- latency: tuned's latencies are default's distribution scaled by `latency_factor` (so every percentile
  ratio is exactly that factor);
- errors: each side fails a request with its own expected probability (`error_default`, `error_tuned`).

Each machine's own noise may have an autocorrelation of its own (`own_phi`, else phi) and lean against the
other's (`rivalry`, their correlation: on the lab's 2-core hosts the twins compete for the cores, and the
per-second log TPS of native containers at 150 users had a difference's σ 0.33–0.48 > each side's 0.25–0.39, its
lag-1 autocorrelation 0.27–0.36 against 0.68–0.78 of their sum: results/20261128T*-s50-*-ct*).

Shared by both machines (what a paired statistic cancels and a per-machine one does not): a warm-up (`warmup_s`,
`warmup_depth`: both start at 1 − depth of their rate, latencies (1 + 2·depth) times longer, and settle
exponentially within warmup_s) and a drift over the run (`drift`: the rate's log moves by that much from the
first second to the last). Neither changes the truth: both sides are scaled alike.

The JVM's CPU (jvm_cpu): each side's CPU per successful request is `cpu_cost` ms, tuned's `cpu_factor` times it (and
÷ bias: a faster twin spends less CPU time on the same work), with its own AR(1) noise (`cpu_sigma`) and the
warm-up's (compiling: costlier at first, shared); the CPU each second is the successes that second times that
cost, and PCP sees it only as the mean of each of its sampling intervals (`cpu_step_s`, a phase of its own per
machine), nothing before a side's first sample and nothing in the last seconds (its last sample).

Between runs (Kalibera & Jones 2013: each JVM invocation is a random effect), a run can carry its own true
effect on top of that truth: with `run_sd_tps`, `run_sd_latency` (log scale) or `run_sd_error_pt` (percentage
points) above 0, the run draws u ~ N(0, sd²) per figure (run_effects) and tuned's rate is multiplied by exp(u),
its latencies by exp(u), its error probability raised by u points. Across many runs the truth is then the fixed
part, and an interval of one run must also cover the run's own u.
"""
import numpy as np

from report.read.calibrations import AATrial
from report.read.jtl import Samples
from report.stats.runs import LoadedRun

# the latency law: log latency = log(median × factor) + a level drifting as an AR(1) of this σ + a request's own
# normal draw of this σ (its p99 level: bench/coverage.level_truth)
LATENCY_LEVEL_SD = 0.3
LATENCY_SD = 0.5


def ar1(rng, n, phi, sigma):
    """A stationary AR(1) series with marginal standard deviation sigma."""
    x = np.empty(n)
    x[0] = rng.normal(0.0, sigma)
    innovation = sigma * np.sqrt(1.0 - phi * phi)
    for i in range(1, n):
        x[i] = phi * x[i - 1] + rng.normal(0.0, innovation)
    return x


def lognormal_rate(base, noise, sigma):
    """base × exp(noise) with the mean kept at base (E[exp(N(0, σ²))] = exp(σ²/2))."""
    return base * np.exp(noise - sigma * sigma / 2.0)


def run_effects(seed, run_sd_tps=0.0, run_sd_error_pt=0.0, run_sd_latency=0.0, run_sd_cpu=0.0):
    """The run's own random effects {figure group: u}, drawn from a stream of their own (seeded by the run's
    seed), so that a run without them is the very run it was before they existed."""
    rng = np.random.default_rng([seed, 36])
    return {"tps": rng.normal(0.0, run_sd_tps), "error_pt": rng.normal(0.0, run_sd_error_pt),
            "latency": rng.normal(0.0, run_sd_latency), "cpu": rng.normal(0.0, run_sd_cpu)}


def shared_course(seconds, warmup_s=0.0, warmup_depth=0.0, drift=0.0):
    """(rate factor, latency factor) per second that both machines share: a warm-up settling exponentially (to
    5 % of its depth at warmup_s) and a drift of the rate's log from the first second to the last."""
    t = np.arange(seconds, dtype=float)
    left = warmup_depth * np.exp(-3.0 * t / warmup_s) if warmup_s > 0 else np.zeros(seconds)
    course = np.exp(drift * (t / max(seconds - 1, 1) - 0.5))
    return (1.0 - left) * course, 1.0 + 2.0 * left


def paired_samples(seed, seconds=300, rate=20.0, effect=1.0, bias=1.0, latency_factor=1.0,
                   error_default=0.02, error_tuned=0.02, phi=0.8, common_sigma=0.25, own_sigma=0.15,
                   median_ms=200.0, t0=1_795_000_000.0, run_sd_tps=0.0, run_sd_error_pt=0.0, run_sd_latency=0.0,
                   warmup_s=0.0, warmup_depth=0.0, drift=0.0, own_phi=None, rivalry=0.0):
    """{'default': Samples, 'tuned': Samples} of one simulated run started at t0 on both machines."""
    rng = np.random.default_rng(seed)
    u = run_effects(seed, run_sd_tps, run_sd_error_pt, run_sd_latency)
    common = ar1(rng, seconds, phi, common_sigma)
    shared_rate, shared_latency = shared_course(seconds, warmup_s, warmup_depth, drift)
    own_phi = phi if own_phi is None else own_phi
    rival = None            # default's own noise, which tuned's leans against (rivalry < 0: one core, two machines)
    sides = {}
    tuned_error = float(np.clip(error_tuned + u["error_pt"] / 100.0, 0.0, 0.95)) if run_sd_error_pt else error_tuned
    for name, factor, lat_factor, error in (("default", 1.0, 1.0, error_default),
                                            ("tuned", effect * bias * np.exp(u["tps"]),
                                             latency_factor * np.exp(u["latency"]), tuned_error)):
        own = ar1(rng, seconds, own_phi, own_sigma)
        if rival is not None and rivalry:
            own = rivalry * rival + np.sqrt(1.0 - rivalry * rivalry) * own
        rival = own
        sigma = np.hypot(common_sigma, own_sigma)
        offered = shared_rate * lognormal_rate(rate * factor, common + own, sigma)
        # errors: autocorrelated bursts around the side's probability; successes: the rate that succeeded
        p_error = np.clip(lognormal_rate(error, ar1(rng, seconds, phi, 0.5), 0.5), 0.0, 1.0)
        requests = rng.poisson(offered / (1.0 - error))
        starts, elapsed, ok = [], [], []
        latency_level = ar1(rng, seconds, phi, LATENCY_LEVEL_SD)
        for second in range(seconds):
            k = requests[second]
            if k == 0:
                continue
            starts.append(t0 + second + np.sort(rng.random(k)))
            ok.append(rng.random(k) >= p_error[second])
            # lognormal latencies whose level drifts over time; the same law on both sides, tuned scaled
            elapsed.append(np.round(lat_factor * median_ms * shared_latency[second]
                                    * np.exp(latency_level[second] + rng.normal(0, LATENCY_SD, k))))
        start = np.concatenate(starts)
        n = len(start)
        sides[name] = Samples(start=start, elapsed_ms=np.maximum(np.concatenate(elapsed), 1.0),
                              ok=np.concatenate(ok), label=np.full(n, "get", dtype=object),
                              error=np.full(n, "", dtype=object))
    return sides


def jvm_cpu(seed, sides, seconds, t0=1_795_000_000.0, cpu_cost=1.5, cpu_factor=1.0, bias=1.0, cpu_sigma=0.1,
            phi=0.8, cpu_step_s=30, run_sd_cpu=0.0, warmup_s=0.0, warmup_depth=0.0, **_):
    """{side: (seconds,) the JVM's CPU ms per second as PCP records it (NaN where it does not)} for paired_samples'
    sides of the same run (its other parameters are taken and ignored, so a row's parameters serve both)."""
    rng = np.random.default_rng([seed, 37])
    u = run_effects(seed, run_sd_cpu=run_sd_cpu)["cpu"]
    _, compiling = shared_course(seconds, warmup_s, warmup_depth)
    out = {}
    for name, factor in (("default", 1.0), ("tuned", cpu_factor / bias * np.exp(u))):
        successes = np.bincount((sides[name].start[sides[name].ok] - t0).astype(int), minlength=seconds)[:seconds]
        cost = cpu_cost * factor * compiling * lognormal_rate(1.0, ar1(rng, seconds, phi, cpu_sigma), cpu_sigma)
        cpu = successes * cost
        phase = int(rng.integers(0, cpu_step_s))
        recorded = np.full(seconds, np.nan)
        for first in range(phase, seconds - 2 - cpu_step_s + 1, cpu_step_s):
            recorded[first:first + cpu_step_s] = cpu[first:first + cpu_step_s].mean()
        out[name] = recorded
    return out


def as_trial(name: str, swapped: bool, analysis) -> LoadedRun:
    """An analysed run as a crossover trial (report/stats/combine.py): swapped, the default configuration ran on
    machine tuned."""
    machines = {"default": "tuned", "tuned": "default"} if swapped else {"default": "default", "tuned": "tuned"}
    run = type("Run", (), {"get": lambda self, *k, default=None:
                           {"machines": machines} if k == ("design",) else default, "status": "complete"})()
    return LoadedRun(folder=name, run=run, machines={}, analysis=analysis)


def as_aa_trial(name: str, analysis, bias: float = 1.0) -> AATrial:
    """What a calibration reads of an A/A run's verdict.json (report/read/calibrations.py); bias: a twin bias planted
    on TPS."""
    def scaled(f, x):
        return x * (bias if f == "tps" else 1.0)
    effects = {f: {"kind": e.kind, "estimate": scaled(f, e.estimate), "low": scaled(f, e.low),
                   "high": scaled(f, e.high)} for f, e in analysis.effects.items()}
    return AATrial(name, effects, {f: analysis.df(f) for f in analysis.effects})
