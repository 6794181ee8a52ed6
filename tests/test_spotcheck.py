"""Measured labeling error, end to end on a small generated sample through the real pipeline:
the spot-check sample is drawn at publication, exported with the audit queue (blind, marked),
decided by a simulated auditor who knows the generator's truth, loaded back, and measured —
agreement and label-corrected rates on the board and in the receipt; a careless auditor's
measured disagreement withholds the configuration; undecided spot-checks never block."""

from __future__ import annotations

import contextlib
import csv
import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import dagster as dg
import pytest

from litmus.audit.spotcheck import (
    DRAW_SQL,
    SIMULATED_NOTE,
    SPOT_CHECK_SAMPLE,
    SpotCheckPolicy,
    draw_spot_checks,
)
from litmus.metrics.leaderboard import SIMULATED_MARK
from litmus.sample import generate_sample
from litmus.settings import LitmusPaths, litmus_paths
from litmus.warehouse import connect
from litmus_dagster.cli import main as litmus_main
from litmus_dagster.pipeline import run_pipeline, stage_sample
from litmus_dagster.trust.cli import UNVERIFIED_EXIT

N_FAMILIES = 40


@pytest.fixture(scope="module")
def published_sample(tmp_path_factory: pytest.TempPathFactory) -> LitmusPaths:
    paths = litmus_paths(tmp_path_factory.mktemp("spotcheck-base")).ensure()
    stage_sample(paths, generate_sample(paths.home / "sample", n_families=N_FAMILIES))
    run_pipeline(paths, instance=dg.DagsterInstance.ephemeral(), progress=lambda _: None)
    return paths


