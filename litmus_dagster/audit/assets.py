"""The audit workflow as Dagster assets (wiring only).

``audit_verdicts`` is the append-only verdict history, written by ``litmus audit load``
outside any run (the CLI reports each load to the instance, so ``audited_trajectories``
shows as stale in the UI); ``audit_queue`` is what is still waiting for a person.
"""

import dagster as dg
import pandas as pd

from litmus.audit import audit_queue as unresolved_needs_audit
from litmus_dagster.partitions import WAREHOUSE_POOL
from litmus_dagster.resources import LitmusWarehouse

AUDIT_GROUP = "audit"
AUDIT_VERDICTS = dg.AssetKey("audit_verdicts")

audit_verdicts = dg.AssetSpec(
    AUDIT_VERDICTS,
    group_name=AUDIT_GROUP,
    kinds={"duckdb"},
    description=(
        "Append-only history of human audit verdicts and overrides (table audit_verdicts), "
        "loaded with `litmus audit load FILE`; each trajectory's newest verdict applies."
    ),
)

PREVIEW_COLUMNS = [
    "configuration",
    "trajectory_id",
    "split",
    "rule_outcome",
    "audit_reason_code",
    "why_needs_audit",
]


@dg.asset(
    group_name=AUDIT_GROUP,
    deps=["audited_trajectories", AUDIT_VERDICTS],
    pool=WAREHOUSE_POOL,
    kinds={"duckdb"},
    description=(
        "Unresolved needs_audit trajectories with the evidence an auditor needs (prompt, "
        "steps, why the rules could not decide). Export with `litmus audit export`."
    ),
)
def audit_queue(warehouse: LitmusWarehouse) -> dg.MaterializeResult:
    with warehouse.connect() as con:
        queue = unresolved_needs_audit(con)
        con.register("_audit_queue_rows", queue)
        try:
            con.execute("CREATE OR REPLACE TABLE audit_queue AS SELECT * FROM _audit_queue_rows")
        finally:
            con.unregister("_audit_queue_rows")
    frame = queue.select(PREVIEW_COLUMNS).to_pandas()
    by_configuration = (
        frame.groupby("configuration").size().sort_index().to_dict() if len(frame) else {}
    )
    by_reason = (
        frame.groupby("audit_reason_code").size().sort_index().to_dict() if len(frame) else {}
    )
    preview = frame.head(20)
    return dg.MaterializeResult(
        metadata={
            "rows": len(frame),
            "by_configuration": dg.MetadataValue.json(
                {key: int(value) for key, value in by_configuration.items()}
            ),
            "by_reason": dg.MetadataValue.json(
                {key: int(value) for key, value in by_reason.items()}
            ),
            "preview": dg.MetadataValue.md(_markdown(preview)),
            "export": "litmus audit export [--format csv|jsonl] [--out FILE]",
        }
    )


def _markdown(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "_no trajectory is waiting for audit_"
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = [
        "| " + " | ".join(str(value).replace("|", "\\|") for value in row) + " |"
        for row in frame.itertuples(index=False)
    ]
    return "\n".join([header, rule, *body])
