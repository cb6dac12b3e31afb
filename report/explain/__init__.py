"""Explanations: why a machine held or fell (saturation, USE), where a request's time went (the request path),
what the instruments cost, how processes ended (restarts), what the profiles hold, and an instrument's overhead.
Imports: `report.stats` and `report.read`."""
