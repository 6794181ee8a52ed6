"""One dynamic partition per evaluated configuration (sanitized configuration key), and the one
place configuration partitions are registered with a Dagster instance."""

from collections.abc import Iterable

import dagster as dg

configurations = dg.DynamicPartitionsDefinition(name="configurations")

# Every asset that writes to the DuckDB file carries this pool, so Dagster runs at most one
# writer step at a time; the warehouse's file lock backs it up for CLI processes.
WAREHOUSE_POOL = "litmus_warehouse"


def unregistered(instance: dg.DagsterInstance, keys: Iterable[str]) -> list[str]:
    """The configuration partitions among ``keys`` the instance does not know yet, sorted."""
    known = set(instance.get_dynamic_partitions(configurations.name))
    return sorted(set(keys) - known)


def register(instance: dg.DagsterInstance, keys: Iterable[str]) -> list[str]:
    """Add the configuration partitions the instance does not know yet; returns them. A
    warehouse can outlive its Dagster instance, and ingestion registers as it commits."""
    new = unregistered(instance, keys)
    if new:
        instance.add_dynamic_partitions(configurations.name, new)
    return new


def registration_requests(
    instance: dg.DagsterInstance, keys: Iterable[str]
) -> list[dg.AddDynamicPartitionsRequest]:
    """For a sensor, which registers through its result rather than by writing itself."""
    new = unregistered(instance, keys)
    return [configurations.build_add_request(new)] if new else []
