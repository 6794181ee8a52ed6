"""Ingestion assets: suites and landed run files into the warehouse (wiring only)."""

import dagster as dg

from litmus.ingest import ingest_file
from litmus.runs import landed_files, settled_files, suite_files
from litmus.suite import store_suite_file
from litmus_dagster.partitions import WAREHOUSE_POOL, configurations
from litmus_dagster.resources import LitmusWarehouse


@dg.asset(group_name="ingestion", pool=WAREHOUSE_POOL, kinds={"duckdb"})
def suite_catalog(
    context: dg.AssetExecutionContext, warehouse: LitmusWarehouse
) -> dg.MaterializeResult:
    """Benchmark suites (SPEC §3) from ``<home>/suites``, validated, stored with their oracles."""
    paths = warehouse.paths
    stored, unchanged, incomplete = [], [], []
    with warehouse.connect() as con:
        for path in suite_files(paths):
            outcome = store_suite_file(con, path)
            (stored if outcome.stored else unchanged).append(outcome.key)
            if not outcome.complete_siblings:
                incomplete.append(f"{outcome.key} ({outcome.sibling_policy})")
        n_instances = con.execute("SELECT count(*) FROM suite_instances").fetchone()[0]
    context.log.info(f"suites stored: {stored or 'none'}; unchanged: {unchanged or 'none'}")
    return dg.MaterializeResult(
        metadata={
            "suites_stored": stored,
            "suites_unchanged": unchanged,
            "suites_with_missing_siblings": incomplete,
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
    # a run started by hand (``litmus run``) must not read a file another process is writing
    settled, still_written = settled_files(landed_files(paths))
    for path in still_written:
        context.log.warning(f"{path.name}: still being written; left for the next run")
    with warehouse.connect() as con:
        for path in settled:
            report = ingest_file(
                con,
                path,
                paths,
                progress=lambda n, name=path.name: context.log.info(f"{name}: {n} records"),
            )
            context.log.info(report.summary())
            reports.append(report)
    new_partitions = sorted({key for r in reports for key in r.partitions})
    known = set(context.instance.get_dynamic_partitions(configurations.name))
    added = [key for key in new_partitions if key not in known]
    if added:
        context.instance.add_dynamic_partitions(configurations.name, added)
    ingested = [r for r in reports if not r.skipped]
    return dg.MaterializeResult(
        metadata={
            "files_ingested": len(ingested),
            "files_already_ingested": len(reports) - len(ingested),
            "files_still_being_written": [path.name for path in still_written],
            "records_in": sum(r.records_total for r in ingested),
            "records_accepted": sum(r.accepted for r in ingested),
            "records_quarantined": sum(r.quarantined for r in ingested),
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
    pool=WAREHOUSE_POOL,
    kinds={"duckdb"},
)
def raw_trajectories(
    context: dg.AssetExecutionContext, warehouse: LitmusWarehouse
) -> dg.MaterializeResult:
    """The accepted trajectories of one configuration (rows of ``raw_trajectories``)."""
    with warehouse.connect() as con:
        row = con.execute(
            """
            SELECT count(*), count(DISTINCT run_id), count(DISTINCT source_file_hash),
                   any_value(config_key), count(DISTINCT suite || '@' || suite_version)
            FROM raw_trajectories WHERE partition_key = ?
            """,
            [context.partition_key],
        ).fetchone()
    trajectories, runs, files, config, suites = row
    if trajectories == 0:
        raise dg.Failure(f"no accepted trajectories for configuration {context.partition_key}")
    return dg.MaterializeResult(
        metadata={
            "configuration": config,
            "trajectories": int(trajectories),
            "runs": int(runs),
            "source_files": int(files),
            "suites": int(suites),
        }
    )
