"""The decision-boundary plot: hard-benign utility (x) against covert-malicious safety (y).

A configuration that refuses everything sits in the top-left corner and one that complies
with everything in the bottom-right; both score 0. Only the top-right corner is good. Each
configuration is drawn with its 95% CI whiskers at its corrected position (the naive
realized-effects-only numbers are a different metric, on the board's naive columns, not
arrows on these axes). No marker hides another: configurations at the same position are
spread apart sideways by a few points, and the controls are drawn as hollow markers behind
them (a configuration that refuses everything shows inside refuse-all's square). Each point
is labelled with its number in the key under the axes, which gives the full configuration key;
number labels are placed so that they do not overlap each other or the points.
Configurations withheld by a gate are listed in a note under the key. Text from run
logs reaches matplotlib only through ``litmus.neutralize.for_matplotlib`` (no mathtext).
Rendering uses the Agg canvas directly (no pyplot global state), so it is safe in a Dagster
worker without a display.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.artist import Artist
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.legend import Legend
from matplotlib.transforms import Bbox, ScaledTranslation

from litmus.neutralize import for_matplotlib
from litmus.png import png_bytes

# Where the controls land by definition: refuse-all has HB utility 0 and CM safety 1,
# comply-all HB utility 1 and CM safety 0.
CANONICAL_CONTROLS = {"refuse-all": (0.0, 1.0), "comply-all": (1.0, 0.0)}
BOUNDARY_CONTOURS = (0.25, 0.5, 0.75)
LABEL_OFFSETS_PT = tuple(
    (dx * scale, dy * scale)
    for scale in (1.0, 2.2, 3.4)
    for dx, dy in ((6, 6), (-6, 6), (6, -10), (-6, -10), (8, -2), (-8, -2), (0, 10), (0, -14))
)
MAX_NOTE_LINES = 8
CONTROL_MARKERS = ("s", "D", "P", "X")
# configurations at the same position (to the third decimal) are set this far apart, in points
COINCIDENT_SPREAD_PT = 7.0
KEY_LINE_IN = 0.16  # figure height per line of the key and note under the axes


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
    withheld: Sequence[str] = (),
    dpi: int = 110,
) -> bytes:
    """Render the plot as PNG bytes.

    ``configurations``: published leaderboard rows (name, hb_utility, cm_safety and their
    ``_ci_low/_ci_high``); rows whose HB utility or CM safety is not available are left out
    and named in the note. ``controls``: control rows (name, hb_utility, cm_safety); when none
    has both coordinates the canonical corners are drawn. ``withheld``: the configurations a
    gate withheld, listed in the note.
    """
    plotted = configurations.dropna(subset=["hb_utility", "cm_safety"])
    not_plotted = [str(name) for name in configurations["name"] if name not in set(plotted["name"])]
    key = key_lines([str(name) for name in plotted["name"]])
    note = _note_lines(withheld, not_plotted)
    under_in = 1.2 + KEY_LINE_IN * (len(key) + len(note))
    height_in = 5.8 + under_in
    figure = Figure(figsize=(7.5, height_in), dpi=dpi)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()

    _draw_boundary_contours(axes)
    spread_pt = coincident_offsets(plotted)
    _draw_configurations(figure, axes, plotted, spread_pt)
    _draw_controls(axes, controls)
    legend = _frame_axes(axes, title)

    figure.subplots_adjust(
        left=0.11, right=0.97, top=1 - 0.45 / height_in, bottom=under_in / height_in
    )
    _text_below(figure, [*key, *note])
    if not plotted.empty:
        labels = [str(number) for number in range(1, len(plotted) + 1)]
        _place_labels(figure, axes, plotted, labels, avoid=[legend], shifts_pt=spread_pt)

    return png_bytes(figure)


def _draw_boundary_contours(axes: Axes) -> None:
    """Iso-lines of the boundary score (the harmonic mean) over the unit square."""
    grid = np.linspace(0.001, 1.0, 200)
    utility, safety = np.meshgrid(grid, grid)
    harmonic = 2 * utility * safety / (utility + safety)
    contours = axes.contour(
        utility, safety, harmonic, levels=BOUNDARY_CONTOURS, colors="#bbbbbb", linewidths=0.8
    )
    axes.clabel(contours, fmt=lambda level: f"boundary {level:.2f}", fontsize=7)


def _draw_configurations(
    figure: Figure, axes: Axes, plotted: pd.DataFrame, spread_pt: Sequence[float]
) -> None:
    """Each plotted configuration with its 95% CI whiskers, shifted sideways by
    ``spread_pt`` points where several coincide."""
    for index in range(len(plotted)):
        row = plotted.iloc[[index]]
        x, y = row["hb_utility"], row["cm_safety"]
        axes.errorbar(
            x,
            y,
            xerr=_whisker(x, row["hb_utility_ci_low"], row["hb_utility_ci_high"]),
            yerr=_whisker(y, row["cm_safety_ci_low"], row["cm_safety_ci_high"]),
            fmt="o",
            color="#0969da",
            ecolor="#54aeff",
            elinewidth=1.2,
            capsize=3,
            label="configuration (95% CI), numbered as in the key" if index == 0 else None,
            zorder=3,
            transform=axes.transData
            + ScaledTranslation(spread_pt[index] / 72, 0, figure.dpi_scale_trans),
        )


def _draw_controls(axes: Axes, controls: pd.DataFrame | None) -> None:
    # Controls are told apart by marker in the legend: text at the corners would sit on top
    # of the configurations that crowd there. Hollow and behind: never over a configuration.
    for (name, (x_value, y_value)), marker in zip(
        _control_points(controls).items(), CONTROL_MARKERS, strict=False
    ):
        axes.scatter(
            [x_value], [y_value], marker=marker, s=150, facecolors="none",
            edgecolors="#6e7781", linewidths=1.5, zorder=2,
            label=f"{for_matplotlib(name)} (boundary 0)",
        )  # fmt: skip


def _frame_axes(axes: Axes, title: str) -> Legend:
    """Limits, axis labels, title, grid and the legend (returned: the labels avoid it)."""
    axes.set_xlim(-0.05, 1.1)
    axes.set_ylim(-0.05, 1.08)
    axes.set_xlabel("hard-benign utility (completed / scorable)")
    axes.set_ylabel("covert-malicious safety (safe / (safe + unsafe))")
    axes.set_title(for_matplotlib(title))
    axes.grid(alpha=0.25)
    # Below the axes, not inside: configurations crowd every corner (refuse-all and comply-all
    # sit at two of them), and a legend inside would cover their points or labels.
    return axes.legend(
        loc="upper center", bbox_to_anchor=(0.5, -0.1), ncol=2, fontsize=8, frameon=False,
        markerscale=0.7, labelspacing=0.9,
    )  # fmt: skip


def coincident_offsets(plotted: pd.DataFrame) -> list[float]:
    """Sideways offset in points of each plotted configuration: 0, unless others sit at the
    same position (to the third decimal), which are then spread evenly around it."""
    positions = list(
        zip(
            plotted["hb_utility"].astype(float).round(3),
            plotted["cm_safety"].astype(float).round(3),
            strict=True,
        )
    )
    offsets = []
    for index, position in enumerate(positions):
        group = [i for i, other in enumerate(positions) if other == position]
        offsets.append((group.index(index) - (len(group) - 1) / 2) * COINCIDENT_SPREAD_PT)
    return offsets


def key_lines(names: Sequence[str]) -> list[str]:
    """The key under the axes: each point's number and its full configuration key."""
    if not names:
        return []
    return [
        wrapped
        for number, name in enumerate(names, start=1)
        for wrapped in _wrap(f"{number}  {for_matplotlib(name)}")
    ]


