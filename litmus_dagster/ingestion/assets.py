"""Ingestion assets: suites and landed run files into the warehouse (wiring only)."""

from collections.abc import Iterable, Iterator

import dagster as dg

from litmus.faults import crash_point
from litmus.ingestion.run_files import (
    NotARegularFileError,
    ingest_files,
    retry_curable_quarantine,
    warehouse_partition_keys,
)
from litmus.ingestion.suites import (
    store_suite_file,
    stored_oracle_less_counts,
    stored_oracle_less_warnings,
)
from litmus.keys import configuration_key
from litmus.planning.status import partition_contents, suite_sizes
from litmus.runs import landed_files, not_ingested, settled_files, suite_files
from litmus_dagster.partitions import WAREHOUSE_POOL, configurations, register
from litmus_dagster.resources import LitmusWarehouse


@dg.asset(group_name="ingestion", pool=WAREHOUSE_POOL, kinds={"duckdb"})
def suite_catalog(
    context: dg.AssetExecutionContext, warehouse: LitmusWarehouse
) -> dg.MaterializeResult:
    """Benchmark suites (SPEC §3) from ``<home>/suites``, validated, stored with their oracles."""
    paths = warehouse.paths
    stored, unchanged, incomplete = [], [], []
    with warehouse.get_connection() as con:
        for path in suite_files(paths):
            outcome = store_suite_file(con, path)
            (stored if outcome.stored else unchanged).append(outcome.key)
            if not outcome.complete_siblings:
                incomplete.append(f"{outcome.key} ({outcome.sibling_policy})")
        n_instances = sum(instances for _, instances in suite_sizes(con).values())
        present = {*stored, *unchanged}
        for warning in stored_oracle_less_warnings(con, present):  # accepted, never silently
            context.log.warning(warning)
        oracle_less = {
            key: missing
            for key, (missing, _) in stored_oracle_less_counts(con).items()
            if key in present
        }
    context.log.info(f"suites stored: {stored or 'none'}; unchanged: {unchanged or 'none'}")
    return dg.MaterializeResult(
        metadata={
            "suites_stored": stored,
            "suites_unchanged": unchanged,
            "suites_with_missing_siblings": incomplete,
            "oracle_less_harmful_instances": dg.MetadataValue.json(oracle_less),
            "instances_in_warehouse": int(n_instances),
        }
    )


@dg.asset(group_name="ingestion", deps=[suite_catalog], pool=WAREHOUSE_POOL, kinds={"duckdb"})
def raw_run_files(
    context: dg.AssetExecutionContext, warehouse: LitmusWarehouse
) -> dg.MaterializeResult:
    """Landed run files kept by content hash and parsed into validated rows plus quarantine.

    Adds a ``configurations`` partition for every configuration the files contain.
    """
    paths = warehouse.paths
    reports = []
    # listed in this asset's metadata and by `litmus status` / `litmus quarantine`
    refused = not_ingested(paths)
    for name, reason in refused:
        context.log.warning(f"not ingested: {name}: {reason}")
    # a run started by hand (``litmus run``) must not read a file another process is writing
    settled, still_written = settled_files(landed_files(paths))
    for path in still_written:
        context.log.warning(f"{path.name}: still being written; left for the next run")
    added: list[str] = []

    def register_new(keys: Iterable[str]) -> None:
        added.extend(register(context.instance, keys))

    with warehouse.get_connection() as con:
        # configurations whose file was committed by a run killed before it registered them
        register_new(warehouse_partition_keys(con))
        for path, outcome in ingest_files(
            con,
            settled,
            paths,
            progress=lambda path, n: context.log.info(f"{path.name}: {n} records"),
        ):
            if isinstance(outcome, NotARegularFileError):  # replaced by a symlink since listed
                context.log.warning(str(outcome))
                refused.append((path.name, str(outcome)))
                continue
            report = outcome
            crash_point("ingest.file_committed")
            # each file's configurations are registered as soon as the file is committed
            register_new(report.partitions)
            context.log.info(report.summary())
            reports.append(report)
        # records held back for an unknown suite (or version, instance) that is loaded now
        retried = retry_curable_quarantine(con, paths)
        for report in retried:
            context.log.info(f"retried held-back records: {report.summary()}")
            register_new(report.partitions)
    crash_point("ingest.files_done")
    new_partitions = sorted({key for r in [*reports, *retried] for key in r.partitions})
    ingested = [r for r in reports if not r.skipped]
    return dg.MaterializeResult(
        metadata={
            "files_ingested": len(ingested),
            "files_already_ingested": len(reports) - len(ingested),
            "files_still_being_written": [path.name for path in still_written],
            "files_refused": dg.MetadataValue.json(dict(refused)),
            "records_in": sum(r.records_total for r in ingested),
            "records_accepted": sum(r.accepted for r in ingested),
            "records_quarantined": sum(r.quarantined for r in ingested),
            "records_retried": sum(r.records_total for r in retried),
            "records_recovered": sum(r.accepted for r in retried),
            "configurations_seen": new_partitions,
            "configurations_added": added,
            "quarantine_reasons": dg.MetadataValue.json(
                {k: v for r in ingested for k, v in r.reasons.items()}
            ),
        }
    )


@dg.asset(
    group_name="ingestion",
    deps=[raw_run_files],
    partitions_def=configurations,
    kinds={"duckdb"},
    # a configuration whose every landed record was quarantined has nothing to score: the
    # asset is then not materialized and the rest of the run is skipped, not failed
    output_required=False,
)
def raw_trajectories(
    context: dg.AssetExecutionContext, warehouse: LitmusWarehouse
) -> Iterator[dg.MaterializeResult]:
    """The accepted trajectories of one configuration (rows of ``raw_trajectories``)."""
    with warehouse.get_connection() as con:
        contents = partition_contents(con, context.partition_key)
        config = configuration_key(con, context.partition_key)
    if contents.trajectories == 0:
        context.log.warning(
            f"nothing to score for configuration {context.partition_key}: every record landed "
            "for it was quarantined (`litmus quarantine` lists them)"
        )
        return
    yield dg.MaterializeResult(
        metadata={
            "configuration": config,
            "trajectories": contents.trajectories,
            "runs": contents.runs,
            "source_files": contents.source_files,
            "suites": contents.suites,
        }
    )
