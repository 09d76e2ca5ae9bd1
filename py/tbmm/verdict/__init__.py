"""Artifact -> (replay) -> gate -> score, in Python: the gate, exact scoring, the naive floor, adversarial corpora, the pipeline that resolves an artifact once."""
