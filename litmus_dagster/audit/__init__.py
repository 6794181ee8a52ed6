"""The human audit workflow (SPEC §8): the queue, the verdict history, the spot-checks that
measure the labeling error, the CLI."""

from litmus_dagster.audit.assets import (
    audit_queue,
    audit_verdicts,
    labeling_agreement,
    spot_check_sample,
)

audit_assets: list = [audit_verdicts, spot_check_sample, labeling_agreement, audit_queue]
