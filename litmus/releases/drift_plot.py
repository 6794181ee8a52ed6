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
import io
import re

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from litmus.neutralize import for_matplotlib
from litmus.releases.drift import DRIFT_METRICS, METRIC_LABELS

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
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()
