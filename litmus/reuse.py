"""Reusing a configuration's published numbers when nothing they are computed from changed.

A new release adds one configuration; its bootstrap intervals are the only ones to compute.
Each per-configuration result (``metric_cis`` rows, ...) is stored with a digest of exactly
what it was computed from: the configuration's own rows in the dbt models its
``FamilyCounts`` are built from (``family_split_counts``, ``family_register_counts``), the
resampling parameters, and the code that computes it (``litmus/stats.py`` and numpy's
version). The next publication computes the digests again in DuckDB (``table_rows_digests``:
no rows read into Python, no counts built) and copies the stored rows of every
configuration whose digest is unchanged; only the changed configurations' counts are read,
one configuration at a time, so the work of a new release follows what changed, not the
warehouse. Release drift and plug-in deltas do the same per pair (``ConfigurationCounts``).

Reuse is exact, not approximate: the bootstrap of a configuration draws from its own
generator, ``numpy.random.default_rng(seed)``, over its own families in their canonical
order, so what it computes never depends on which other configurations are in the
warehouse or in which order they are processed; recomputing it would give the same bits,
and DOUBLE columns store them unchanged. ``tests/test_metric_reuse.py`` checks that.

The digests live in ``result_inputs`` (result, partition_key, inputs_digest), written in
the same transaction as the rows they describe, so a crash can never leave a digest that
vouches for rows computed from other inputs; a missing or unequal digest means recompute.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from functools import cache
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from litmus import stats
from litmus.warehouse import execute_many, ordered_text_digests, quoted_identifier


@cache
def code_identity() -> str:
    """What computes the numbers: the statistics module's source and numpy's version."""
    digest = hashlib.sha256(Path(stats.__file__).read_bytes())
    digest.update(np.__version__.encode())
    return digest.hexdigest()


def counts_digest(counts: stats.FamilyCounts, **parameters: object) -> str:
    """A digest of one configuration's family counts, the parameters and the code."""
    digest = hashlib.sha256(code_identity().encode())
    for name in sorted(parameters):
        digest.update(f"{name}={parameters[name]!r};".encode())
    for labels in (counts.family_ids, counts.categories):
        digest.update("\x1f".join(str(value) for value in labels.tolist()).encode())
        digest.update(b"\x1e")
    digest.update("\x1f".join(counts.registers).encode())
    for matrix in (counts.counts, counts.register_rows, counts.register_refusals):
        array = np.ascontiguousarray(matrix, dtype=np.float64)
        digest.update(repr(array.shape).encode())
        digest.update(array.tobytes())
    return digest.hexdigest()


def stored_digests(con: duckdb.DuckDBPyConnection, result: str) -> dict[str, str]:
    rows = con.execute(
        "SELECT partition_key, inputs_digest FROM result_inputs WHERE result = ?", [result]
    ).fetchall()
    return dict(rows)


def record_digests(con: duckdb.DuckDBPyConnection, result: str, digests: Mapping[str, str]) -> None:
    """Replace the digests of ``result`` (call inside the transaction writing its rows)."""
    con.execute("DELETE FROM result_inputs WHERE result = ?", [result])
    execute_many(
        con,
        "INSERT INTO result_inputs VALUES (?, ?, ?)",
        [[result, key, value] for key, value in sorted(digests.items())],
    )


def reusable_rows(
    con: duckdb.DuckDBPyConnection,
    result: str,
    digests: Mapping[str, str],
    *,
    expected_rows: int,
) -> dict[str, pd.DataFrame]:
    """The stored rows of ``result`` for each configuration whose stored digest equals
    ``digests`` and which has exactly ``expected_rows`` rows; the others are recomputed."""
    stored = stored_digests(con, result)
    unchanged = sorted(key for key, digest in digests.items() if stored.get(key) == digest)
    if not unchanged:
        return {}
    # ``result`` is one of our table names, never user input
    frame = con.execute(
        f"SELECT * FROM {result} WHERE list_contains(?, partition_key)", [unchanged]
    ).df()
    return {
        key: rows.reset_index(drop=True)
        for key, rows in frame.groupby("partition_key", sort=True)
        if len(rows) == expected_rows
    }


FAMILY_SPLIT_COUNTS = "family_split_counts"
FAMILY_REGISTER_COUNTS = "family_register_counts"

