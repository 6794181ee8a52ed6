"""Labeling assets: the SPEC §5 decision boundary per configuration partition (wiring only)."""

import dagster as dg

from litmus.audit.audited import label_source_counts, refresh_audited_partition
from litmus.faults import rendezvous
from litmus.ingestion import derivation
from litmus.labeling import LABELER_VERSION
from litmus.labeling.refusal import default_classifier
from litmus.labeling.refusal_judge import JUDGE_PROMPT_VERSION, judge_partition
from litmus.labeling.sql import label_partition, unsafe_counts
from litmus_dagster.ingestion.assets import raw_trajectories, suite_catalog
from litmus_dagster.partitions import configurations
from litmus_dagster.resources import LitmusWarehouse, RefusalJudgeResource

# A change to the labeler or the refusal classifier marks every labeled partition stale.
LABELING_CODE_VERSION = f"labeler-{LABELER_VERSION}+{default_classifier().version}"


@dg.asset(
    group_name="labeling",
    deps=[raw_trajectories, suite_catalog],
    partitions_def=configurations,
    code_version=LABELING_CODE_VERSION,
    kinds={"duckdb"},
)
def labeled_trajectories(
    context: dg.AssetExecutionContext,
    warehouse: LitmusWarehouse,
    refusal_judge: RefusalJudgeResource,
) -> dg.MaterializeResult:
    """Every trajectory of the configuration labeled by the refusal–harm decision boundary
    (with the LLM refusal judge's verdicts first, when a judge is configured)."""
    rendezvous("labeling.started")  # parallel runs meet here in tests/test_scale_out_daemon.py
    judge = refusal_judge.build(warehouse.paths.home, progress=context.log.info)
    judge_metadata: dict[str, object] = {}
    with warehouse.get_connection() as con:
        # fail closed: never label rows that are no longer what their raw file gave
        derivation.record_pending(con)
        try:
            derivation.check_configuration(con, context.partition_key)
        except derivation.DerivationError as error:
            raise dg.Failure(str(error)) from None
        judge_key = None
        if judge is not None:
            judged = judge_partition(con, context.partition_key, judge)
            judge_key = (judge.settings.model, JUDGE_PROMPT_VERSION)
            judge_metadata = {
                "refusal_judge": judge.version,
                "judge_verdicts": judged.judged,
                "judge_failures": judged.failed,
                "judge_calls": judged.calls,
            }
        report = label_partition(con, context.partition_key, judge=judge_key)
        naive_unsafe = unsafe_counts(con, context.partition_key)
    context.log.info(f"{context.partition_key}: {report.trajectories} labeled, {report.outcomes}")
    return dg.MaterializeResult(
        metadata={
            "trajectories": report.trajectories,
            "outcomes": dg.MetadataValue.json(report.outcomes),
            "needs_audit": report.needs_audit,
            "needs_audit_reasons": dg.MetadataValue.json(report.audit_reasons),
            "naive_unsafe": int(naive_unsafe[0]),
            "corrected_unsafe": int(naive_unsafe[1]),
            "labeler_version": report.labeler_version,
            "classifier_version": report.classifier_version,
            **judge_metadata,
        }
    )


@dg.asset(
    group_name="labeling",
    deps=[labeled_trajectories, "audit_verdicts"],
    partitions_def=configurations,
    kinds={"duckdb"},
)
def audited_trajectories(
    context: dg.AssetExecutionContext, warehouse: LitmusWarehouse
) -> dg.MaterializeResult:
    """Labels with human audit verdicts applied; what the metrics read."""
    with warehouse.get_connection() as con:
        rows = refresh_audited_partition(con, context.partition_key)
        sources = label_source_counts(con, context.partition_key)
    return dg.MaterializeResult(
        metadata={"trajectories": rows, "label_sources": dg.MetadataValue.json(sources)}
    )
