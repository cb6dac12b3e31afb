"""What the summary says of the steady state: where each machine's throughput settled once its JIT was quiet
(report/stats/steady.py), and where a load run --until-settled ended its hold (run.json load.settled)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from report import fmt
from report.render.verdict import signed
from report.stats.steady import BIN_S, MAX_DRIFT, QUIET_CPU

if TYPE_CHECKING:
    from report.stats.machine import Machine


def steady_lines(machines: dict[str, Machine]) -> list[str]:
    """Where each machine's throughput settled (report/stats/steady.py), one sentence."""
    bits = []
    for m in machines.values():
        st = m.steady
        if st is None:
            continue
        if st.why:
            bits.append(f"{m.name}: not judged ({st.why})")
        elif st.settled:
            quiet = "" if fmt.missing(st.quiet_s) else f" (its JIT quiet from +{st.quiet_s:.0f} s)"
            bits.append(f"{m.name} from +{st.start_s:.0f} s{quiet}")
        elif st.compiling:
            bits.append(f"{m.name} never settled: its throughput did, but its JIT went quiet " +
                        ("too late to leave a steady window" if not fmt.missing(st.quiet_s) else "at no point"))
        else:
            drift = "" if fmt.missing(st.drift) else f" (TPS {signed(100 * st.drift, 0)} % across the window)"
            bits.append(f"{m.name} never settled{drift}")
    if not bits:
        return []
    return [f"Steady state (successful TPS in {BIN_S:.0f} s bins; steady once the fitted trend over the rest of "
            f"the run changes it by at most {MAX_DRIFT:.0%}, from where the JIT's compiler threads take at most "
            f"{QUIET_CPU:g} CPU on average over the rest, where it was recorded): " + "; ".join(bits) + ".", ""]


def until_settled(load: dict[str, Any]) -> str:
    """--until-settled: the hold a cap; where the load ended it (run.json load.settled); a tune's race: why it ended
    the hold (run.json load.race)."""
    race = load.get("race") or {}
    if race:
        return " at most (a tune's race: " + (f"ended, {race['ended']})" if race.get("ended") else
                                               "the cap came first)")
    at = ", ".join(f"{m} at {t:.0f} s" for m, t in ((load.get("settled") or {}).get("at_s") or {}).items())
    return "" if not load.get("until_settled_s") else (
        f" at most (--until-settled {load['until_settled_s']} s: " + (f"ended once both settled, {at})" if at else
                                                                      "the cap came first)"))