# One digest per configuration of the rows a table holds for it: each row as text that
# no other row has (text columns length-prefixed, the others as a list, NULL spelled out),
# the rows in the order of their text, so the digest is a function of the rows as a set,
# as FamilyCounts is. ``{row_text}``/``{table}``: our own table (``_table``) and its columns.
# Each row is hashed where it is (DuckDB, in parallel) and only the hashes are sorted: the
# digest is of the configuration's multiset of rows, and the sort holds 64 characters a row
# whatever the rows' width.
TABLE_ROW_TEXTS_SQL = """
SELECT partition_key, sha256({row_text}) AS text
FROM {table}
-- the keys' range lets the scan skip other configurations' row groups
WHERE $keys IS NULL
   OR (partition_key BETWEEN list_min($keys) AND list_max($keys)
       AND list_contains($keys, partition_key))
"""


_TABLE_NAME = re.compile(r"[a-z_][a-z0-9_]*")


def _table(name: str) -> str:
    """``name`` as a quoted SQL identifier: a table of our own (the module's constants or a
    caller's literal), refused if it is anything but a plain lower-case name."""
    if not _TABLE_NAME.fullmatch(name):
        raise ValueError(f"unexpected table name for a digest: {name!r}")
    return quoted_identifier(name)


def _row_text_sql(
    con: duckdb.DuckDBPyConnection, table: str, without: Sequence[str] = ()
) -> str:
    # the partition key is the group's own: the same rows give the same digest in any group
    columns = [
        (quoted_identifier(column[0]), column[1])
        for column in con.execute(f"DESCRIBE {_table(table)}").fetchall()
        if column[0] != "partition_key" and column[0] not in without
    ]
    texts = [
        f"coalesce(length({name})::VARCHAR || ':' || {name}, '-')"
        for name, kind in columns
        if kind == "VARCHAR"
    ]
    others = [f"{name}::VARCHAR" for name, kind in columns if kind != "VARCHAR"]
    if others:
        texts.append(f"list_value({', '.join(others)})::VARCHAR")
    return " || ';' || ".join(texts)


def table_rows_digests(
    con: duckdb.DuckDBPyConnection,
    table: str,
    keys: Sequence[str] | None = None,
    *,
    without: Sequence[str] = (),
) -> dict[str, str]:
    """A digest of each configuration's rows in ``table`` (of the configurations ``keys``
    only, when given; the columns ``without`` left out), computed in DuckDB: no rows are read
    into Python."""
    rows = TABLE_ROW_TEXTS_SQL.format(
        row_text=_row_text_sql(con, table, without), table=_table(table)
    )
    return ordered_text_digests(
        con, rows, "text", {"keys": list(keys) if keys is not None else None}
    )


def rows_of(con: duckdb.DuckDBPyConnection, table: str, keys: Sequence[str]) -> pd.DataFrame:
    """The rows of ``table`` of the configurations ``keys`` only."""
    return con.execute(
        f"SELECT * FROM {_table(table)} WHERE list_contains(?, partition_key)", [list(keys)]
    ).df()


def configuration_digests(
    con: duckdb.DuckDBPyConnection,
    split_counts: str,
    register_counts: str | None = None,
    *,
    keys: Sequence[str] | None = None,
    **parameters: object,
) -> dict[str, str]:
    """Per configuration of ``split_counts``: a digest of its rows there and in
    ``register_counts``, the parameters and the code (what :func:`counts_digest` covers, from
    the rows FamilyCounts is built from rather than from FamilyCounts itself)."""
    split_digests = table_rows_digests(con, split_counts, keys)
    register_digests = table_rows_digests(con, register_counts, keys) if register_counts else {}
    return {
        key: _with_parameters(f"rows:{split_digests[key]};{register_digests.get(key, '')}",
                              **parameters)
        for key in sorted(split_digests)
    }  # fmt: skip


def _with_parameters(inputs_digest: str, **parameters: object) -> str:
    """A digest of ``inputs_digest``, the parameters and the code that computes the result."""
    digest = hashlib.sha256(code_identity().encode())
    for name in sorted(parameters):
        digest.update(f"{name}={parameters[name]!r};".encode())
    digest.update(inputs_digest.encode())
    return digest.hexdigest()


METRIC_CIS = "metric_cis"


