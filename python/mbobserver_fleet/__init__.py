"""mbobserver-fleet: replay a fleet of recorded drives through mbobserverd on a Dask cluster.

Modules: cli (command line), locate (binaries, scenarios), fields (the one map from the daemon's
--summary-json and mbobserver-eval's report to a row), drive (the unit of work, run on a
worker), fleet (the run: cluster, resume, journal), generate (synthetic fleet), report (CSV,
JSON lines, HTML and figures).
"""
