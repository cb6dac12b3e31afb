"""Number formatting for the summary: figures with units, '—' for what was not measured."""
import math

NA = "—"


def missing(x):
    return x is None or (isinstance(x, float) and math.isnan(x))


def num(x, digits=1, unit=""):
    if missing(x):
        return NA
    text = f"{x:,.{digits}f}"
    return f"{text} {unit}".rstrip() if unit else text


def count(x):
    return NA if missing(x) else f"{int(round(x)):,}"


def mean_sd(mean, sd, digits=1, unit=""):
    if missing(mean):
        return NA
    if missing(sd):
        return num(mean, digits, unit)
    return f"{mean:,.{digits}f} ± {sd:,.{digits}f} {unit}".rstrip()


def ratio(tuned, default, digits=2):
    """'1.23×' (tuned / default) or '—' when either is missing or default is 0."""
    if missing(tuned) or missing(default) or default == 0:
        return NA
    return f"{tuned / default:.{digits}f}×"


def seconds(x):
    return NA if missing(x) else f"{x:,.0f} s"


def percent(x, digits=1):
    return num(x, digits, "%")