def metric_cis_reusing_unchanged(
    con: duckdb.DuckDBPyConnection,
    split_counts: str = FAMILY_SPLIT_COUNTS,
    register_counts: str | None = FAMILY_REGISTER_COUNTS,
    *,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
    seed: int = stats.DEFAULT_SEED,
    confidence: float = stats.DEFAULT_CONFIDENCE,
) -> tuple[pd.DataFrame, dict[str, str], list[str]]:
    """What :func:`litmus.stats.bootstrap_all_configurations` returns over the tables
    ``split_counts`` and ``register_counts``, with the stored ``metric_cis`` rows of every
    configuration whose inputs are unchanged; only the other configurations' counts are read.
    Also returns the digests to record with the rows and the configurations recomputed."""
    parameters = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
    digests = configuration_digests(con, split_counts, register_counts, **parameters)
    reused = {
        key: rows
        for key, rows in reusable_rows(
            con, METRIC_CIS, digests, expected_rows=len(stats.RATE_METRICS)
        ).items()
        if set(rows["metric"]) == set(stats.RATE_METRICS)
    }
    recomputed = [key for key in digests if key not in reused]
    metric_order = {metric: index for index, metric in enumerate(stats.RATE_METRICS)}
    frames = []
    for key in digests:
        rows = reused.get(key)
        if rows is not None:
            frames.append(rows.iloc[rows["metric"].map(metric_order).argsort()])
        else:
            # one configuration's counts in memory at a time
            counts = stats.family_counts_from_frames(
                rows_of(con, split_counts, [key]),
                rows_of(con, register_counts, [key]) if register_counts else None,
            )
            frames.append(stats.configuration_cis(key, counts, **parameters))
    if not frames:
        return pd.DataFrame(columns=list(stats.CI_COLUMNS)), digests, recomputed
    cis = pd.concat(frames, ignore_index=True)[list(stats.CI_COLUMNS)]
    return cis, digests, recomputed


PUBLIC_PRIVATE_GAPS = "public_private_gaps"


