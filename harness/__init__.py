"""Running agents on tbmm tasks: sandbox backends, agents, results store."""
