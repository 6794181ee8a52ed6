"""Fail-closed publication gates (SPEC §7). Filled in by the gates work."""

gate_assets: list = []
gate_checks: list = []
