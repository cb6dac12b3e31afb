"""A tune's plan (`./start.sh tune`'s options as the search reads them): the space, the hold, the floor, the budget
and how it is shared between the search's runs and the confirmations (their expected lengths on the machines' kind),
the control and base, the sampler, and what the plan prints first."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from lab import redact
from lab.experiment.tune import aa, confirm, evidence, sequential, trials
from lab.experiment.tune.space import Space
from lab.provision import knob_sets

# A run's cost beside its hold and ramp-up (re-provisioning the tuned machine, the equal start and check,
# collection and the report), by the machines' kind. Emulated VMs: 20261128T084303Z-s48-tune's 60 s trials took 6–8
# min with a 20 s ramp-up (its candidates change HTTPD too). Native containers: 28 s from one load's end to the next
# one's start (median of 11 runs, 19–39 s; the report written beside the next provisioning) in the tune of
# 20261207T105435Z-racecheck-tune (the sample app, 50 users). Real hosts are taken as native.
OVERHEAD_S = {"libvirt": 330, "containers": 30, "hosts": 30}


@dataclass
class Plan:
    space: Space
    hold_s: int                             # every run's hold (its steady window is what is judged)
    floor: float
    budget_s: int
    objective: str = "tps"                  # trials.OBJECTIVES
    constraints: tuple[str, ...] = trials.CONSTRAINTS      # gates every candidate's verdict must pass
    control: str = knob_sets.DEFAULT        # the knob set the candidates run against
    name: str | None = None                 # the knob set the answer is written as (confirm.default_name)
    study: str | None = None                # a study shared by several workers (storage URL); None: the folder's
    base: str = knob_sets.DEFAULT           # a candidate is this set and its values
    known: tuple[str, ...] = trials.KNOWN   # the sets run first, as far as the space holds their values
    between: float = trials.BETWEEN         # a run's between-run spread where A/A runs do not calibrate its verdict
    overhead_s: int = OVERHEAD_S["containers"]    # a run's cost beside ramp-up and hold on the machines' kind
    kind: str = "containers"                # the machines' kind: past runs on another never warm the study
    cold: bool = False                      # start without the past runs of the same question (--cold)
    around: str | None = None               # the knob set the space was narrowed around (--around, region.py)
    sampler: str = "tpe"                     # search.SAMPLERS: what proposes candidates (bench/tuner.py compares)
    # --until-settled: every run's hold is a cap, and the median run so far (overhead included) is what the budget
    # expects of the runs and the confirmations' blocks after it; None until one has run. The longest was tried: one
    # run to its cap (20261202T013731Z-s74-petclinic-tune's fourth) made the confirmations no longer fit
    ran_s: int | None = None
    # the search's runs race (race.py): a run's hold ends once its paired windows have said what they can; its hold
    # is then a cap, and the budget expects the median search run so far; a confirmation's runs race on their
    # precision alone (race.measuring), budgeted from how long the search's runs took to measure their own
    race: bool = True
    # such a run as the budget keeps it (race.budgeted_s): the confirmations' total at its 95th percentile, from the
    # search's runs that measured their precision or held whole, those ended on their value censored (a worse
    # candidate stopped early would have measured later); None until one has measured
    measuring_s: int | None = None
    aa_runs: int = aa.RUNS                  # the A/A block run where no A/A runs of the load calibrate the first run
    seed: int | None = None                 # the sampler's (bench/tuner.py: the same proposals each time it runs)

    def storage(self, folder: Path) -> str:
        return redact.usable(self.study) if self.study else f"sqlite:///{folder / 'study.sqlite'}"

    def cap_s(self, ramp_up_s: int) -> int:
        """The longest a run may take: its hold, ramp-up and overhead."""
        return self.overhead_s + ramp_up_s + self.hold_s

    def trial_s(self, ramp_up_s: int) -> int:
        """What a run is expected to take: its cap, or the median run so far where the hold is only a cap."""
        return self.cap_s(ramp_up_s) if self.ran_s is None else min(self.cap_s(ramp_up_s), self.ran_s)

    def confirm_s(self, ramp_up_s: int) -> int:
        """What a confirmation's run is expected to take: raced on its precision, as the search's runs that measured
        theirs (its cap until one has run); held whole, as a search run."""
        if not self.race:
            return self.trial_s(ramp_up_s)
        return self.cap_s(ramp_up_s) if self.measuring_s is None else min(self.cap_s(ramp_up_s), self.measuring_s)

    def reserve_s(self, ramp_up_s: int) -> int:
        """The confirmations' share of the budget."""
        return confirm.reserve_s(self.control, self.confirm_s(ramp_up_s))

    def expected_trials(self, ramp_up_s: int) -> int:
        """About how many runs fit the budget beside the confirmations (a leader's replicates among them)."""
        return max(1, int((self.budget_s - self.reserve_s(ramp_up_s)) // self.trial_s(ramp_up_s)))

    def describe(self, ramp_up_s: int, known: dict[str, dict] | None = None) -> str:
        lines = [f"tune: {len(self.space.params)} knobs on the tuned side, from the {self.base} set"
                 + (f", around the {self.around} set's values" if self.around else "") + ", against the "
                 f"{self.control} set; objective: the paired {self.objective} ratio at steady state; constraints: "
                 f"{', '.join(self.constraints) or 'none'}; every run holds {self.hold_s} s"
                 + (" at most (raced: it ends once it cannot beat the leader or has measured what a run can)"
                    if self.race else "") + "; the leader runs again "
                 f"with the machines' roles swapped until it has {evidence.REPLICATES} runs; a gain counts when its "
                 f"combined interval (with a between-run spread of {self.between:.0%} where no A/A runs calibrate "
                 f"it" + (f"; an A/A block of {self.aa_runs} runs first where none calibrates the first run"
                          if self.aa_runs else "")
                 + f") clears the floor ({self.floor:.0%}); budget {self.budget_s / 3600:.1f} h, about "
                 f"{self.expected_trials(ramp_up_s)} runs (~{self.trial_s(ramp_up_s) / 60:.0f} min each), then "
                 f"~{self.reserve_s(ramp_up_s) / 60:.0f} min to confirm the best by --repeat {confirm.REPEAT} "
                 f"against {' and '.join(confirm.against(self.control))}, and up to {sequential.LOOKS - 1} more "
                 f"blocks each (~{confirm.block_s(self.confirm_s(ramp_up_s)) / 60:.0f} min) while undecided and the "
                 "budget has room"]
        if known:
            lines.append("  first: " + "; ".join(f"{name} ({len(v)} of {len(self.space.params)} knobs)"
                                                 for name, v in known.items()))
        lines += [f"  {p.knob:34} {p.describe()}" for p in self.space.params]
        return "\n".join(lines)
