"""One dynamic partition per evaluated configuration (sanitized configuration key)."""

import dagster as dg

configurations = dg.DynamicPartitionsDefinition(name="configurations")

# Every asset that writes to the DuckDB file carries this pool, so Dagster runs at most one
# writer step at a time; the warehouse's file lock backs it up for CLI processes.
WAREHOUSE_POOL = "litmus_warehouse"
