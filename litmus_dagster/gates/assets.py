"""Publication gates as Dagster assets and per-configuration asset checks (wiring only).

``publication_gates`` (one partition per configuration, after ``audited_trajectories``) runs
the Great Expectations gate suites over the configuration's audited rows and suites and
records every verdict in the ``publication_gates`` table; one asset check per gate and
configuration reports it in the UI (configuration, reason, failing count, example keys). The
checks are the asset's own (``check_specs``), evaluated in the same step from the rows it just
recorded: nine separate check steps per configuration each paid a step's events and a
warehouse connection to read one row back.

The checks are Dagster-``blocking``: a failed gate fails the configuration's
``publication_gates`` step (``DagsterAssetCheckFailedError``, after its verdicts are recorded)
and skips ``publishable_configuration``, the configuration's clearance for publication, so the
configuration's run stops there and shows why. Each configuration is scored in its own run,
so a block withholds exactly that configuration; the executor reports it as withheld, not as
a failure. The dbt metrics read the table (structurally broken configurations stay out of
them), ``metric_rate_gates`` checks the published rates after dbt, and the leaderboard
withholds every configuration the publication relation withholds
(``litmus.gates.publication_decision``), whichever run recorded its verdicts (fail closed).
"""

import warnings

import dagster as dg

from litmus.gates.publication_decision import NOT_GATED_REASON, publication
from litmus.gates.publication_gates import (
    GATE_MESSAGES,
    RATES_IN_UNIT_INTERVAL,
    TRAJECTORY_GATES,
    GateResult,
    evaluate_partition_gates,
    evaluate_precision_flags,
    evaluate_rate_gates,
    gate_rows_by_configuration,
    load_gate_suites,
    record_partition_gates,
    record_precision_flags,
    record_rate_gates,
    stored_gate_results,
)
from litmus.keys import configuration_key
from litmus.planning.status import partition_suites
from litmus_dagster.partitions import WAREHOUSE_POOL, configurations
from litmus_dagster.resources import LitmusWarehouse

GATES_GROUP = "gates"


def _gate_check_spec(gate: str) -> dg.AssetCheckSpec:
    # One evaluation per configuration partition, so the UI shows each configuration's verdict
    # (not whichever partition ran last); blocking, so a failed gate stops the configuration's
    # run before publishable_configuration.
    return dg.AssetCheckSpec(
        name=gate,
        asset="publication_gates",
        partitions_def=configurations,
        blocking=True,
        description=f"Fails with: {GATE_MESSAGES[gate]}",
    )


with warnings.catch_warnings():
    # partitioned asset checks are a preview feature of this Dagster version; they are what
    # shows each configuration's own verdict in the UI
    warnings.simplefilter("ignore", category=dg.PreviewWarning)
    TRAJECTORY_GATE_CHECKS = [_gate_check_spec(gate) for gate in TRAJECTORY_GATES]


@dg.asset(
    group_name=GATES_GROUP,
    deps=["audited_trajectories", "suite_catalog"],
    partitions_def=configurations,
    kinds={"duckdb", "great_expectations"},
    check_specs=TRAJECTORY_GATE_CHECKS,
    description=(
        "Fail-closed publication gates (SPEC §7) of one configuration, validated with the "
        "Great Expectations suites in expectations/ and recorded in the publication_gates "
        "table the leaderboard reads."
    ),
)
def publication_gates(
    context: dg.AssetExecutionContext, warehouse: LitmusWarehouse
) -> dg.MaterializeResult:
    suites = load_gate_suites()
    partition_key = context.partition_key
    with warehouse.get_connection() as con:
        results = evaluate_partition_gates(con, partition_key, suites)
        record_partition_gates(con, partition_key, results)
        configuration = configuration_key(con, partition_key)
        # the checks report what the table now holds, as every publisher reads it
        stored = stored_gate_results(con, partition_key)
        suite = partition_suites(con, partition_key).get(partition_key)
        decided = publication(con, [partition_key])[partition_key]
    failed = {r.gate: r.message for r in results if not r.passed}
    if failed:
        context.log.warning(f"{partition_key} withheld: {failed}")
    return dg.MaterializeResult(
        metadata={
            "configuration": configuration,
            "suite": suite or "unknown",  # one board per suite: the board it belongs to
            # as the publication relation has it now (its rates are checked after the metrics)
            "publication": decided.describe(),
            "failed_gates": dg.MetadataValue.json(failed),
            "passed_gates": [r.gate for r in results if r.passed],
            "expectation_suites": sorted({d.path.name for d in suites.values()}),
        },
        check_results=[
            _check_result(gate, configuration, partition_key, stored.get(gate))
            for gate in TRAJECTORY_GATES
        ],
    )


