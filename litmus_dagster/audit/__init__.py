"""The human audit workflow (SPEC §8): the queue, the verdict history, the CLI."""

from litmus_dagster.audit.assets import audit_queue, audit_verdicts

audit_assets: list = [audit_verdicts, audit_queue]
