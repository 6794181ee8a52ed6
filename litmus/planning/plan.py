"""What must run, and why: the one plan every driver carries out (``litmus run``, ``litmus
rescore``, ``litmus demo``, the landing sensor and the re-score schedule).

The plan is computed from the warehouse (and, for the landing sensor, from the run files that
settled in the landing folder since it last looked). Each item names one action on one
configuration and the reasons for it:

- **ingest**: landed files that hold no readable configuration are still stored, so that
  their records are quarantined and listed (nothing to label afterwards);
- **label**: raw → labeled → audited → gated, for a configuration whose files just landed or
  whose labels are stale (``litmus.planning.status``: new rows, another labeler or
  refusal-classifier version, the suite stored again), or for every configuration on request;
- **reaudit**: audited rows rebuilt and gates re-run without re-labeling, for a configuration
  whose audit verdicts changed since its audited rows were built (``litmus audit load``) or
  whose gate verdicts are not recorded;
- **publish**: metrics, leaderboard, release drift, once anything above ran (under the
  daemon, the publish job's automation condition decides when: once a batch of scoring runs
  has finished, or the metric code changed, ``litmus_dagster.jobs.PUBLISH_WHEN_SCORED``).

A configuration appears in at most one of label and reaudit (labeling re-audits and re-gates
too). Items are ordered by action, then by partition key, so two drivers looking at the same
state produce the same plan. Plain Python over the warehouse: no Dagster here.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import duckdb

from litmus.planning.status import PartitionStatus

EVERYTHING_REASON = "re-scoring everything on request"
AUDIT_CHANGED_REASON = "audit verdicts or labels changed since the audited rows were built"
GATES_MISSING_REASON = "publication gates not recorded"
NO_CONFIGURATION_REASON = "landed file(s) with no readable configuration: stored and quarantined"


class Action(StrEnum):
    INGEST = "ingest"
    LABEL = "label"
    REAUDIT = "reaudit"
    PUBLISH = "publish"


ACTION_ORDER = (Action.INGEST, Action.LABEL, Action.REAUDIT, Action.PUBLISH)


@dataclass(frozen=True)
class PlanItem:
    action: Action
    reasons: tuple[str, ...]
    partition_key: str | None = None
    config_key: str | None = None
    # content hashes of the landed files this item stores before it labels (landing sensor)
    landed: tuple[str, ...] = ()

    def describe(self) -> str:
        subject = self.config_key or self.partition_key or "landing"
        return f"{subject}: {'; '.join(self.reasons)}"


@dataclass(frozen=True)
class Plan:
    items: tuple[PlanItem, ...] = ()

    def of(self, action: Action) -> list[PlanItem]:
        return [item for item in self.items if item.action == action]

    @property
    def empty(self) -> bool:
        return not self.items

    def partitions(self, *actions: Action) -> list[str]:
        return [
            item.partition_key
            for item in self.items
            if item.partition_key is not None and (not actions or item.action in actions)
        ]


@dataclass(frozen=True)
class WarehouseFacts:
    """What the plan is computed from: each configuration's label status, and which
    configurations' audited rows or gate verdicts are out of date."""

    statuses: tuple[PartitionStatus, ...] = ()
    audit_out_of_date: frozenset[str] = frozenset()
    ungated: frozenset[str] = frozenset()


@dataclass(frozen=True)
class LandedConfiguration:
    """A configuration found in newly landed files (landing sensor): its display key and the
    content hashes and names of those files."""

    config_key: str
    hashes: tuple[str, ...]
    names: tuple[str, ...] = field(default=())


def read_facts(con: duckdb.DuckDBPyConnection) -> WarehouseFacts:
    """The facts the plan needs. Reads only: a sensor evaluating every few seconds never
    writes (an audited table of an older shape makes every labeled configuration due for a
    re-audit, which rebuilds it)."""
    from litmus.audit.audited import stale_audited_partitions
    from litmus.gates.publication_gates import partitions_without_gates
    from litmus.planning.status import partition_statuses

    statuses = tuple(partition_statuses(con))
    return WarehouseFacts(
        statuses=statuses,
        audit_out_of_date=frozenset(stale_audited_partitions(con)),
        ungated=frozenset(partitions_without_gates(con, [s.partition_key for s in statuses])),
    )


def compute_plan(
    facts: WarehouseFacts,
    *,
    landed: Mapping[str, LandedConfiguration] | None = None,
    landed_without_configuration: Sequence[str] = (),
    everything: bool = False,
) -> Plan:
    """The plan for ``facts`` (and newly ``landed`` configurations, partition key → files)."""
    landed = landed or {}
    items: list[PlanItem] = []
    if landed_without_configuration and not landed:
        items.append(
            PlanItem(
                Action.INGEST,
                (NO_CONFIGURATION_REASON,),
                landed=tuple(sorted(landed_without_configuration)),
            )
        )
    by_key = {status.partition_key: status for status in facts.statuses}
    labeled: set[str] = set()
    for key in sorted(set(by_key) | set(landed)):
        status = by_key.get(key)
        arrived = landed.get(key)
        reasons: list[str] = []
        if arrived is not None:
            names = ", ".join(arrived.names) if arrived.names else f"{len(arrived.hashes)} file(s)"
            reasons.append(f"new run file(s) landed: {names}")
        if status is not None and status.stale:
            reasons.extend(status.stale_reasons)
        if everything and not reasons:
            reasons.append(EVERYTHING_REASON)
        if not reasons:
            continue
        labeled.add(key)
        config = status.config_key if status is not None else None
        items.append(
            PlanItem(
                Action.LABEL,
                tuple(reasons),
                partition_key=key,
                config_key=config or (arrived.config_key if arrived is not None else None),
                landed=tuple(sorted(arrived.hashes)) if arrived is not None else (),
            )
        )
    for key in sorted(by_key):
        if key in labeled:
            continue
        reasons = []
        if key in facts.audit_out_of_date:
            reasons.append(AUDIT_CHANGED_REASON)
        if key in facts.ungated:
            reasons.append(GATES_MISSING_REASON)
        if reasons:
            items.append(
                PlanItem(
                    Action.REAUDIT,
                    tuple(reasons),
                    partition_key=key,
                    config_key=by_key[key].config_key,
                )
            )
    changed = [item for item in items if item.action in (Action.LABEL, Action.REAUDIT)]
    if changed:
        items.append(
            PlanItem(
                Action.PUBLISH,
                (f"{len(changed)} configuration(s) re-labeled or re-audited",),
            )
        )
    return Plan(tuple(items))


def plan_from_warehouse(
    con: duckdb.DuckDBPyConnection,
    *,
    landed: Mapping[str, LandedConfiguration] | None = None,
    landed_without_configuration: Iterable[str] = (),
    everything: bool = False,
) -> Plan:
    return compute_plan(
        read_facts(con),
        landed=landed,
        landed_without_configuration=tuple(landed_without_configuration),
        everything=everything,
    )


UP_TO_DATE = "every configuration is labeled with the current labeler, classifier and suite"


def describe_rescore(plan: Plan) -> list[str]:
    """What ``litmus rescore`` (and its ``--dry-run``) says of a plan: each configuration to
    re-label or re-audit and why, or that there is none."""
    lines = [
        item.describe() if item.action == Action.LABEL else f"{item.describe()} (re-audit)"
        for item in plan.items
        if item.action in (Action.LABEL, Action.REAUDIT)
    ]
    return lines if not plan.empty else [UP_TO_DATE]