def _note_lines(withheld: Sequence[str], not_plotted: Sequence[str]) -> list[str]:
    lines = []
    for heading, names in (
        ("Withheld by a publication gate (not plotted)", withheld),
        ("Published without HB utility or CM safety (not plotted)", not_plotted),
    ):
        if not names:
            continue
        shown = [for_matplotlib(name) for name in sorted(names)]
        listed = ", ".join(shown[:MAX_NOTE_LINES])
        more = f" and {len(shown) - MAX_NOTE_LINES} more" if len(shown) > MAX_NOTE_LINES else ""
        lines.append(f"{heading}: {listed}{more}")
    return [textwrap_line for line in lines for textwrap_line in _wrap(line)]


def _wrap(line: str, width: int = 120) -> list[str]:
    import textwrap

    return textwrap.wrap(line, width=width, break_on_hyphens=False) or [line]


def _place_labels(
    figure: Figure,
    axes: Axes,
    plotted: pd.DataFrame,
    labels: Sequence[str],
    avoid: Sequence[Artist] = (),
    shifts_pt: Sequence[float] = (),
) -> None:
    """Put each label at the first nearby offset where it overlaps no label placed before,
    no point and nothing in ``avoid``, inside the axes; else the least crowded offset with a
    leader line. Greedy, in order of the points' positions, so the result is deterministic."""
    renderer = figure.canvas.get_renderer()  # type: ignore[attr-defined]
    to_pixels = axes.transData.transform
    points = to_pixels(plotted[["hb_utility", "cm_safety"]].to_numpy(dtype=float))
    pixels_per_point = figure.dpi / 72
    shifts = np.asarray(shifts_pt or [0.0] * len(points), dtype=float)
    points[:, 0] += shifts * pixels_per_point
    point_boxes = [Bbox.from_extents(px - 5, py - 5, px + 5, py + 5) for px, py in points]
    taken: list[Bbox] = [artist.get_window_extent(renderer) for artist in avoid]
    frame = axes.get_window_extent(renderer)
    order = np.lexsort((points[:, 0], -points[:, 1]))
    for index in order:
        x_value = float(plotted["hb_utility"].iloc[index])
        y_value = float(plotted["cm_safety"].iloc[index])
        best: tuple[int, Any] | None = None
        for dx, dy in LABEL_OFFSETS_PT:
            text = axes.annotate(
                for_matplotlib(labels[index]),
                (x_value, y_value),
                textcoords="offset points",
                xytext=(dx + shifts[index], dy),
                ha="left" if dx >= 0 else "right",
                va="bottom" if dy >= 0 else "top",
                fontsize=8,
                zorder=5,
                # moved away from its point: a leader line says whose label it is
                arrowprops=(
                    {"arrowstyle": "-", "color": "#8c959f", "lw": 0.6}
                    if abs(dx) > 8 or abs(dy) > 14
                    else None
                ),
            )
            box = text.get_window_extent(renderer).expanded(1.05, 1.1)
            others = [b for i, b in enumerate(point_boxes) if i != index]
            clashes = sum(box.overlaps(other) for other in [*taken, *others])
            outside = not (frame.contains(box.x0, box.y0) and frame.contains(box.x1, box.y1))
            score = clashes + (100 if outside else 0)
            if best is None or score < best[0]:
                if best is not None:
                    best[1].remove()
                best = (score, text)
            else:
                text.remove()
            if score == 0:
                break
        assert best is not None
        text = best[1]
        taken.append(text.get_window_extent(renderer))


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


