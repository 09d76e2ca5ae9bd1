"""Trials and sweeps: the runner, the results store, rescoring, export and import, trajectories in ATIF."""
