"""The plan (litmus/planning/plan.py): given a warehouse state, it names exactly what must run and
why;
and the landing sensor, the re-score schedule and ``litmus run`` carry out the same plan."""

from __future__ import annotations

from pathlib import Path

import dagster as dg
import duckdb
import pytest
from test_releases_status import labeled_warehouse

from conftest import CONFIG, call, record, write_jsonl
from litmus.audit.audited import refresh_audited_partition
from litmus.gates.publication_gates import evaluate_partition_gates, record_partition_gates
from litmus.labeling import LABELER_VERSION
from litmus.planning.plan import (
    AUDIT_CHANGED_REASON,
    EVERYTHING_REASON,
    GATES_MISSING_REASON,
    NO_CONFIGURATION_REASON,
    Action,
    LandedConfiguration,
    Plan,
    WarehouseFacts,
    compute_plan,
    plan_from_warehouse,
)
from litmus.planning.status import PartitionStatus
from litmus.settings import LitmusPaths
from litmus.warehouse import connect

OTHER = {**CONFIG, "model": "other-model"}


def summary(plan: Plan) -> list[tuple[str, str | None, tuple[str, ...]]]:
    return [(str(item.action), item.partition_key, item.reasons) for item in plan.items]


def status(key: str, *reasons: str) -> PartitionStatus:
    return PartitionStatus(
        partition_key=key,
        config_key=f"config of {key}",
        trajectories=4,
        labeled=4,
        labeler_versions=(LABELER_VERSION,),
        outcomes={},
        stale_reasons=reasons,
    )


def gate(con: duckdb.DuckDBPyConnection, key: str) -> None:
    refresh_audited_partition(con, key)
    record_partition_gates(con, key, evaluate_partition_gates(con, key))


# ----------------------------------------------------------------------------- pure rules


def test_a_current_warehouse_plans_nothing() -> None:
    assert compute_plan(WarehouseFacts(statuses=(status("a"), status("b")))).empty
    assert compute_plan(WarehouseFacts()).empty


def test_each_item_names_its_configuration_and_every_reason() -> None:
    facts = WarehouseFacts(
        statuses=(
            status("c", "labeler version 0.9 (current 1.0)", "suite stored again"),
            status("a"),
            status("b"),
            status("d"),
        ),
        audit_out_of_date=frozenset({"b", "c"}),
        ungated=frozenset({"b", "d"}),
    )
    plan = compute_plan(facts)
    assert summary(plan) == [
        ("label", "c", ("labeler version 0.9 (current 1.0)", "suite stored again")),
        # labeling re-audits and re-gates: c is not re-audited on top
        ("reaudit", "b", (AUDIT_CHANGED_REASON, GATES_MISSING_REASON)),
        ("reaudit", "d", (GATES_MISSING_REASON,)),
        ("publish", None, ("3 configuration(s) re-labeled or re-audited",)),
    ]
    assert plan.of(Action.LABEL)[0].config_key == "config of c"


def test_landed_files_are_labeled_with_their_names_and_everything_relabels_all() -> None:
    landed = {"new": LandedConfiguration("config of new", ("f" * 64,), ("run.jsonl",))}
    facts = WarehouseFacts(statuses=(status("a"), status("b", "1 of 4 trajectories labeled")))
    assert summary(compute_plan(facts, landed=landed)) == [
        ("label", "b", ("1 of 4 trajectories labeled",)),
        ("label", "new", ("new run file(s) landed: run.jsonl",)),
        ("publish", None, ("2 configuration(s) re-labeled or re-audited",)),
    ]
    assert compute_plan(facts, landed=landed).of(Action.LABEL)[1].landed == ("f" * 64,)
    assert summary(compute_plan(facts, everything=True))[:2] == [
        ("label", "a", (EVERYTHING_REASON,)),
        ("label", "b", ("1 of 4 trajectories labeled",)),
    ]


def test_the_daemon_asks_once_per_configuration_but_never_drops_a_landed_file() -> None:
    from litmus_dagster.jobs import run_requests

    landed = {"new": LandedConfiguration("config of new", ("f" * 64,), ("run.jsonl",))}
    facts = WarehouseFacts(
        statuses=(status("new"), status("b", "1 of 4 trajectories labeled"), status("c")),
        ungated=frozenset({"c"}),
    )
    plan = compute_plan(facts, landed=landed)
    requests = run_requests(plan, trigger="landing", running={"new", "b"}, run_keys=True)
    # b and new are being scored; new's landed file is requested all the same
    assert [(r.job_name, r.partition_key) for r in requests] == [
        ("land_and_score_configuration", "new"),
        ("refresh_audit", "c"),
    ]
    assert requests[0].run_key == run_requests(plan, trigger="landing", run_keys=True)[1].run_key


def test_a_landed_file_without_configuration_is_still_ingested() -> None:
    plan = compute_plan(WarehouseFacts(), landed_without_configuration=["e" * 64])
    assert summary(plan) == [("ingest", None, (NO_CONFIGURATION_REASON,))]
    assert plan.items[0].landed == ("e" * 64,)


# ----------------------------------------------------------------------------- real warehouse


