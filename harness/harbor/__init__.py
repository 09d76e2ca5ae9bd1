"""Runs through Harbor and ingest of Harbor jobs."""
