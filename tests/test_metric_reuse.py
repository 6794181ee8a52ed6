"""A publication recomputes the intervals of changed configurations only (litmus.reuse), and
the rows it keeps are the very bits a full recomputation gives."""

from __future__ import annotations

from pathlib import Path

import duckdb
import pandas as pd
import pytest
from test_stats import family, varied_counts

from litmus.reuse import METRIC_CIS, metric_cis_reusing_unchanged, stored_digests
from litmus.stats import bootstrap_all_configurations
from litmus_dagster.metrics.assets import METRIC_CIS_DDL, replace_table

OPTIONS = {"n_resamples": 200, "seed": 11, "confidence": 0.95}


def publish(con: duckdb.DuckDBPyConnection, counts: pd.DataFrame, **options: object) -> list[str]:
    """What the metric_cis asset does; returns the configurations it recomputed."""
    cis, digests, recomputed = metric_cis_reusing_unchanged(
        con, counts, None, **{**OPTIONS, **options}
    )
    replace_table(con, METRIC_CIS, cis, METRIC_CIS_DDL, digests=digests)
    return recomputed


def stored(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    return con.execute("SELECT * FROM metric_cis ORDER BY partition_key, metric").df()


def from_scratch(tmp_path: Path, counts: pd.DataFrame, **options: object) -> pd.DataFrame:
    """The table a full recomputation writes, in a warehouse of its own."""
    with duckdb.connect(str(tmp_path / f"scratch-{len(list(tmp_path.iterdir()))}.duckdb")) as con:
        cis = bootstrap_all_configurations(counts, None, **{**OPTIONS, **options})
        replace_table(con, METRIC_CIS, cis, METRIC_CIS_DDL)
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
    connection = duckdb.connect(str(tmp_path / "warehouse.duckdb"))
    yield connection
    connection.close()


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
    assert not after[after["partition_key"] == "config-b"].reset_index(drop=True).equals(
        before[before["partition_key"] == "config-b"].reset_index(drop=True)
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
