"""The human audit workflow (SPEC §8): the queue, the verdict history, the CLI.

The Dagster assets load on first use, so that ``litmus`` commands which only register
their command-line options (``litmus_dagster.audit.cli``) do not import Dagster.
"""

from typing import Any

__all__ = ["audit_assets"]


def __getattr__(name: str) -> Any:
    if name == "audit_assets":
        from litmus_dagster.audit.assets import audit_queue, audit_verdicts

        return [audit_verdicts, audit_queue]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
