"""Statistics: each machine's figures over its measured window, where it settled or stopped, the paired
uncertainty of tuned vs default, and the analyses of several runs (crossover trials, comparisons, sweeps), the
capacity search and the load generators. Imports: `report.read` only."""