def private_families(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """(partition_key, family_id) of every family a configuration's suite marks private."""
    return con.sql(
        """
        SELECT DISTINCT c.partition_key, i.family_id
        FROM configuration_identities c
        JOIN suite_instances i USING (suite, suite_version)
        WHERE coalesce(i.private, false)
        """
    ).df()


def public_private_gaps_reusing_unchanged(
    con: duckdb.DuckDBPyConnection,
    private_families: pd.DataFrame,
    split_counts: str = FAMILY_SPLIT_COUNTS,
    *,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
    seed: int = stats.DEFAULT_SEED,
    confidence: float = stats.DEFAULT_CONFIDENCE,
) -> tuple[pd.DataFrame, dict[str, str], list[str]]:
    """What :func:`litmus.stats.public_private_gaps` returns over the table ``split_counts``,
    with the stored rows of every configuration whose counts and private families are
    unchanged; only the other configurations' counts are read. Also returns the digests to
    record with the rows and the configurations that were recomputed."""
    parameters = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
    private_by_partition = private_families.groupby("partition_key")["family_id"].agg(
        lambda ids: tuple(sorted(str(value) for value in ids))
    )
    all_digests = configuration_digests(
        con, split_counts, None, keys=private_by_partition.index.tolist(), **parameters
    )
    digests = {
        key: hashlib.sha256(f"{digest};private={private_by_partition[key]!r}".encode()).hexdigest()
        for key, digest in all_digests.items()
        if key in private_by_partition.index
    }
    metrics = list(stats.HEADLINE_METRICS)
    reused = {
        key: rows
        for key, rows in reusable_rows(
            con, PUBLIC_PRIVATE_GAPS, digests, expected_rows=len(metrics)
        ).items()
        if sorted(rows["metric"]) == sorted(metrics)
    }
    recomputed = sorted(set(digests) - set(reused))
    fresh = (
        stats.public_private_gaps(
            rows_of(con, split_counts, recomputed),
            private_families,
            n_resamples=n_resamples,
            seed=seed,
            confidence=confidence,
        )
        if recomputed
        else pd.DataFrame(columns=list(stats.PUBLIC_PRIVATE_COLUMNS))
    )
    order = {metric: index for index, metric in enumerate(metrics)}
    frames = [fresh] if len(fresh) else []
    frames += [rows.iloc[rows["metric"].map(order).argsort()] for rows in reused.values()]
    columns = list(stats.PUBLIC_PRIVATE_COLUMNS)
    if not frames:
        return pd.DataFrame(columns=columns), digests, recomputed
    gaps = pd.concat([frame[columns] for frame in frames], ignore_index=True)
    # the order public_private_gaps gives: configurations sorted, metrics in headline order
    gaps = gaps.sort_values(
        ["partition_key", "metric"],
        key=lambda column: column.map(order) if column.name == "metric" else column,
        kind="stable",
    ).reset_index(drop=True)
    return gaps, digests, recomputed


# ----------------------------------------------------------------------------- paired deltas


def stored_pairs(
    con: duckdb.DuckDBPyConnection,
    result: str,
    columns: Mapping[str, str],
    *,
    newer: str,
    older: str,
) -> dict[str, tuple[str, pd.DataFrame]]:
    """Every pair stored in ``result`` with the digest it was stored with, as
    :func:`litmus.stats.paired_bootstrap_difference` returned it (``columns``: table column
    → that function's column; ``newer``/``older``: the columns naming the two partitions)."""
    digests = stored_digests(con, result)
    if not digests:
        return {}
    # ``result`` and the column names are ours, never user input
    rows = con.execute(f"SELECT {older}, {newer}, metric, {', '.join(columns)} FROM {result}").df()
    pairs = {}
    for (older_key, newer_key), frame in rows.groupby([older, newer]):
        key = pair_key(str(older_key), str(newer_key))
        if key in digests:
            paired = frame.rename(columns=dict(columns)).drop(columns=[older, newer])
            pairs[key] = (digests[key], paired.reset_index(drop=True))
    return pairs


def pair_key(older: str, newer: str) -> str:
    return f"{older} -> {newer}"


class ConfigurationCounts:
    """Each configuration's :class:`~litmus.stats.FamilyCounts`, built only when a result
    must be computed from them, and a digest of what they are built from: of the rows,
    computed in DuckDB without reading them, when the counts are a warehouse table
    (:meth:`from_warehouse`); of the built counts when they are a frame (:meth:`from_frame`)."""

    def __init__(
        self,
        keys: Collection[str],
        build: Callable[[str], stats.FamilyCounts],
        rows_digest: Callable[[str], str] | None = None,
    ) -> None:
        self._keys = frozenset(keys)
        self._build = build
        self._rows_digest = rows_digest
        self._built: dict[str, stats.FamilyCounts] = {}
        self._digests: dict[str, str] = {}

    @classmethod
    def from_frame(cls, split_counts: pd.DataFrame) -> ConfigurationCounts:
        """Over rows of ``family_split_counts`` in memory."""
        frames = {str(key): frame for key, frame in split_counts.groupby("partition_key")}
        return cls(frames, lambda key: stats.family_counts_from_frames(frames[key]))

    @classmethod
    def from_warehouse(
        cls, con: duckdb.DuckDBPyConnection, split_counts: str = FAMILY_SPLIT_COUNTS
    ) -> ConfigurationCounts:
        """Over the table ``split_counts``; only the configurations asked for are digested
        (in DuckDB), and only those whose counts are needed are read into Python."""
        keys = [key for (key,) in con.execute(
            f"SELECT DISTINCT partition_key FROM {_table(split_counts)}"
        ).fetchall()]  # fmt: skip
        return cls(
            keys,
            lambda key: stats.family_counts_from_frames(rows_of(con, split_counts, [key])),
            lambda key: table_rows_digests(con, split_counts, [key])[key],
        )

    def __contains__(self, key: object) -> bool:
        return key in self._keys

    def digest(self, key: str) -> str:
        """What ``key``'s counts are built from (over a frame this builds them, which raises
        on malformed counts)."""
        if key not in self._digests:
            self._digests[key] = (
                f"rows:{self._rows_digest(key)}"
                if self._rows_digest is not None
                else f"counts:{counts_digest(self.counts(key))}"
            )
        return self._digests[key]

    def counts(self, key: str) -> stats.FamilyCounts:
        if key not in self._built:
            self._built[key] = self._build(key)
        return self._built[key]


def paired_difference(
    newer: str,
    older: str,
    counts: ConfigurationCounts,
    *,
    stored: tuple[str, pd.DataFrame] | None,
    metrics: tuple[str, ...],
    n_resamples: int,
    seed: int,
    confidence: float,
    **identity: object,
) -> tuple[pd.DataFrame, str, bool]:
    """:func:`litmus.stats.paired_bootstrap_difference` of the configurations ``newer`` −
    ``older``, taken from ``stored`` when its digest is what the pair would be computed from
    now (``identity``: anything else the stored rows depend on, a version say); their counts
    are built only when the pair is bootstrapped. Returns the frame, its digest and whether it
    was bootstrapped (raises what the bootstrap raises)."""
    parameters = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
    digest = "".join(
        _with_parameters(counts.digest(key), metrics=metrics, **parameters, **identity)
        for key in (newer, older)
    )
    if (
        stored is not None
        and stored[0] == digest
        and sorted(stored[1]["metric"]) == sorted(metrics)
    ):
        order = {metric: index for index, metric in enumerate(metrics)}
        frame = stored[1]
        reused = frame.iloc[frame["metric"].map(order).argsort()].reset_index(drop=True)
        return reused, digest, False
    paired = stats.paired_bootstrap_difference(
        counts.counts(newer),
        counts.counts(older),
        metrics=metrics,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
    )
    return paired, digest, True
