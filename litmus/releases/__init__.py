"""Releases (SPEC §9): landing-folder watching, release drift and plug-in deltas, regression alerts
and the drift plot."""
