"""The audit workflow as Dagster assets (wiring only).

``audit_verdicts`` is the append-only verdict history, written by ``litmus audit load``
outside any run. That command only writes the warehouse (it never loads Dagster); the next
executor run or landing-sensor evaluation reports each load it finds there to the instance
(:func:`verdict_load_events`), so ``audited_trajectories`` shows as stale in the UI.
``audit_queue`` is what is still waiting for a person.
"""

import dagster as dg
import duckdb
import pandas as pd

from litmus.audit.queue_reuse import queue_summary, refresh_audit_queue
from litmus.audit.spotcheck import (
    SpotCheckPolicy,
    compute_labeling_agreement,
    draw_spot_checks,
    replace_labeling_agreement,
    sample_sizes,
)
from litmus.audit.workflow import LoadReport, verdict_loads
from litmus.neutralize import for_markdown
from litmus.reuse import record_digests
from litmus.warehouse import atomically
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


def _last_reported_load(instance: dg.DagsterInstance, con: duckdb.DuckDBPyConnection) -> int:
    latest = instance.get_latest_materialization_event(AUDIT_VERDICTS)
    reported = latest.asset_materialization if latest is not None else None
    if reported is None:
        return 0
    if "load_seq" in reported.metadata:
        return int(reported.metadata["load_seq"].value)
    # reported before loads carried their number: find it by the file's digest
    digest = reported.metadata.get("sha256")
    sha256 = digest.value if digest is not None else None
    return max((load.load_seq for load in verdict_loads(con) if load.sha256 == sha256), default=0)


def verdict_load_events(
    instance: dg.DagsterInstance, con: duckdb.DuckDBPyConnection
) -> list[dg.AssetMaterialization]:
    """One ``audit_verdicts`` materialization per verdict file loaded since the last one
    ``instance`` records, oldest first (none when the instance is up to date)."""
    return [
        _load_materialization(load)
        for load in verdict_loads(con, after=_last_reported_load(instance, con))
    ]


def _load_materialization(load: LoadReport) -> dg.AssetMaterialization:
    return dg.AssetMaterialization(
        asset_key=AUDIT_VERDICTS,
        description=load.summary(),
        metadata={
            "source": load.source.name,
            "sha256": load.sha256,
            "verdicts": load.loaded,
            "audits": load.audits,
            "overrides": load.overrides,
            "configurations": list(load.configurations),
            "load_seq": load.load_seq,
        },
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
    deps=["audited_trajectories"],
    pool=WAREHOUSE_POOL,
    kinds={"duckdb"},
    description=(
        "This publication's spot-check sample: a reproducible, stratified random share of "
        "every configuration's rule-decided trajectories, queued for a blind human check "
        "(never blocks publication; docs/statistics.md)."
    ),
)
def spot_check_sample(warehouse: LitmusWarehouse) -> dg.MaterializeResult:
    policy = SpotCheckPolicy.from_environment()
    with warehouse.get_connection() as con:
        drawn = draw_spot_checks(con, policy)
        by_configuration = sample_sizes(con)
    return dg.MaterializeResult(
        metadata={
            "rows": drawn,
            "by_configuration": dg.MetadataValue.json(
                {key: int(value) for key, value in by_configuration.items()}
            ),
            "share": policy.share,
            "minimum_per_stratum": policy.minimum,
            "seed": policy.seed,
        }
    )


@dg.asset(
    group_name=AUDIT_GROUP,
    deps=[spot_check_sample, AUDIT_VERDICTS, "metric_cis"],
    pool=WAREHOUSE_POOL,
    kinds={"python", "duckdb"},
    description=(
        "Per configuration: agreement of the decided spot-checks with the rule labels (with "
        "an interval), the rates corrected for the measured labeling error, and whether the "
        "disagreement exceeds the bound (then the leaderboard withholds the configuration)."
    ),
)
def labeling_agreement(warehouse: LitmusWarehouse) -> dg.MaterializeResult:
    policy = SpotCheckPolicy.from_environment()
    with warehouse.get_connection() as con:
        frame = compute_labeling_agreement(con, policy)
        replace_labeling_agreement(con, frame)
    shown = frame[["partition_key", "spot_checks_decided", "labeling_agreement", "labeling_status"]]
    return dg.MaterializeResult(
        metadata={
            "configurations": len(frame),
            "withheld": dg.MetadataValue.json(
                frame.loc[frame["labeling_status"] == "withheld", "partition_key"].tolist()
            ),
            "agreement": dg.MetadataValue.md(_markdown(shown)),
            "max_disagreement": policy.max_disagreement,
            "min_decided": policy.min_decided,
        }
    )


@dg.asset(
    group_name=AUDIT_GROUP,
    deps=["audited_trajectories", AUDIT_VERDICTS, spot_check_sample],
    pool=WAREHOUSE_POOL,
    kinds={"duckdb"},
    description=(
        "Unresolved needs_audit trajectories with the evidence an auditor needs (prompt, "
        "steps, why the rules could not decide), then the undecided spot-checks (queue = "
        "spot_check). Export with `litmus audit export`."
    ),
)
def audit_queue(warehouse: LitmusWarehouse) -> dg.MaterializeResult:
    with warehouse.get_connection() as con:

        def rebuild() -> list[str]:
            # configurations whose labels, spot-checks, verdicts and suites did not change
            # keep their stored rows; only the others are built (litmus.audit.queue_reuse)
            digests, recomputed = refresh_audit_queue(con)
            record_digests(con, "audit_queue", digests)
            return recomputed

        recomputed = atomically(con, rebuild, what="audit queue")
        rows, by_configuration, by_reason, preview = queue_summary(con, PREVIEW_COLUMNS)
    return dg.MaterializeResult(
        metadata={
            "rows": rows,
            "by_configuration": dg.MetadataValue.json(by_configuration),
            "by_reason": dg.MetadataValue.json(by_reason),
            "preview": dg.MetadataValue.md(_markdown(preview.to_pandas())),
            "recomputed": dg.MetadataValue.json(recomputed),
            "export": "litmus audit export [--format csv|jsonl] [--out FILE]",
        }
    )


def _markdown(frame: pd.DataFrame) -> str:
    if frame.empty:
        return "_no trajectory is waiting for audit_"
    header = "| " + " | ".join(frame.columns) + " |"
    rule = "|" + "---|" * len(frame.columns)
    body = [
        "| " + " | ".join(for_markdown(value) for value in row) + " |"
        for row in frame.itertuples(index=False)
    ]
    return "\n".join([header, rule, *body])
