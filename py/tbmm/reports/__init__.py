"""Leaderboard computation and its renderers: tables, plots, the HTML report, results files, the run viewer."""
