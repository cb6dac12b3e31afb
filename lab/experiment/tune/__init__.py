"""`./start.sh tune` (issue 39): the lab searches the knob space within a budget, each trial an ordinary A/B run.

One module per job: space (the knobs and ranges searched: the catalog's `tune:` or a space file), search (optuna's
TPE with constraints and successive halving over trial lengths, the study in SQLite: interruptible, resumable),
standin (a lab whose "runs" are a known function of the knobs plus autocorrelated noise: the tests' and the
benchmark's).
"""
