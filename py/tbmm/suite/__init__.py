"""The task suite as data: task models, loading, compiled lite copies, data splits, where files live."""
