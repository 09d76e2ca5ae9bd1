"""The verdict's vocabulary: exact numbers, artifact paths, comparison rules, gate forms, verification caps. Knows no task."""
