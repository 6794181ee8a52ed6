"""Metrics (SPEC §6): the leaderboard built from the dbt metric models and the bootstrap intervals,
and the boundary plot."""
