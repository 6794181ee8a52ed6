"""The human audit workflow (SPEC §8). Filled in by the audit work."""

audit_assets: list = []
