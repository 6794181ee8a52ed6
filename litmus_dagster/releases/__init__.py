"""Releases over time (SPEC §9): sensors, schedules, drift, regression alerts."""

release_assets: list = []
release_checks: list = []
release_sensors: list = []
release_schedules: list = []
release_jobs: list = []
