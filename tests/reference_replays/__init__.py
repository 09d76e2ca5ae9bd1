"""Frozen copies of replays as they were before a rewrite, kept to compare values against."""