def test_the_plan_follows_the_warehouse_state(
    litmus_home: LitmusPaths, warehouse: duckdb.DuckDBPyConnection
) -> None:
    key = labeled_warehouse(warehouse, litmus_home)
    # labeled, never audited nor gated
    assert summary(plan_from_warehouse(warehouse))[:1] == [
        ("reaudit", key, (AUDIT_CHANGED_REASON, GATES_MISSING_REASON))
    ]
    gate(warehouse, key)
    assert plan_from_warehouse(warehouse).empty
    assert summary(plan_from_warehouse(warehouse, everything=True))[:1] == [
        ("label", key, (EVERYTHING_REASON,))
    ]

    warehouse.execute("UPDATE trajectory_labels SET labeler_version = '0.9.0'")
    assert summary(plan_from_warehouse(warehouse))[:1] == [
        ("label", key, (f"labeler version 0.9.0 (current {LABELER_VERSION})",))
    ]
    warehouse.execute("UPDATE trajectory_labels SET labeler_version = ?", [LABELER_VERSION])

    # an audited row rebuilt apart from its label (as when verdicts were loaded since)
    warehouse.execute(
        "UPDATE audited_trajectories SET labeled_at = labeled_at - INTERVAL 1 DAY "
        "WHERE trajectory_id IN (SELECT trajectory_id FROM audited_trajectories LIMIT 1)"
    )
    assert summary(plan_from_warehouse(warehouse))[:1] == [
        ("reaudit", key, (AUDIT_CHANGED_REASON,))
    ]
    gate(warehouse, key)
    warehouse.execute("DELETE FROM publication_gates")
    assert summary(plan_from_warehouse(warehouse))[:1] == [
        ("reaudit", key, (GATES_MISSING_REASON,))
    ]


def _sensor_plan(paths: LitmusPaths, instance: dg.DagsterInstance) -> Plan:
    from litmus_dagster.releases.sensors import landing_plan
    from litmus_dagster.resources import LitmusWarehouse

    context = dg.build_sensor_context(instance=instance)
    plan, _, _ = landing_plan(context, LitmusWarehouse(home=str(paths.home)))
    return plan


def test_the_sensor_the_schedule_and_litmus_run_carry_out_the_same_plan(
    litmus_home: LitmusPaths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from litmus.planning.plan import read_facts
    from litmus_dagster.pipeline import run_pipeline
    from litmus_dagster.releases.sensors import landing_sensor, rescore_schedule
    from litmus_dagster.resources import LitmusWarehouse

    paths = litmus_home
    monkeypatch.setenv("DBT_TARGET_PATH", str(tmp_path / "dbt_target"))
    with connect(paths.duckdb_path) as con:
        stale = labeled_warehouse(con, paths)
        gate(con, stale)
        con.execute("UPDATE trajectory_labels SET labeler_version = '0.9.0'")
        # a second configuration, ingested and labeled but never audited nor gated
        other = write_jsonl(
            paths.landing / "other.jsonl",
            [
                record("f1/hs", [call("fs.list")], run_id="run-2", config=OTHER),
                record("f1/eb", [call("fs.list")], run_id="run-2", config=OTHER),
                record("f1/hb", [call("fs.list")], run_id="run-2", config=OTHER),
                record("f1/cm", [call("fs.list")], run_id="run-2", config=OTHER),
            ],
        )
        from litmus.ingestion.run_files import ingest_file
        from litmus.labeling.sql import label_partition

        [ungated] = ingest_file(con, other, paths).partitions
        label_partition(con, ungated)
        expected = compute_plan(read_facts(con))
    assert summary(expected) == [
        ("label", stale, (f"labeler version 0.9.0 (current {LABELER_VERSION})",)),
        ("reaudit", ungated, (AUDIT_CHANGED_REASON, GATES_MISSING_REASON)),
        ("publish", None, ("2 configuration(s) re-labeled or re-audited",)),
    ]

    warehouse = LitmusWarehouse(home=str(paths.home))
    with dg.instance_for_test() as instance:
        # the landing sensor: both landed files were stored before, so only the warehouse
        # speaks (first sighting: the files still settle)
        assert summary(_sensor_plan(paths, instance)) == summary(expected)
        sensor = landing_sensor(dg.build_sensor_context(instance=instance, resources={
            "warehouse": warehouse}))  # fmt: skip
        assert [(r.job_name, r.partition_key) for r in sensor.run_requests] == [
            ("score_configuration", stale),
            ("refresh_audit", ungated),
        ]
        with dg.build_schedule_context(
            instance=instance, resources={"warehouse": warehouse}
        ) as context:
            scheduled = rescore_schedule(context)
        assert [(r.partition_key, r.tags["litmus/stale_reason"]) for r in scheduled] == [
            (item.partition_key, "; ".join(item.reasons)) for item in expected.items[:2]
        ]

    result = run_pipeline(paths, instance=dg.DagsterInstance.ephemeral(), progress=lambda _: None)
    assert summary(result.plan) == summary(expected)
    assert (result.scored_partitions, result.refreshed_partitions) == ([stale], [ungated])
    assert result.published
    with connect(paths.duckdb_path) as con:
        assert plan_from_warehouse(con).empty  # carried out: nothing left to do
