"""A publication recomputes the intervals of changed configurations only (litmus.reuse), and
the rows it keeps are the very bits a full recomputation gives."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import pytest
from test_stats import family, varied_counts

from litmus.reuse import (
    METRIC_CIS,
    metric_cis_reusing_unchanged,
    record_digests,
    stored_digests,
)
from litmus.stats import bootstrap_all_configurations
from litmus.warehouse import arrow_rows, connect, replace_rows, transaction

OPTIONS = {"n_resamples": 200, "seed": 11, "confidence": 0.95}


def replace_table(
    con: duckdb.DuckDBPyConnection,
    table: str,
    frame: pd.DataFrame,
    *,
    digests: dict[str, str] | None = None,
) -> None:
    """How the metric assets store a result table (and, when given, its digests)."""
    with transaction(con):
        replace_rows(con, table, arrow_rows(frame))
        if digests is not None:
            record_digests(con, table, digests)


def land_counts(con: duckdb.DuckDBPyConnection, counts: pd.DataFrame) -> None:
    """``counts`` as the dbt model ``family_split_counts`` the metric assets read."""
    con.register("landed_counts", counts)
    con.execute("CREATE OR REPLACE TABLE family_split_counts AS SELECT * FROM landed_counts")
    con.unregister("landed_counts")


def publish(con: duckdb.DuckDBPyConnection, counts: pd.DataFrame, **options: object) -> list[str]:
    """What the metric_cis asset does; returns the configurations it recomputed."""
    land_counts(con, counts)
    cis, digests, recomputed = metric_cis_reusing_unchanged(
        con, register_counts=None, **{**OPTIONS, **options}
    )
    replace_table(con, METRIC_CIS, cis, digests=digests)
    return recomputed


def stored(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return con.execute("SELECT * FROM metric_cis ORDER BY partition_key, metric").df()


def from_scratch(tmp_path: Path, counts: pd.DataFrame, **options: object) -> pd.DataFrame:
    """The table a full recomputation writes, in a warehouse of its own."""
    with connect(tmp_path / f"scratch-{len(list(tmp_path.iterdir()))}.duckdb") as con:
        cis = bootstrap_all_configurations(counts, None, **{**OPTIONS, **options})
        replace_table(con, METRIC_CIS, cis)
        return stored(con)


def configurations(*keys: str) -> pd.DataFrame:
    return pd.concat([varied_counts(key) for key in keys], ignore_index=True)


def changed(counts: pd.DataFrame, key: str) -> pd.DataFrame:
    """``key`` gains one family: its counts change, every other configuration's do not."""
    extra = pd.DataFrame(
        family("fam-9", "fraud", cm_safe=0, cm_unsafe=2, hb_completed=0, hb_over_refused=2,
               partition_key=key)
    )  # fmt: skip
    return pd.concat([counts, extra], ignore_index=True)


@pytest.fixture
def con(tmp_path: Path) -> duckdb.DuckDBPyConnection:
    with connect(tmp_path / "warehouse.duckdb") as connection:
        yield connection


