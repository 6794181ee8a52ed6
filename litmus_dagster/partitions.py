"""One dynamic partition per evaluated configuration (sanitized configuration key), and the one
place configuration partitions are registered with a Dagster instance."""

from collections.abc import Iterable

import dagster as dg

configurations = dg.DynamicPartitionsDefinition(name="configurations")

# The steps that write tables every configuration shares (ingestion of landed files and
# suites, dbt, the board, release drift, the receipt) carry this pool; a team instance limits
# it to one step at a time (deploy/team/dagster.yaml), so two of them never write at once on
# any backend. A configuration's own steps carry no pool: they run in parallel, one run per
# partition (the instance's per-partition run limit keeps two runs of one partition apart).
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
