"""What the sampler models of a space (issue 86): one distribution per knob, the same in every trial, so that
optuna's multivariate TPE and GP model every knob together.

They model only the intersection search space, the knobs whose distribution never changes between trials. A range
bounded by earlier knobs (HTTPD's MaxRequestWorkers ≤ ServerLimit × ThreadsPerChild) changed with them, and a knob
searched only `when` another holds (the AJP connector) was missing from some trials: both were drawn at random beside
the model, 5 of the catalog's 17 knobs. Now a bounded knob is proposed as where its value sits between the bounds
the earlier knobs leave it (0…1, on its log scale for a log range), and every knob is proposed in every trial, a
knob whose `when` does not hold dropped from the candidate after it was proposed (space.Space.suggest).
"""
from __future__ import annotations

import math


def of(p):
    """The knob's distribution as the sampler models it: its own range or choices; 0…1 for a bounded knob."""
    import optuna  # 0.2 s to import: only where a tune runs (the command line reads spaces without it)
    if p.kind == "choice":
        return optuna.distributions.CategoricalDistribution(list(p.choices))
    if p.bounded:
        return optuna.distributions.FloatDistribution(0.0, 1.0)
    if p.kind == "int":
        return optuna.distributions.IntDistribution(int(p.low), int(p.high), log=p.log, step=int(p.step or 1))
    return optuna.distributions.FloatDistribution(p.low, p.high, log=p.log, step=p.step)


def proposed(trial, p):
    """The trial's proposal for the knob, on its model's scale (optuna's suggest_* of the distribution's kind)."""
    import optuna
    d = of(p)
    if isinstance(d, optuna.distributions.CategoricalDistribution):
        return trial.suggest_categorical(p.knob, list(d.choices))
    if isinstance(d, optuna.distributions.IntDistribution):
        return trial.suggest_int(p.knob, d.low, d.high, step=d.step, log=d.log)
    return trial.suggest_float(p.knob, d.low, d.high, step=d.step, log=d.log)


def decode(p, x, values: dict):
    """The knob's value from its proposal beside the earlier values (on its step's grid within its bounds)."""
    if not p.bounded:
        return x
    low, high = p.bounds(values)
    value = (math.exp(math.log(low) + x * (math.log(high) - math.log(low))) if p.log and low > 0
             else low + x * (high - low))
    if p.kind == "float" and not p.step:
        return min(high, max(low, value))
    step = p.step or 1
    value = min(high, max(low, low + round((value - low) / step) * step))
    return int(value) if p.kind == "int" else value


def encode(p, value, values: dict):
    """What the sampler would have proposed for this value beside the earlier values (decode's inverse)."""
    if not p.bounded:
        return value
    low, high = p.bounds(values)
    if high <= low:
        return 0.0
    x = ((math.log(value) - math.log(low)) / (math.log(high) - math.log(low)) if p.log and low > 0
         else (value - low) / (high - low))
    return min(1.0, max(0.0, x))


def idle(p):
    """What a knob whose `when` does not hold is told as in a run the study did not propose (its proposal is
    dropped from the candidate)."""
    return p.choices[0] if p.kind == "choice" else 0.0 if p.bounded else p.low
