"""Trust (SPEC §10): run fingerprints and signed result receipts.

The Dagster assets load on first use, so that ``litmus`` commands which only register
their command-line options (``litmus_dagster.trust.cli``) do not import Dagster.
"""

from typing import Any

__all__ = ["leaderboard_receipt", "run_fingerprints", "trust_assets"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from litmus_dagster.trust import assets

        return getattr(assets, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
