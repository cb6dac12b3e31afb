"""`./start.sh tune` (issues 39, 54, 86): the lab searches the knob space within a budget, each run an ordinary A/B
run, and proves its answer. One module per job:

- space: the knobs and ranges searched (the catalog's `tune:` or a space file), define-by-run;
- model: what the sampler models of them, one fixed distribution per knob, so that every knob is in the joint model;
- region: --around, the space narrowed around a set's values;
- warm: past runs of the same question;
- search: which run is next (optuna's TPE with constraints after the known sets, the leader run again with the
  machines swapped, a proposal of values that ran taken as their run again);
- storage: the study in SQLite or a shared database, with a heartbeat (an interrupted trial failed, an interrupted
  known set queued again): interruptible, resumable;
- evidence: a run's outcome, a candidate's runs combined as a crossover with the between-run spread, when a gain
  counts;
- trials: a candidate as the run options of an A/B run, the known sets as candidates, its verdict at steady state
  as the outcome;
- overlap: a run's report written while the next run is provisioned;
- confirm: the finalist by --repeat 4 against the control and the tuned set, block after block while undecided; its
  knob set;
- sequential: each look's level, spent so that all looks keep 95 %; what it decides;
- plan: the options as the search reads them, the budget shared between the search and the confirmations;
- command: the search within the budget, the A/A block, the proof, resume; folder: tune.json;
- standin: a lab whose "runs" are a known function of the knobs plus noise (the tests' and bench/tuner.py's);
  standin_shape: that function and its honest draw; standin_stats: its intervals as the lab's report makes them.
"""
