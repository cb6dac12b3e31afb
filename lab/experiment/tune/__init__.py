"""`./start.sh tune` (issue 39): the lab searches the knob space within a budget, each trial an ordinary A/B run,
and proves its answer.

One module per job: space (the knobs and ranges searched: the catalog's `tune:` or a space file), search (optuna's
TPE with constraints and successive halving over trial lengths, the study in SQLite or a shared storage:
interruptible, resumable), trials (a candidate as the run options of an A/B run, its verdict as the outcome),
confirm (the finalist by --repeat 2 against the control and the tuned set; its knob set), command (the budget,
tune.json, resume), standin (a lab whose "runs" are a known function of the knobs plus autocorrelated noise: the
tests').
"""
