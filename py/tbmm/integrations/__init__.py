"""tbmm inside other systems: the reward service and Harbor."""
