"""Readers of a run folder: run.json, the JTLs, PCP's metrics.csv, logs, profiles, the knobs, verdict.json and
sweep.json, and what is missing or damaged. Each file becomes plain data; nothing here computes a figure.
Imports: the standard library, numpy and `report.MACHINES` only (no other layer)."""
