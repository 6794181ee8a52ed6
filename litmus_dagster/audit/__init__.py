"""The human audit workflow (SPEC §8): the queue, the verdict history, the spot-checks that
measure the labeling error, the CLI.

``audit_assets`` is resolved on first use, so importing ``litmus_dagster.audit.cli`` (to build
the ``litmus`` parser) does not load Dagster.
"""

from typing import Any


def __getattr__(name: str) -> Any:
    if name != "audit_assets":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from litmus_dagster.audit.assets import (
        audit_queue,
        audit_verdicts,
        labeling_agreement,
        spot_check_sample,
    )

    globals()["audit_assets"] = [audit_verdicts, spot_check_sample, labeling_agreement, audit_queue]
    return globals()["audit_assets"]