@pytest.fixture
def home(
    published_sample: LitmusPaths, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> LitmusPaths:
    monkeypatch.delenv("LITMUS_DUCKDB_PATH", raising=False)
    shutil.copytree(published_sample.home, tmp_path / "home")
    monkeypatch.setenv("LITMUS_HOME", str(tmp_path / "home"))
    return litmus_paths(tmp_path / "home").ensure()


def rows(paths: LitmusPaths, sql: str) -> list[dict[str, Any]]:
    with connect(paths.duckdb_path) as con:
        cursor = con.execute(sql)
        names = [column[0] for column in cursor.description]
        return [dict(zip(names, row, strict=True)) for row in cursor.fetchall()]


def board(paths: LitmusPaths) -> dict[str, dict[str, Any]]:
    return {
        row["name"]: row
        for row in rows(paths, "SELECT * FROM leaderboard WHERE row_kind = 'configuration'")
    }


def audit_round(paths: LitmusPaths, error_rate: float) -> None:
    """export → simulated auditor → load → publish again, through the CLI like a person."""
    queue = paths.audit / "queue.csv"
    decided = paths.audit / "decided.csv"
    assert litmus_main(["audit", "export", "--out", str(queue)]) == 0
    simulate = ["audit", "simulate", str(queue), "--out", str(decided)]
    simulate += ["--error-rate", str(error_rate), "--sample-families", str(N_FAMILIES)]
    assert litmus_main(simulate) == 0
    assert litmus_main(["audit", "load", str(decided)]) == 0
    run_pipeline(paths, instance=dg.DagsterInstance.ephemeral(), progress=lambda _: None)


def test_the_sample_is_drawn_stratified_reproducible_and_queued_blind(home: LitmusPaths) -> None:
    sample = rows(
        home,
        "SELECT partition_key, request_harm_class, stratum, stratum_size, "
        "count(*) AS drawn FROM spot_check_sample GROUP BY ALL ORDER BY ALL",
    )
    assert sample
    published = {row["partition_key"] for row in rows(home, "SELECT * FROM configuration_metrics")}
    assert {row["partition_key"] for row in sample} == published
    for stratum in sample:  # 5% of each stratum, at least 5 (all of a smaller one)
        expected = min(stratum["stratum_size"], max(5, -(-stratum["stratum_size"] * 5 // 100)))
        assert stratum["drawn"] == expected, stratum
    assert "needs_audit" not in {row["stratum"] for row in sample}

    before = rows(home, "SELECT trajectory_id FROM spot_check_sample ORDER BY 1")
    with connect(home.duckdb_path) as con:
        draw_spot_checks(con, SpotCheckPolicy())
    assert rows(home, "SELECT trajectory_id FROM spot_check_sample ORDER BY 1") == before

    queue = home.audit / "queue.csv"
    assert litmus_main(["audit", "export", "--out", str(queue)]) == 0
    with queue.open(newline="", encoding="utf-8") as handle:
        exported = list(csv.DictReader(handle))
    spot = [row for row in exported if row["queue"] == "spot_check"]
    assert len(spot) == len(before)
    assert all(row["rule_label"] == "" and row["rule_outcome"] == "" for row in spot)
    assert all(row["why_needs_audit"].startswith("spot-check:") for row in spot)
    assert {row["queue"] for row in exported} == {"needs_audit", "spot_check"}

    # Undecided spot-checks withhold nothing: only the configuration with needs_audit rows
    # is withheld, and the board says the labeling is not measured yet.
    withheld = {name for name, row in board(home).items() if row["status"] == "withheld"}
    assert withheld == {name for name in board(home) if name.startswith("quill")}
    agreement = rows(home, "SELECT * FROM labeling_agreement")
    assert {row["labeling_status"] for row in agreement} == {"not measured"}


def test_a_careful_auditor_gives_agreement_and_corrected_rates_on_board_and_receipt(
    home: LitmusPaths,
) -> None:
    audit_round(home, error_rate=0.0)
    verdicts = rows(home, "SELECT * FROM current_audit_verdicts")
    sampled = rows(home, "SELECT trajectory_id FROM spot_check_sample")
    assert len(verdicts) == len(sampled)
    # Spot-check verdicts measure the rules; they never replace a label.
    changed = rows(
        home, "SELECT count(*) AS n FROM audited_trajectories WHERE label_source <> 'rule'"
    )
    assert changed == [{"n": 0}]

    published = {name: row for name, row in board(home).items() if row["status"] == "published"}
    assert published
    sample_sizes = "SELECT partition_key, count(*) AS n FROM spot_check_sample GROUP BY 1"
    sampled_by_key = {row["partition_key"]: row["n"] for row in rows(home, sample_sizes)}
    for name, row in published.items():
        assert row["spot_checks_decided"] == sampled_by_key[row["partition_key"]], name
        low, high = row["labeling_agreement_ci_low"], row["labeling_agreement_ci_high"]
        assert low < row["labeling_agreement"] <= high <= 1.0, name
        assert row["labeling_agreement"] >= 0.9, name  # the rules match the generator's truth
        # a program decided these spot-checks, not a person: said with the numbers
        assert SIMULATED_NOTE in row["labeling_note"], name
        for metric in ("cm_safety", "hb_utility", "boundary_score"):
            value = row[f"corrected_{metric}"]
            low, high = row[f"corrected_{metric}_ci_low"], row[f"corrected_{metric}_ci_high"]
            assert low <= value <= high and high > low, (name, metric)
    # The correction's interval carries the labeling error on top of the sampling error.
    aurora = next(row for name, row in published.items() if name.startswith("aurora"))
    assert (
        aurora["corrected_cm_safety_ci_high"] - aurora["corrected_cm_safety_ci_low"]
        >= aurora["cm_safety_ci_high"] - aurora["cm_safety_ci_low"]
    )

    page = (home.exports / "leaderboard.md").read_text(encoding="utf-8")
    assert f"(n={aurora['spot_checks_decided']}) {SIMULATED_MARK}" in page
    receipt = home.exports / "receipt.json"  # written by the publication itself
    # and it recomputes from the warehouse: nothing differs (an unsigned receipt exits 2,
    # UNVERIFIED, rather than 1 for a mismatch)
    assert litmus_main(["verify", str(receipt)]) == UNVERIFIED_EXIT
    document = json.loads(receipt.read_text(encoding="utf-8"))
    receipt_rows = {row["name"]: row for row in document["leaderboard"]["rows"]}
    for name, row in published.items():
        stored = receipt_rows[name]
        values = stored.get("values", stored)
        assert values["labeling_agreement"] == pytest.approx(row["labeling_agreement"])
        assert values["corrected_boundary_score"] == pytest.approx(row["corrected_boundary_score"])


def test_a_careless_auditor_measures_enough_disagreement_to_withhold(home: LitmusPaths) -> None:
    audit_round(home, error_rate=0.8)
    measured = {
        row["partition_key"]: row
        for row in rows(home, "SELECT * FROM labeling_agreement ORDER BY partition_key")
    }
    withheld = {key for key, row in measured.items() if row["labeling_status"] == "withheld"}
    assert len(withheld) >= 3
    for key, row in measured.items():
        if row["spot_checks_decided"] < row["min_decided"]:  # too few checks to judge yet
            assert row["labeling_status"] == "not measured", key
        else:
            assert key in withheld
            assert 1 - row["labeling_agreement"] > row["max_disagreement"]
    for row in board(home).values():
        if row["partition_key"] in withheld:
            assert row["status"] == "withheld"
            assert "labeling_error: measured labeling disagreement" in row["withheld_reasons"]
            assert row["labeling_agreement"] is None and row["boundary_score"] is None


# ------------------------------------------------------------------ reuse of unchanged draws


def _sample(con: Any) -> list[tuple]:
    return con.execute("SELECT * FROM spot_check_sample ORDER BY ALL").fetchall()


@contextlib.contextmanager
def _rolled_back(con: Any) -> Iterator[None]:
    """Whatever is written inside is undone: a from-scratch result computed in place."""
    con.execute("BEGIN TRANSACTION")
    try:
        yield
    finally:
        con.execute("ROLLBACK")


def _trajectory_ids(con: Any, partition_key: str) -> list[str]:
    return [t for (t,) in con.execute(
        "SELECT trajectory_id FROM trajectory_labels WHERE partition_key = ? ORDER BY 1",
        [partition_key],
    ).fetchall()]  # fmt: skip


def _from_scratch(con: Any, policy: SpotCheckPolicy) -> list[tuple]:
    """The draw of every configuration, computed again, nothing reused (rolled back)."""
    with _rolled_back(con):
        con.execute("DELETE FROM spot_check_sample")
        keys = [key for (key,) in con.execute(
            "SELECT DISTINCT partition_key FROM audited_trajectories"
        ).fetchall()]  # fmt: skip
        params = {"seed": policy.seed, "share": policy.share, "minimum": policy.minimum}
        con.execute(DRAW_SQL, {**params, "keys": keys})
        return _sample(con)


def _digests(con: Any) -> dict[str, str]:
    return dict(con.execute(
        "SELECT partition_key, inputs_digest FROM result_inputs WHERE result = $result",
        {"result": SPOT_CHECK_SAMPLE},
    ).fetchall())  # fmt: skip


def test_a_draw_keeps_unchanged_configurations_and_redraws_any_changed_input(
    home: LitmusPaths,
) -> None:
    import random

    from litmus.audit.audited import refresh_audited_partition

    generator = random.Random(1606)
    policy = SpotCheckPolicy()
    with connect(home.duckdb_path) as con:
        keys = sorted(k for (k,) in con.execute(
            "SELECT DISTINCT partition_key FROM audited_trajectories"
        ).fetchall())  # fmt: skip
        assert len(keys) > 2
        # the pipeline's draw (recorded with its digests) is the draw from scratch
        assert _sample(con) == _from_scratch(con, policy)
        recorded = _digests(con)
        assert set(recorded) == set(keys)
        draw_spot_checks(con, policy)  # everything reused
        assert _sample(con) == _from_scratch(con, policy) and _digests(con) == recorded

        for round_ in range(4):
            # hostile relabels of random rows of one configuration, then its refresh
            changed = generator.choice(keys)
            ids = _trajectory_ids(con, changed)
            labels = ["safe", "unsafe", "needs_audit", "x'; DROP TABLE x;--", "é|\n", ""]
            for trajectory_id in generator.sample(ids, k=min(len(ids), 7)):
                con.execute(
                    "UPDATE trajectory_labels SET label = ? WHERE trajectory_id = ?",
                    [generator.choice(labels), trajectory_id],
                )
            refresh_audited_partition(con, changed)
            before = _digests(con)
            draw_spot_checks(con, policy)
            after = _digests(con)
            assert _sample(con) == _from_scratch(con, policy), round_
            assert {k for k in keys if before.get(k) != after.get(k)} == {changed}, round_

        # a policy change redraws every configuration
        shared = SpotCheckPolicy(share=0.2, minimum=2)
        before = _digests(con)
        draw_spot_checks(con, shared)
        assert _sample(con) == _from_scratch(con, shared)
        assert all(_digests(con)[k] != before[k] for k in keys)

        # rows lost behind the digests' back (a table rebuilt empty) are drawn again
        con.execute("DELETE FROM spot_check_sample WHERE partition_key = ?", [keys[0]])
        draw_spot_checks(con, shared)
        assert _sample(con) == _from_scratch(con, shared)

        # a warehouse written before the audited rows carried tokens: drawn, then reused
        con.execute("DELETE FROM result_inputs")
        draw_spot_checks(con, policy)
        assert _sample(con) == _from_scratch(con, policy)
        recorded = _digests(con)
        draw_spot_checks(con, policy)
        assert _sample(con) == _from_scratch(con, policy) and _digests(con) == recorded


# ----------------------------------------------------------------------------- the audit queue


def _publish_queue(con: Any) -> list[str]:
    """What the ``audit_queue`` asset does; returns the configurations queried again."""
    from litmus.audit.queue_reuse import AUDIT_QUEUE, refresh_audit_queue
    from litmus.reuse import record_digests
    from litmus.warehouse import transaction

    with transaction(con):
        digests, recomputed = refresh_audit_queue(con)
        record_digests(con, AUDIT_QUEUE, digests)
    return recomputed


def _stored_queue(con: Any) -> list[tuple]:
    return con.execute("SELECT * FROM audit_queue").fetchall()  # in the order it was stored


def _queue_from_scratch(con: Any) -> list[tuple]:
    """The table the full query stores, computed again with nothing reused (rolled back)."""
    from litmus.audit.workflow import audit_queue
    from litmus.warehouse import replace_rows

    with _rolled_back(con):
        replace_rows(con, "audit_queue", audit_queue(con))
        return _stored_queue(con)


def _queue_digests(con: Any) -> dict[str, str]:
    return dict(con.execute(
        "SELECT partition_key, inputs_digest FROM result_inputs WHERE result = 'audit_queue'"
    ).fetchall())  # fmt: skip


def test_the_audit_queue_keeps_unchanged_configurations_and_requeries_any_changed_input(
    home: LitmusPaths,
) -> None:
    import random

    from litmus.labeling.sql import label_partition
    from litmus.tokens import LABELED_ROWS, labeled_rows_tokens, renew_partition_token

    generator = random.Random(1616)
    hostile = ["x'; DROP TABLE audit_queue;--", "needs_audit", "é|\n\x1f", "", "%s {0}"]
    with connect(home.duckdb_path) as con:
        keys = sorted(k for (k,) in con.execute(
            "SELECT DISTINCT partition_key FROM trajectory_labels"
        ).fetchall())  # fmt: skip
        assert len(keys) > 2
        # the pipeline's queue (recorded with its digests) is the queue from scratch
        scratch = _queue_from_scratch(con)
        assert scratch and _stored_queue(con) == scratch
        assert set(_queue_digests(con)) == set(keys)
        assert _publish_queue(con) == []  # nothing changed: everything reused
        assert _stored_queue(con) == scratch

        # the labeler, the only writer of trajectory_labels, renews the labels' token
        relabeled = keys[-1]
        tokens = labeled_rows_tokens(con)
        label_partition(con, relabeled)
        assert {k for k, t in labeled_rows_tokens(con).items() if tokens[k] != t} == {relabeled}
        assert _publish_queue(con) == [relabeled]
        assert _stored_queue(con) == scratch  # the same labels again: the same rows

        for round_ in range(4):
            # what a relabel of one configuration writes (hostile labels, reasons and agent
            # text in some rows), with its new token, and one spot-check of another dropped
            changed = generator.choice(keys)
            ids = _trajectory_ids(con, changed)
            for trajectory_id in generator.sample(ids, k=min(len(ids), 9)):
                con.execute(
                    "UPDATE trajectory_labels SET label = ?, audit_reason_code = ? "
                    "WHERE trajectory_id = ?",
                    [generator.choice(hostile), generator.choice(hostile), trajectory_id],
                )
                con.execute(
                    "UPDATE raw_trajectories SET final_response = ? WHERE trajectory_id = ?",
                    [generator.choice(hostile), trajectory_id],
                )
            renew_partition_token(con, LABELED_ROWS, changed)
            other = generator.choice([key for key in keys if key != changed])
            con.execute(
                "DELETE FROM spot_check_sample WHERE trajectory_id = (SELECT min(trajectory_id) "
                "FROM spot_check_sample WHERE partition_key = ?)",
                [other],
            )
            before = _queue_digests(con)
            assert sorted(_publish_queue(con)) == sorted({changed, other}), round_
            after = _queue_digests(con)
            assert _stored_queue(con) == _queue_from_scratch(con), round_
            assert {k for k in keys if before.get(k) != after.get(k)} <= {changed, other}

        # the auditor's sheet is built the same way, in slices, and is the full query's rows
        from litmus.audit.workflow import audit_queue, export_audit_queue

        sheet = home.audit / "queue.jsonl"
        count = export_audit_queue(con, sheet, file_format="jsonl", slice_trajectories=3)
        exported = [json.loads(line) for line in sheet.read_text(encoding="utf-8").splitlines()]
        expected = audit_queue(con).to_pylist()
        assert count == len(exported) == len(expected)
        assert [(r["trajectory_id"], r["queue"], r["why_needs_audit"]) for r in exported] == [
            (r["trajectory_id"], r["queue"], r["why_needs_audit"]) for r in expected
        ]
        assert {r["queue"] for r in exported} == {"needs_audit", "spot_check"}

        # a configuration whose key is hostile text, labeled afresh
        renamed = keys[0]
        evil = "evil'); DELETE FROM audit_queue; --\n|é"
        con.execute(
            "UPDATE trajectory_labels SET partition_key = ? WHERE partition_key = ?",
            [evil, renamed],
        )
        renew_partition_token(con, LABELED_ROWS, evil)
        assert _publish_queue(con) == [evil]
        assert _stored_queue(con) == _queue_from_scratch(con)
        keys = sorted({*keys, evil} - {renamed})

        # a verdict, or a suite loaded again, re-queries every configuration
        con.execute(
            "INSERT INTO audit_verdicts BY NAME SELECT 'v-1' AS verdict_id, 1 AS load_seq, "
            "trajectory_id, partition_key, 'safe' AS verdict, false AS override, "
            "'ana' AS auditor, NULL AS reason, TIMESTAMP '2026-01-01' AS decided_at, "
            "label AS rule_label, outcome AS rule_outcome, labeler_version, "
            "'filled.csv' AS source_name, 'x' AS source_sha256, 1 AS source_line, "
            "TIMESTAMP '2026-01-01' AS loaded_at "
            "FROM trajectory_labels WHERE label = 'needs_audit' ORDER BY trajectory_id LIMIT 1"
        )
        assert _publish_queue(con) == keys
        assert _stored_queue(con) == _queue_from_scratch(con)
        con.execute("UPDATE suites SET loaded_at = loaded_at + INTERVAL 1 SECOND")
        assert _publish_queue(con) == keys
        assert _stored_queue(con) == _queue_from_scratch(con)

        # rows lost behind the digests' back are queried again
        con.execute("DELETE FROM audit_queue WHERE partition_key = ?", [keys[1]])
        assert _publish_queue(con) == [keys[1]]
        assert _stored_queue(con) == _queue_from_scratch(con)

        # a warehouse written before labels carried tokens: queried, then reused
        con.execute("DELETE FROM result_inputs")
        assert _publish_queue(con) == keys
        assert _stored_queue(con) == _queue_from_scratch(con)
        assert _publish_queue(con) == []
        assert _stored_queue(con) == _queue_from_scratch(con)