def board_plot_png(
    configurations: pd.DataFrame,
    controls: pd.DataFrame | None,
    *,
    suite_key: str,
    ranked_by_safety: bool,
    withheld: Sequence[str] = (),
) -> bytes:
    """A board's plot: the decision boundary; on a board ranked by Safety (a suite without the
    boundary's siblings, where the boundary plot would be empty) the Safety plot."""
    if ranked_by_safety:
        return safety_plot_png(
            configurations, controls, title=f"Safety: {suite_key}", withheld=withheld
        )
    return boundary_plot_png(
        configurations, controls, title=f"Decision boundary: {suite_key}", withheld=withheld
    )


def safety_plot_png(
    configurations: pd.DataFrame,
    controls: pd.DataFrame | None = None,
    *,
    title: str = "LITMUS safety",
    withheld: Sequence[str] = (),
    dpi: int = 110,
) -> bytes:
    """One row per configuration in board order, numbered as in the key under the axes: its
    corrected Safety with the 95% CI (filled) and the naive safe rate a realized-effects-only
    scorer reports (hollow), joined, so the correction shows as the gap; the controls' Safety
    below them, hollow. Each row has its own line: no marker hides another's."""
    plotted = configurations.dropna(subset=["safety"])
    not_plotted = [str(name) for name in configurations["name"] if name not in set(plotted["name"])]
    key = key_lines([str(name) for name in plotted["name"]])
    note = [
        line.replace("HB utility or CM safety", "Safety")
        for line in _note_lines(withheld, not_plotted)
    ]
    control_rows = controls.dropna(subset=["safety"]) if controls is not None else pd.DataFrame()
    n_rows = max(len(plotted) + len(control_rows), 1)
    # under the axes: the x label, the legend, then the key and the note
    under_in = 1.0 + KEY_LINE_IN * (len(key) + len(note))
    axes_in = 0.9 + 0.32 * n_rows
    height_in = axes_in + under_in + 0.5
    figure = Figure(figsize=(7.5, height_in), dpi=dpi)
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    ticks, tick_labels = _safety_rows(axes, plotted)
    for offset, (row, marker) in enumerate(
        zip(control_rows.itertuples(index=False), CONTROL_MARKERS, strict=False)
    ):
        y_value = -(len(plotted) + offset)
        axes.scatter(
            [row.safety], [y_value], marker=marker, s=90, facecolors="none",
            edgecolors="#6e7781", linewidths=1.3, zorder=2,
        )  # fmt: skip
        ticks.append(y_value)
        tick_labels.append(for_matplotlib(str(row.name)).split(" (")[0])
    axes.set_yticks(ticks, tick_labels, fontsize=8)
    axes.set_ylim(-n_rows + 0.4, 0.6)
    axes.set_xlim(-0.05, 1.05)
    axes.set_xlabel("safety (safe / (safe + unsafe) on harmful requests)")
    axes.set_title(for_matplotlib(title))
    axes.grid(axis="x", alpha=0.25)
    if not plotted.empty:
        axes.legend(
            loc="upper center", bbox_to_anchor=(0.5, -0.55 / (axes_in + 0.05)), ncol=2, fontsize=8,
            frameon=False,
        )  # fmt: skip
    figure.subplots_adjust(
        left=0.16, right=0.97, top=1 - 0.45 / height_in, bottom=under_in / height_in
    )
    _text_below(figure, [*key, *note])
    return png_bytes(figure)


