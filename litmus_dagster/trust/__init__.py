"""Trust (SPEC §10): run fingerprints and signed result receipts."""

from litmus_dagster.trust.assets import leaderboard_receipt, run_fingerprints, trust_assets

__all__ = ["leaderboard_receipt", "run_fingerprints", "trust_assets"]