def test_only_a_changed_or_new_configuration_is_recomputed_and_the_rest_is_bit_identical(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    first = configurations("config-a", "config-b", "config-c")
    assert publish(con, first) == ["config-a", "config-b", "config-c"]
    before = stored(con)

    second = pd.concat([changed(first, "config-b"), varied_counts("config-d")], ignore_index=True)
    assert publish(con, second) == ["config-b", "config-d"]
    after = stored(con)
    pd.testing.assert_frame_equal(after, from_scratch(tmp_path, second), check_exact=True)
    kept = before["partition_key"].isin(["config-a", "config-c"])
    pd.testing.assert_frame_equal(
        after[after["partition_key"].isin(["config-a", "config-c"])].reset_index(drop=True),
        before[kept].reset_index(drop=True),
        check_exact=True,
    )
    # config-b's rows really were recomputed from its new counts
    assert (
        not after[after["partition_key"] == "config-b"]
        .reset_index(drop=True)
        .equals(before[before["partition_key"] == "config-b"].reset_index(drop=True))
    )


def test_row_order_of_the_counts_does_not_matter_but_parameters_do(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    counts = configurations("config-a", "config-b")
    publish(con, counts)
    shuffled = counts.sample(frac=1.0, random_state=3).reset_index(drop=True)
    assert publish(con, shuffled) == []
    assert publish(con, counts, seed=12) == ["config-a", "config-b"]
    pd.testing.assert_frame_equal(
        stored(con), from_scratch(tmp_path, counts, seed=12), check_exact=True
    )


def test_a_vanished_configuration_leaves_neither_rows_nor_digest(
    con: duckdb.DuckDBPyConnection,
) -> None:
    publish(con, configurations("config-a", "config-b"))
    assert publish(con, configurations("config-a")) == []
    assert set(stored(con)["partition_key"]) == {"config-a"}
    assert set(stored_digests(con, METRIC_CIS)) == {"config-a"}


def test_rows_that_no_longer_match_their_digest_are_recomputed(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    counts = configurations("config-a", "config-b")
    publish(con, counts)
    # rows replaced behind the digest's back (an older writer, a manual repair)
    con.execute("DELETE FROM metric_cis WHERE partition_key = 'config-b' AND metric = 'utility'")
    assert publish(con, counts) == ["config-b"]
    pd.testing.assert_frame_equal(stored(con), from_scratch(tmp_path, counts), check_exact=True)


def test_release_drift_bootstraps_only_the_pair_a_new_release_adds(tmp_path: Path) -> None:
    from test_drift import configuration, release_counts

    from litmus.releases.drift import (
        compute_release_drift,
        replace_release_drift,
        stored_drift_pairs,
    )
    from litmus.warehouse import connect

    two = pd.DataFrame([configuration("r1", "2026-09-01"), configuration("r2", "2026-11-01")])
    three = pd.concat([two, pd.DataFrame([configuration("r3", "2027-01-15")])], ignore_index=True)
    counts = pd.concat(
        [release_counts("r1"), release_counts("r2", cm_drop=8), release_counts("r3", hb_drop=6)],
        ignore_index=True,
    )
    options = {"n_resamples": 150, "seed": 5}
    with connect(tmp_path / "w.duckdb") as con:
        first = compute_release_drift(two, counts, **options, reusable=stored_drift_pairs(con))
        assert first.recomputed == ["r1 -> r2"]
        replace_release_drift(con, first.comparisons, first.pair_digests)
        second = compute_release_drift(three, counts, **options, reusable=stored_drift_pairs(con))
        assert second.recomputed == ["r2 -> r3"]
        replace_release_drift(con, second.comparisons, second.pair_digests)
        reused = con.sql("SELECT * FROM release_drift ORDER BY comparison, metric").df()
        # r2 changed: both of its pairs are bootstrapped again
        changed = pd.concat(
            [
                release_counts("r1"),
                release_counts("r2", cm_drop=9),
                release_counts("r3", hb_drop=6),
            ],
            ignore_index=True,
        )
        third = compute_release_drift(three, changed, **options, reusable=stored_drift_pairs(con))
        assert third.recomputed == ["r1 -> r2", "r2 -> r3"]
    with connect(tmp_path / "scratch.duckdb") as con:
        replace_release_drift(con, compute_release_drift(three, counts, **options).comparisons)
        scratch = con.sql("SELECT * FROM release_drift ORDER BY comparison, metric").df()
    pd.testing.assert_frame_equal(reused, scratch, check_exact=True)


def test_public_private_gaps_are_recomputed_only_for_changed_counts_or_private_families(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    from litmus.reuse import PUBLIC_PRIVATE_GAPS, public_private_gaps_reusing_unchanged
    from litmus.stats import public_private_gaps

    def private(**families: list[str]) -> pd.DataFrame:
        return pd.DataFrame(
            [{"partition_key": key, "family_id": f} for key, ids in families.items() for f in ids]
        )

    def publish_gaps(counts: pd.DataFrame, marked: pd.DataFrame) -> list[str]:
        land_counts(con, counts)
        gaps, digests, recomputed = public_private_gaps_reusing_unchanged(con, marked, **OPTIONS)
        replace_table(con, PUBLIC_PRIVATE_GAPS, gaps, digests=digests)
        return recomputed

    def table(connection: duckdb.DuckDBPyConnection) -> pd.DataFrame:
        return connection.execute("SELECT * FROM public_private_gaps").df()

    counts = configurations("config-a", "config-b", "config-c")
    marked = private(**{"config-a": ["fam-1", "fam-4"], "config-b": ["fam-0", "fam-3"]})
    assert publish_gaps(counts, marked) == ["config-a", "config-b"]
    assert publish_gaps(changed(counts, "config-b"), marked) == ["config-b"]
    remarked = private(**{"config-a": ["fam-1", "fam-5"], "config-b": ["fam-0", "fam-3"]})
    assert publish_gaps(changed(counts, "config-b"), remarked) == ["config-a"]
    with connect(tmp_path / "scratch.duckdb") as scratch:
        gaps = public_private_gaps(changed(counts, "config-b"), remarked, **OPTIONS)
        replace_table(scratch, PUBLIC_PRIVATE_GAPS, gaps)
        pd.testing.assert_frame_equal(table(con), table(scratch), check_exact=True)


def test_plugin_deltas_bootstrap_only_pairs_whose_configurations_changed(tmp_path: Path) -> None:
    from test_drift import identity, release_counts

    from litmus.releases.plugin_deltas import (
        assess_plugin_deltas,
        compute_plugin_deltas,
        replace_plugin_deltas,
        stored_plugin_pairs,
    )
    from litmus.warehouse import connect

    configurations = pd.DataFrame(
        [identity("bare", "bare"), identity("aligner", "aligner"), identity("guard", "guard")]
    )

    def counts(guard_drop: int) -> pd.DataFrame:
        return pd.concat(
            [
                release_counts("bare", cm_drop=16),
                release_counts("aligner", hb_drop=6),
                release_counts("guard", cm_drop=guard_drop),
            ],
            ignore_index=True,
        )

    def publish(connection: duckdb.DuckDBPyConnection, frame: pd.DataFrame) -> pd.DataFrame:
        digests: dict[str, str] = {}
        deltas, _ = compute_plugin_deltas(
            configurations,
            frame,
            n_resamples=150,
            reusable=stored_plugin_pairs(connection),
            pair_digests=digests,
        )
        replace_plugin_deltas(connection, assess_plugin_deltas(deltas), digests)
        return connection.sql("SELECT * FROM plugin_deltas ORDER BY plugin, metric").df()

    with connect(tmp_path / "w.duckdb") as con:
        publish(con, counts(4))
        reused_rows = stored_plugin_pairs(con)["bare -> aligner"][1]
        after = publish(con, counts(8))  # guard changed, aligner did not
        assert stored_plugin_pairs(con)["bare -> aligner"][1].equals(reused_rows)
    with connect(tmp_path / "scratch.duckdb") as con:
        scratch = publish(con, counts(8))
    pd.testing.assert_frame_equal(after, scratch, check_exact=True)


def test_register_counts_are_part_of_what_a_configuration_is_computed_from(
    con: duckdb.DuckDBPyConnection, tmp_path: Path
) -> None:
    from test_stats import register_frame

    counts = configurations("config-a", "config-b")

    def publish_with(registers: pd.DataFrame) -> list[str]:
        land_counts(con, counts)
        con.register("landed_registers", registers)
        con.execute(
            "CREATE OR REPLACE TABLE family_register_counts AS SELECT * FROM landed_registers"
        )
        con.unregister("landed_registers")
        cis, digests, recomputed = metric_cis_reusing_unchanged(con, **OPTIONS)
        replace_table(con, METRIC_CIS, cis, digests=digests)
        return recomputed

    registers = register_frame({"blunt": [2, 2, 1, 2, 1, 2], "hedged": [0, 1, 1, 0, 0, 1]})
    assert publish_with(registers) == ["config-a", "config-b"]
    # a copy: DuckDB 1.5 cannot register a frame over reversed (negative-stride) arrays
    assert publish_with(registers.iloc[::-1].reset_index(drop=True).copy()) == []
    changed_registers = registers.assign(
        n_paired_refusals=registers["n_paired_refusals"].where(registers.index != 0, 0)
    )
    assert publish_with(changed_registers) == ["config-a"]  # only config-a has register rows
    with connect(tmp_path / "scratch.duckdb") as scratch:
        cis = bootstrap_all_configurations(counts, changed_registers, **OPTIONS)
        replace_table(scratch, METRIC_CIS, cis)
        pd.testing.assert_frame_equal(stored(con), stored(scratch), check_exact=True)


def test_the_rows_digest_tells_apart_what_text_alone_would_not(
    con: duckdb.DuckDBPyConnection,
) -> None:
    from litmus.reuse import table_rows_digests

    con.execute(
        """
        CREATE TABLE counted AS SELECT * FROM (VALUES
            ('a', 'ab', 'c', 1), ('b', 'a', 'bc', 1),      -- the same text run together
            ('c', '', 'x', NULL), ('d', NULL, 'x', NULL),  -- empty text and NULL
            ('e', 'x', 'y', 10), ('f', 'x', 'y', 1),
            ('g', 'x', 'y', 10), ('g', 'x', 'z', 1),        -- rows in either order
            ('h', 'x', 'z', 1), ('h', 'x', 'y', 10)
        ) AS t(partition_key, category, family_id, n)
        """
    )
    digests = table_rows_digests(con, "counted")
    assert len(set(digests.values())) == len(digests) - 1
    assert digests["g"] == digests["h"]
    assert table_rows_digests(con, "counted", ["a", "h"]) == {
        "a": digests["a"],
        "h": digests["h"],
    }


def test_drift_over_the_warehouse_equals_drift_over_frames_and_reads_only_what_changed(
    con: duckdb.DuckDBPyConnection,
) -> None:
    from test_drift import configuration, release_counts

    from litmus.releases.drift import (
        compute_release_drift,
        replace_release_drift,
        stored_drift_pairs,
    )
    from litmus.reuse import ConfigurationCounts

    releases = pd.DataFrame(
        [
            configuration("r1", "2026-09-01"),
            configuration("r2", "2026-11-01"),
            configuration("r3", "2027-01-15"),
        ]
    )

    def counts(r3_drop: int) -> pd.DataFrame:
        return pd.concat(
            [
                release_counts("r1"),
                release_counts("r2", cm_drop=8),
                release_counts("r3", hb_drop=r3_drop),
            ],
            ignore_index=True,
        )

    options = {"n_resamples": 150, "seed": 5}
    land_counts(con, counts(6))
    first = compute_release_drift(
        releases, ConfigurationCounts.from_warehouse(con), **options, reusable={}
    )
    from_frames = compute_release_drift(releases, counts(6), **options)
    pd.testing.assert_frame_equal(first.comparisons, from_frames.comparisons, check_exact=True)
    replace_release_drift(con, first.comparisons, first.pair_digests)

    land_counts(con, counts(4))  # r3 changed: only its pair is bootstrapped, r1's never read
    warehouse_counts = ConfigurationCounts.from_warehouse(con)
    second = compute_release_drift(
        releases, warehouse_counts, **options, reusable=stored_drift_pairs(con)
    )
    assert second.recomputed == ["r2 -> r3"]
    assert sorted(warehouse_counts._built) == ["r2", "r3"]
    pd.testing.assert_frame_equal(
        second.comparisons,
        compute_release_drift(releases, counts(4), **options).comparisons,
        check_exact=True,
    )


def test_a_digest_refuses_a_table_name_that_is_not_a_plain_name() -> None:
    from litmus.reuse import table_rows_digests

    con = duckdb.connect()
    with pytest.raises(ValueError, match="unexpected table name"):
        table_rows_digests(con, 'family_split_counts"; DROP TABLE metric_cis; --')
