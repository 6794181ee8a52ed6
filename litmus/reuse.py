"""Reusing a configuration's published numbers when nothing they are computed from changed.

A new release adds one configuration; its bootstrap intervals are the only ones to compute.
Each per-configuration result (``metric_cis`` rows, ...) is stored with a digest of exactly
what it was computed from: the configuration's own family counts (``FamilyCounts``: the
families in their canonical (category, family_id) order, every count, the registers), the
resampling parameters, and the code that computes it (``litmus/stats.py`` and numpy's
version). The next publication computes the digests again (cheap: counts, no resampling)
and copies the stored rows of every configuration whose digest is unchanged.

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
from collections.abc import Mapping
from functools import cache
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd

from litmus import stats


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
    if digests:
        con.executemany(
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


METRIC_CIS = "metric_cis"


def metric_cis_reusing_unchanged(
    con: duckdb.DuckDBPyConnection,
    split_counts: pd.DataFrame,
    register_counts: pd.DataFrame | None = None,
    *,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
    seed: int = stats.DEFAULT_SEED,
    confidence: float = stats.DEFAULT_CONFIDENCE,
) -> tuple[pd.DataFrame, dict[str, str], list[str]]:
    """What :func:`litmus.stats.bootstrap_all_configurations` returns, with the stored
    ``metric_cis`` rows of every configuration whose inputs are unchanged. Also returns the
    digests to record with the rows and the configurations that were recomputed."""
    parameters = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
    counts = stats.family_counts_by_configuration(split_counts, register_counts)
    digests = {key: counts_digest(value, **parameters) for key, value in counts.items()}
    reused = reusable_rows(con, METRIC_CIS, digests, expected_rows=len(stats.RATE_METRICS))
    metric_order = {metric: index for index, metric in enumerate(stats.RATE_METRICS)}
    frames, recomputed = [], []
    for key, value in counts.items():
        rows = reused.get(key)
        if rows is not None and set(rows["metric"]) == set(stats.RATE_METRICS):
            frames.append(rows.iloc[rows["metric"].map(metric_order).argsort()])
        else:
            frames.append(stats.configuration_cis(key, value, **parameters))
            recomputed.append(key)
    if not frames:
        return pd.DataFrame(columns=list(stats.CI_COLUMNS)), digests, recomputed
    cis = pd.concat(frames, ignore_index=True)[list(stats.CI_COLUMNS)]
    return cis, digests, recomputed


PUBLIC_PRIVATE_GAPS = "public_private_gaps"


def public_private_gaps_reusing_unchanged(
    con: duckdb.DuckDBPyConnection,
    split_counts: pd.DataFrame,
    private_families: pd.DataFrame,
    *,
    n_resamples: int = stats.DEFAULT_RESAMPLES,
    seed: int = stats.DEFAULT_SEED,
    confidence: float = stats.DEFAULT_CONFIDENCE,
) -> tuple[pd.DataFrame, dict[str, str], list[str]]:
    """What :func:`litmus.stats.public_private_gaps` returns, with the stored rows of every
    configuration whose counts and private families are unchanged; also the digests to
    record with the rows and the configurations that were recomputed."""
    parameters = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
    private_by_partition = private_families.groupby("partition_key")["family_id"].agg(
        lambda ids: tuple(sorted(str(value) for value in ids))
    )
    counts = stats.family_counts_by_configuration(split_counts)
    digests = {
        key: counts_digest(value, **parameters, private=private_by_partition[key])
        for key, value in counts.items()
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
    fresh = stats.public_private_gaps(
        split_counts[split_counts["partition_key"].isin(recomputed)],
        private_families,
        n_resamples=n_resamples,
        seed=seed,
        confidence=confidence,
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


def paired_difference(
    newer: stats.FamilyCounts,
    older: stats.FamilyCounts,
    *,
    stored: tuple[str, pd.DataFrame] | None,
    metrics: tuple[str, ...],
    n_resamples: int,
    seed: int,
    confidence: float,
    **identity: object,
) -> tuple[pd.DataFrame, str, bool]:
    """:func:`litmus.stats.paired_bootstrap_difference` of ``newer`` − ``older``, taken
    from ``stored`` when its digest is what the pair would be computed from now (``identity``:
    anything else the stored rows depend on, a version say). Returns the frame, its digest
    and whether it was bootstrapped (raises what the bootstrap raises)."""
    parameters = {"n_resamples": n_resamples, "seed": seed, "confidence": confidence}
    digest = "".join(
        counts_digest(counts, metrics=metrics, **parameters, **identity)
        for counts in (newer, older)
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
        newer, older, metrics=metrics, n_resamples=n_resamples, seed=seed, confidence=confidence
    )
    return paired, digest, True