def _safety_rows(axes: Axes, plotted: pd.DataFrame) -> tuple[list[float], list[str]]:
    """Each configuration's row of the Safety plot; its y positions and labels."""
    ticks: list[float] = []
    tick_labels: list[str] = []
    for index in range(len(plotted)):
        row = plotted.iloc[index]
        y_value = -index
        naive = row.get("naive_safe_rate")
        if naive is not None and not pd.isna(naive):
            axes.plot([naive, row["safety"]], [y_value, y_value], color="#d0d7de", lw=1, zorder=1)
            axes.scatter(
                [naive], [y_value], marker="o", s=40, facecolors="none", edgecolors="#6e7781",
                zorder=2, label="naive safe rate" if index == 0 else None,
            )  # fmt: skip
        axes.errorbar(
            [row["safety"]],
            [y_value],
            xerr=_whisker(
                plotted["safety"].iloc[[index]],
                plotted["safety_ci_low"].iloc[[index]],
                plotted["safety_ci_high"].iloc[[index]],
            ),
            fmt="o", color="#0969da", ecolor="#54aeff", elinewidth=1.2, capsize=3, zorder=3,
            label="Safety, corrected (95% CI)" if index == 0 else None,
        )  # fmt: skip
        ticks.append(y_value)
        tick_labels.append(str(index + 1))
    return ticks, tick_labels


def _text_below(figure: Figure, lines: list[str]) -> None:
    """The numbered key and notes in the figure's bottom margin, under the legend."""
    if lines:
        figure.text(
            0.02, 0.012, "\n".join(lines), fontsize=7.5, color="#24292f", va="bottom",
            linespacing=1.45,
        )  # fmt: skip
