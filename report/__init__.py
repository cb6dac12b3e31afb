"""Turns one run folder of the Camel Tuning Lab into report.html and summary.md (see README.md).

Reads run folders only (run.json, <machine>/jmeter.jtl, <machine>/pcp/metrics.csv, <machine>/logs/);
it never imports the lab package, so it works on any old or copied run folder.
"""

MACHINES = ("default", "tuned")
