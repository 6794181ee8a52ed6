"""The lake maintenance job (wiring of litmus.lake_maintenance): compaction, snapshot expiry
and file clean-up of the DuckLake, as a job of its own that nothing runs beside.

Its one step is in the pool ``litmus_warehouse`` (no ingestion, dbt or publication step of
any run beside it on a team instance), and the domain function holds the lake's maintenance
lock exclusively, which every lake writer holds shared (litmus.warehouse): it waits for the
writers under way, and new ones wait for it. The weekly schedule is off by default; start it
in the UI, or run ``litmus lake-maintain``, which calls the same function. On the embedded
warehouse the job does nothing.
"""

from datetime import timedelta

import dagster as dg

from litmus.lake_maintenance import DEFAULT_KEEP, maintain_warehouse
from litmus_dagster.partitions import WAREHOUSE_POOL


class LakeMaintenanceConfig(dg.Config):
    # snapshots, and files nothing refers to, older than this many days are removed
    keep_days: float = DEFAULT_KEEP.days


@dg.op(pool=WAREHOUSE_POOL, description="DuckLake maintenance, alone (litmus.lake_maintenance)")
def maintain_lake_files(context: dg.OpExecutionContext, config: LakeMaintenanceConfig) -> None:
    report = maintain_warehouse(keep=timedelta(days=config.keep_days), progress=context.log.info)
    context.log.info(
        "the embedded warehouse needs no maintenance" if report is None else report.summary()
    )


@dg.job(
    name="maintain_lake",
    description="Compact the lake, expire old snapshots, delete unreferenced files: alone.",
)
def maintain_lake_job() -> None:
    maintain_lake_files()


maintain_lake_schedule = dg.ScheduleDefinition(
    name="maintain_lake_weekly",
    cron_schedule="43 3 * * 0",
    job=maintain_lake_job,
    default_status=dg.DefaultScheduleStatus.STOPPED,
    description="Weekly lake maintenance (off by default; the lake backend only).",
)
