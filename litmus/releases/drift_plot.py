"""Drift plots: each release metric of one lineage over its releases, with 95% CI bands.

One panel per metric (CM safety, HB utility, Safety, Utility, boundary score); x is the
release in release order (see :mod:`litmus.releases.drift`), y the published estimate with its
family-cluster bootstrap CI as a band. A release whose paired drop from its predecessor is
significant (paired CI below zero) is ringed in red. Rendering uses the Agg canvas directly,
like :mod:`litmus.metrics.plots`, so it is safe in a worker without a display.

File names come from :func:`drift_plot_file_name`, built from a sanitized lineage key plus a
hash of the exact key — never from raw record values.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

import duckdb
import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from litmus.neutralize import for_matplotlib
from litmus.png import png_bytes
from litmus.releases.drift import DRIFT_METRICS, METRIC_LABELS
from litmus.reuse import record_digests, stored_digests
from litmus.warehouse import atomically

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_STEM = 60
SERIES_COLORS = ("#0969da", "#8250df", "#1a7f37", "#bc4c00")


def drift_plot_file_name(lineage_key: str) -> str:
    """``drift_<sanitized lineage>-<hash>.png``: path-safe, and distinct lineages never collide
    even when sanitizing maps them to the same text."""
    stem = _UNSAFE.sub("-", lineage_key).strip("-.")[:_MAX_STEM] or "lineage"
    digest = hashlib.sha256(lineage_key.encode("utf-8")).hexdigest()[:8]
    return f"drift_{stem}-{digest}.png"


def drift_plot_png(
    lineage_key: str,
    releases: pd.DataFrame,
    comparisons: pd.DataFrame,
    *,
    metrics: tuple[str, ...] = DRIFT_METRICS,
    dpi: int = 100,
) -> bytes:
    """Render one lineage's drift plot as PNG bytes.

    ``releases``: one row per (configuration, metric) of this lineage with columns suite,
    suite_version, release_rank, model_release, partition_key, metric, estimate, ci_low,
    ci_high (a configuration's published value and CI). ``comparisons``: this lineage's
    ``release_drift`` rows (to mark significant drops).
    """
    figure = Figure(figsize=(2.9 * len(metrics), 3.4), dpi=dpi)
    FigureCanvasAgg(figure)
    axes_row = figure.subplots(1, len(metrics), sharey=True, squeeze=False)[0]
    dropped = set()
    if not comparisons.empty:
        significant = comparisons[comparisons["excludes_zero"] & (comparisons["delta"] < 0)]
        dropped = set(zip(significant["to_partition_key"], significant["metric"], strict=True))

    suites = (
        releases[["suite", "suite_version"]]
        .drop_duplicates()
        .sort_values(["suite", "suite_version"])
    )
    for axes, metric in zip(axes_row, metrics, strict=True):
        for color, suite in zip(SERIES_COLORS * 8, suites.itertuples(index=False), strict=False):
            series = releases[
                (releases["metric"] == metric)
                & (releases["suite"] == suite.suite)
                & (releases["suite_version"] == suite.suite_version)
            ].sort_values("release_rank")
            if series.empty:
                continue
            x = np.arange(len(series))
            estimate = series["estimate"].to_numpy(dtype=float)
            low = series["ci_low"].to_numpy(dtype=float)
            high = series["ci_high"].to_numpy(dtype=float)
            axes.fill_between(x, low, high, color=color, alpha=0.18, linewidth=0)
            axes.plot(
                x,
                estimate,
                marker="o",
                color=color,
                label=for_matplotlib(f"{suite.suite}@{suite.suite_version}"),
            )
            for position, row in zip(x, series.itertuples(index=False), strict=True):
                if (row.partition_key, metric) in dropped:
                    axes.scatter(
                        [position], [row.estimate], s=120, facecolors="none",
                        edgecolors="#cf222e", linewidths=1.8, zorder=4,
                    )  # fmt: skip
            axes.set_xticks(
                x,
                [for_matplotlib(r) for r in series["model_release"].astype(str)],
                rotation=30,
                ha="right",
            )
        axes.set_title(METRIC_LABELS.get(metric, metric), fontsize=10)
        axes.set_ylim(-0.02, 1.02)
        axes.grid(alpha=0.25)
    axes_row[0].set_ylabel("rate (95% CI band)")
    handles, labels = axes_row[0].get_legend_handles_labels()
    if dropped:
        handles.append(axes_row[0].scatter([], [], s=80, facecolors="none", edgecolors="#cf222e"))
        labels.append("significant drop vs previous release")
    if handles:
        figure.legend(
            handles, labels, loc="lower center", ncol=len(labels), fontsize=8, frameon=False
        )
    figure.suptitle(for_matplotlib(f"release drift: {lineage_key}"), fontsize=11)
    figure.tight_layout(rect=(0, 0.08, 1, 1))
    return png_bytes(figure)


DRIFT_PLOTS = "drift_plots"  # result_inputs: one digest per lineage (partition_key = lineage)


@cache
def _plot_code_identity() -> str:
    """What renders a plot: this module, the neutralizing helpers and the libraries' versions."""
    import matplotlib

    from litmus import neutralize

    digest = hashlib.sha256(Path(__file__).read_bytes())
    digest.update(Path(neutralize.__file__).read_bytes())
    for library in (matplotlib, np, pd):
        digest.update(f"{library.__name__}={library.__version__};".encode())
    return digest.hexdigest()


def _frame_text(frame: pd.DataFrame) -> str:
    """The frame's columns, dtypes and values in row order, exactly (``repr`` of Python values
    tells None, NaN and '' apart and round-trips floats); a few rows per lineage only."""
    return repr(
        [(str(name), str(frame[name].dtype), frame[name].tolist()) for name in frame.columns]
    )


def drift_plot_inputs_digest(
    lineage_key: str, releases: pd.DataFrame, comparisons: pd.DataFrame
) -> str:
    """A digest of everything :func:`drift_plot_png` draws one lineage from."""
    digest = hashlib.sha256(_plot_code_identity().encode())
    for part in (lineage_key, _frame_text(releases), _frame_text(comparisons)):
        digest.update(hashlib.sha256(part.encode("utf-8", "surrogatepass")).digest())
    return digest.hexdigest()


@dataclass(frozen=True)
class DriftPlots:
    written: dict[str, tuple[Path, bytes]]  # lineage → (its published file, PNG bytes)
    rendered: list[str]  # lineages drawn again; the others' files were unchanged and kept


def write_drift_plots(
    con: duckdb.DuckDBPyConnection,
    published: Path,
    staging: Path,
    releases: pd.DataFrame,
    comparisons: pd.DataFrame,
    published_cis: pd.DataFrame,
) -> DriftPlots:
    """One PNG per compared lineage, staged in ``staging`` to be published into
    ``published`` with the board (litmus.trust.publication: the publication removes drift
    plots of lineages no longer compared, so the folder never shows a stale picture).

    A lineage's plot is drawn again only when what it is drawn from changed: its stored digest
    (``result_inputs``) names the inputs and the SHA-256 of the file written from them, and the
    published file is reused only while both still match, so it is the same bytes a new
    drawing would give (``drift_plot_png`` is deterministic). The digests are replaced after
    the files are staged, so a publication that never commits leaves digests that no longer
    match the published file, and the plot is drawn again."""
    stored = stored_digests(con, DRIFT_PLOTS)
    written: dict[str, tuple[Path, bytes]] = {}
    digests: dict[str, str] = {}
    rendered: list[str] = []
    values = releases.merge(published_cis, on="partition_key", how="left")
    for lineage, lineage_values in values.groupby("lineage_key", sort=True):
        lineage_key = str(lineage)
        lineage_comparisons = comparisons[comparisons["lineage_key"] == lineage]
        inputs = drift_plot_inputs_digest(lineage_key, lineage_values, lineage_comparisons)
        name = drift_plot_file_name(lineage_key)
        png = _unchanged_plot(published / name, inputs, stored.get(lineage_key))
        if png is None:
            png = drift_plot_png(lineage_key, lineage_values, lineage_comparisons)
            rendered.append(lineage_key)
        staging.mkdir(parents=True, exist_ok=True)
        (staging / name).write_bytes(png)
        written[lineage_key] = (published / name, png)
        digests[lineage_key] = f"{inputs}:{hashlib.sha256(png).hexdigest()}"
    atomically(con, lambda: record_digests(con, DRIFT_PLOTS, digests), what="drift plots")
    return DriftPlots(written, rendered)


def _unchanged_plot(path: Path, inputs: str, stored: str | None) -> bytes | None:
    """The file's bytes if it was written from ``inputs`` and is unchanged since, else None."""
    if stored is None or not path.is_file():
        return None
    stored_inputs, _, stored_png = stored.partition(":")
    if stored_inputs != inputs:
        return None
    png = path.read_bytes()
    return png if hashlib.sha256(png).hexdigest() == stored_png else None
