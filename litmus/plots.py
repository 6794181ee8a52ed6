"""The decision-boundary plot: hard-benign utility (x) against covert-malicious safety (y).

A configuration that refuses everything sits in the top-left corner and one that complies
with everything in the bottom-right; both score 0. Only the top-right corner is good. Each
configuration is drawn with its 95% CI whiskers and an arrow on the safety axis from its
naive (realized-effects-only) safe rate to its corrected safe rate, so the gap a naive
scorer hides is visible. Rendering uses the Agg canvas directly (no pyplot global state), so
it is safe in a Dagster worker without a display.
"""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from litmus.neutralize import for_matplotlib

# Where the controls land by definition: refuse-all has HB utility 0 and CM safety 1,
# comply-all HB utility 1 and CM safety 0.
CANONICAL_CONTROLS = {"refuse-all": (0.0, 1.0), "comply-all": (1.0, 0.0)}
BOUNDARY_CONTOURS = (0.25, 0.5, 0.75)
ARROW_OFFSET = 0.012
CONTROL_MARKERS = ("s", "D", "P", "X")


def _whisker(values: pd.Series, low: pd.Series, high: pd.Series) -> np.ndarray:
    """Asymmetric error-bar lengths (2 × n); a missing bound draws no whisker."""
    below = (values - low).to_numpy(dtype=float)
    above = (high - values).to_numpy(dtype=float)
    return np.nan_to_num(np.vstack([below, above]), nan=0.0).clip(min=0.0)


def boundary_plot_png(
    configurations: pd.DataFrame,
    controls: pd.DataFrame | None = None,
    *,
    title: str = "LITMUS decision boundary",
    dpi: int = 110,
) -> bytes:
    """Render the plot as PNG bytes.

    ``configurations``: published leaderboard rows (name, hb_utility, cm_safety, their
    ``_ci_low/_ci_high``, naive_safe_rate, corrected_safe_rate); rows whose HB utility or CM
    safety is not available are left out. ``controls``: control rows (name, hb_utility,
    cm_safety); when none has both coordinates the canonical corners are drawn.
    """
    figure = Figure(figsize=(7.5, 6.5), dpi=dpi)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()

    grid = np.linspace(0.001, 1.0, 200)
    utility, safety = np.meshgrid(grid, grid)
    harmonic = 2 * utility * safety / (utility + safety)
    contours = axes.contour(
        utility, safety, harmonic, levels=BOUNDARY_CONTOURS, colors="#bbbbbb", linewidths=0.8
    )
    axes.clabel(contours, fmt=lambda level: f"boundary {level:.2f}", fontsize=7)

    plotted = configurations.dropna(subset=["hb_utility", "cm_safety"])
    if not plotted.empty:
        x, y = plotted["hb_utility"], plotted["cm_safety"]
        axes.errorbar(
            x,
            y,
            xerr=_whisker(x, plotted["hb_utility_ci_low"], plotted["hb_utility_ci_high"]),
            yerr=_whisker(y, plotted["cm_safety_ci_low"], plotted["cm_safety_ci_high"]),
            fmt="o",
            color="#0969da",
            ecolor="#54aeff",
            elinewidth=1.2,
            capsize=3,
            label="configuration (95% CI)",
            zorder=3,
        )
        arrows = plotted.dropna(subset=["naive_safe_rate", "corrected_safe_rate"])
        for index, row in enumerate(arrows.itertuples(index=False)):  # one arrow per point
            # Beside the point, not on it, so the CI whisker does not hide the arrow.
            x_arrow = row.hb_utility + ARROW_OFFSET
            axes.annotate(
                "",
                xy=(x_arrow, row.corrected_safe_rate),
                xytext=(x_arrow, row.naive_safe_rate),
                arrowprops={"arrowstyle": "->", "color": "#cf222e", "alpha": 0.7, "lw": 1.2},
                zorder=2,
            )
            if index == 0:
                axes.plot([], [], color="#cf222e", alpha=0.7, label="naive → corrected safe rate")
        labels = short_labels(plotted["name"].astype(str).tolist())
        for row, label in zip(plotted.itertuples(index=False), labels, strict=True):
            on_the_right = row.hb_utility > 0.6  # label towards the middle, inside the axes
            axes.annotate(
                for_matplotlib(label),
                (row.hb_utility, row.cm_safety),
                textcoords="offset points",
                xytext=(-6, 6) if on_the_right else (6, 6),
                ha="right" if on_the_right else "left",
                fontsize=8,
            )

    # Controls are told apart by marker in the legend: text at the corners would sit on top
    # of the configurations that crowd there.
    for (name, (x_value, y_value)), marker in zip(
        _control_points(controls).items(), CONTROL_MARKERS, strict=False
    ):
        axes.scatter(
            [x_value], [y_value], marker=marker, s=70, color="#6e7781", zorder=4,
            label=for_matplotlib(f"{name} (boundary 0)"),
        )  # fmt: skip

    axes.set_xlim(-0.05, 1.1)
    axes.set_ylim(-0.05, 1.08)
    axes.set_xlabel("hard-benign utility (completed / scorable)")
    axes.set_ylabel("covert-malicious safety (safe / (safe + unsafe))")
    axes.set_title(for_matplotlib(title))
    axes.grid(alpha=0.25)
    axes.legend(loc="lower left", fontsize=8, framealpha=0.9)
    figure.tight_layout()

    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})
    return buffer.getvalue()


def short_labels(names: list[str]) -> list[str]:
    """``model@release`` (the part before the first "/") when that alone is unambiguous among
    the plotted configurations, else the full configuration key."""
    short = [name.split("/", 1)[0] for name in names]
    if len(set(short)) == len(short):
        return short
    return names


def _control_points(controls: pd.DataFrame | None) -> dict[str, tuple[float, float]]:
    if controls is not None and not controls.empty:
        placed = controls.dropna(subset=["hb_utility", "cm_safety"])
        points = {
            str(row.name): (float(row.hb_utility), float(row.cm_safety))
            for row in placed.itertuples(index=False)
        }
        if points:
            return points
    return dict(CANONICAL_CONTROLS)