def _check_result(
    gate: str, configuration: str, partition_key: str, result: GateResult | None
) -> dg.AssetCheckResult:
    if result is None:
        return dg.AssetCheckResult(
            check_name=gate,
            passed=False,
            description=f"{GATE_MESSAGES[gate]} ({NOT_GATED_REASON})",
            metadata={"configuration": configuration, "partition_key": partition_key},
        )
    return dg.AssetCheckResult(
        check_name=gate,
        passed=result.passed is True,
        severity=dg.AssetCheckSeverity.ERROR,
        description=result.message if result.passed is not True else "passed",
        metadata={
            "configuration": configuration,
            "partition_key": partition_key,
            "message": result.message or "",
            "failing_count": result.failing_count,
            "examples": dg.MetadataValue.json(list(result.examples)),
            "failed_expectations": dg.MetadataValue.json(list(result.details)),
            "expectation_suite": result.expectation_suite or "",
        },
    )


@dg.asset(
    group_name=GATES_GROUP,
    deps=[publication_gates],
    partitions_def=configurations,
    kinds={"duckdb"},
    description=(
        "One configuration cleared by every publication gate of its run: materialized only "
        "when the blocking gate checks of publication_gates passed, so a withheld "
        "configuration's run stops before it. What the board finally publishes is the "
        "publication relation's decision (the rates and labeling-error gates come later)."
    ),
)
def publishable_configuration(
    context: dg.AssetExecutionContext, warehouse: LitmusWarehouse
) -> dg.MaterializeResult:
    partition_key = context.partition_key
    with warehouse.get_connection(read_only=True) as con:
        configuration = configuration_key(con, partition_key)
        passed = sorted(
            gate for gate, r in stored_gate_results(con, partition_key).items() if r.passed
        )
        decided = publication(con, [partition_key])[partition_key]
    return dg.MaterializeResult(
        metadata={
            "configuration": configuration,
            "passed_gates": passed,
            "publication": decided.describe(),
        }
    )


@dg.asset(
    group_name=GATES_GROUP,
    deps=["configuration_metrics", "metric_cis"],
    pool=WAREHOUSE_POOL,
    kinds={"duckdb", "great_expectations"},
    description=(
        "The rates-in-[0, 1] publication gate over the dbt metrics and bootstrap intervals of "
        "every gated configuration, recorded in publication_gates; and the precision flag "
        "(a CI over fewer than 20 families), recorded in precision_flags."
    ),
)
def metric_rate_gates(
    context: dg.AssetExecutionContext, warehouse: LitmusWarehouse
) -> dg.MaterializeResult:
    with warehouse.get_connection() as con:
        results = evaluate_rate_gates(con)
        record_rate_gates(con, results)
        flags = evaluate_precision_flags(con)
        record_precision_flags(con, flags)
        configurations = {
            key: configuration_key(con, key) for key in flags["partition_key"].unique()
        }
        withheld = {
            configuration_key(con, key): entry.board_reasons
            for key, entry in publication(con).items()
            if not entry.published
        }
    failed = {r.partition_key: list(r.examples) for r in results if not r.passed}
    if failed:
        context.log.warning(f"rates outside [0, 1]: {failed}")
    low = flags[flags["low_precision"]]
    return dg.MaterializeResult(
        metadata={
            "configurations_checked": len(results),
            "configurations_failed": dg.MetadataValue.json(failed),
            # the publication relation once every gate ran: what the leaderboard withholds
            "withheld": dg.MetadataValue.json(withheld),
            "low_precision_rates": dg.MetadataValue.json(
                {
                    configurations[key]: sorted(group["metric"].tolist())
                    for key, group in low.groupby("partition_key")
                }
            ),
        }
    )


# Not blocking on purpose: one unpartitioned check cannot block per configuration, and
# blocking the leaderboard would leave the previous one (possibly publishing this very
# configuration) in place. The leaderboard withholds the failing configurations itself, from
# the rows metric_rate_gates recorded.
@dg.asset_check(
    asset=metric_rate_gates,
    name=RATES_IN_UNIT_INTERVAL,
    pool=WAREHOUSE_POOL,
    description=f"Fails with: {GATE_MESSAGES[RATES_IN_UNIT_INTERVAL]}",
)
def rates_in_unit_interval(warehouse: LitmusWarehouse) -> dg.AssetCheckResult:
    with warehouse.get_connection() as con:
        rows = gate_rows_by_configuration(con, RATES_IN_UNIT_INTERVAL)
    failing = {
        (config or key): {"failing_count": int(count), "examples": list(examples)}
        for key, config, passed, count, examples in rows
        if passed is False
    }
    return dg.AssetCheckResult(
        passed=not failing,
        description=GATE_MESSAGES[RATES_IN_UNIT_INTERVAL] if failing else "passed",
        metadata={
            "configurations_checked": sum(1 for row in rows if row[2] is not None),
            "failing_configurations": dg.MetadataValue.json(failing),
        },
    )
