"""Trust (SPEC §10): run fingerprints and signed result receipts.

The assets are resolved on first use, so importing ``litmus_dagster.trust.cli`` (to build the
``litmus`` parser) does not load Dagster.
"""

from typing import Any

_ASSET_NAMES = ("leaderboard_receipt", "run_fingerprints", "trust_assets")


def __getattr__(name: str) -> Any:
    if name not in _ASSET_NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from litmus_dagster.trust import assets

    globals().update({n: getattr(assets, n) for n in _ASSET_NAMES})
    return globals()[name]


__all__ = ["leaderboard_receipt", "run_fingerprints", "trust_assets"]
