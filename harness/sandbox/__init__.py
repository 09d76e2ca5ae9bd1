"""Isolation of one trial: bubblewrap or Docker backends, cgroups, seccomp, the trial's disk and uid, the agent's Python."""
