"""One paired comparison of two configurations, for release drift and plug-in deltas.

Both compare a configuration with another of the same suite (a release with its predecessor,
a plug-in with its group's baseline) by the paired family-cluster bootstrap of
:mod:`litmus.stats`, reusing a stored pair whose inputs did not change (``litmus.reuse``);
they differ only in what they call the two estimates and what they store beside them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from litmus.reuse import ConfigurationCounts, paired_difference

# A paired comparison's statistics, by the name every result table gives them ← the column of
# ``stats.paired_bootstrap_difference`` they come from.
_STATISTICS: dict[str, str] = {
    "delta": "difference",
    "ci_low": "ci_low",
    "ci_high": "ci_high",
    "excludes_zero": "excludes_zero",
    "standard_error": "standard_error",
    "p_value": "p_value",
    "mde": "mde",
    "degrees_of_freedom": "degrees_of_freedom",
    "interval_method": "interval_method",
    "n_shared_families": "n_shared_families",
}


def paired_columns(older_value: str, newer_value: str) -> dict[str, str]:
    """A result table's columns → the bootstrap's, with the table's names for the older and
    the newer configuration's estimates (what :func:`litmus.reuse.stored_pairs` reads back)."""
    return {older_value: "estimate_b", newer_value: "estimate_a", **_STATISTICS}


class NotCompared(Exception):
    """Why a pair was not compared, for people: a configuration without family counts, no
    shared families, conflicting categories."""


@dataclass(frozen=True)
class PairedComparison:
    """``rows``: one per metric, ``metric`` and the columns of the table's
    :func:`paired_columns`; ``digest``: what the bootstrap was computed from;
    ``bootstrapped``: computed now rather than taken from the stored pair."""

    rows: pd.DataFrame
    digest: str
    bootstrapped: bool


def compare_pair(
    newer: str,
    older: str,
    counts: ConfigurationCounts,
    columns: Mapping[str, str],
    *,
    stored: tuple[str, pd.DataFrame] | None,
    metrics: Sequence[str],
    n_resamples: int,
    seed: int,
    confidence: float,
    **identity: object,
) -> PairedComparison:
    """``newer`` − ``older`` on every metric, with the result table's column names
    (``columns``: :func:`paired_columns`). Raises :class:`NotCompared` saying why a pair
    cannot be compared; malformed counts raise as they are."""
    for key in (older, newer):
        if key not in counts:
            raise NotCompared(f"no family counts for {key}")
    # outside the try: counts given as a frame are built here, and malformed ones raise
    counts.digest(older), counts.digest(newer)
    try:
        paired, digest, bootstrapped = paired_difference(
            newer,
            older,
            counts,
            stored=stored,
            metrics=tuple(metrics),
            n_resamples=n_resamples,
            seed=seed,
            confidence=confidence,
            **identity,
        )
    except ValueError as problem:  # no shared families, conflicting categories
        raise NotCompared(str(problem)) from problem
    rows = pd.DataFrame(
        {"metric": paired["metric"], **{name: paired[source] for name, source in columns.items()}}
    )
    rows["excludes_zero"] = rows["excludes_zero"].astype(bool)
    for column in ("degrees_of_freedom", "n_shared_families"):
        rows[column] = rows[column].astype("int64")
    return PairedComparison(rows, digest, bootstrapped)
