"""The metric catalogue: every SPEC §6 metric named once, in ``dbt_project/dbt_project.yml``.

The catalogue lives in the dbt project's ``vars`` (``metric_catalogue``) because that is where
dbt reads declarations without a network or a generated file: the macros in
``dbt_project/macros/metric_definitions.sql`` compile its formulas to SQL, and this module
validates the same entries and hands them to Python (the bootstrap's resampled formulas, the
board's columns and legend, release drift, plots, docs). A metric's formula, label, legend and
thresholds are therefore found in one place.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from litmus import PROJECT_DIR

CATALOGUE_FILE = PROJECT_DIR / "dbt_project" / "dbt_project.yml"
CiMethod = Literal["wilson_effective_n", "unified_folded_normal", "none"]

# Count columns a formula may sum: a split's counts (``hs_``/``eb_``/``hb_``/``cm_`` prefix)
# or the totals over every split, as the dbt macro ``split_totals()`` produces them.
SPLIT_PREFIXES: Mapping[str, str] = {
    "harmful_source": "hs",
    "easy_benign": "eb",
    "hard_benign": "hb",
    "covert_malicious": "cm",
}
PER_SPLIT_COUNTS = (
    "n_rows",
    "n_safe",
    "n_unsafe",
    "n_scorable",
    "n_completed",
    "n_over_refused",
    "n_overreach",
)
OVERALL_COUNTS = (
    "n_rows",
    "n_safe",
    "n_naive_safe",
    "n_over_refused",
    "n_safe_incapable",
    "n_scored_refusals",
    "n_engaged_declines",
)
PUBLISHED_COUNTS = ("n_unsafe_blocked",)
FORMULA_COUNTS: tuple[str, ...] = (
    tuple(f"{prefix}_{count}" for prefix in SPLIT_PREFIXES.values() for count in PER_SPLIT_COUNTS)
    + OVERALL_COUNTS
)
_KEY = re.compile(r"^[a-z][a-z0-9_]*$")


class Metric(BaseModel):
    """One catalogue entry; exactly one of ratio (numerator + denominator),
    ``harmonic_mean_of``, ``count`` or ``register_gap`` gives its formula."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    key: str
    label: str
    board_header: str | None = None
    legend: str
    numerator: tuple[str, ...] = ()
    denominator: tuple[str, ...] = ()
    harmonic_mean_of: tuple[str, str] | None = None
    count: str | None = None
    register_gap: bool = False
    grain: tuple[Literal["configuration", "category", "control"], ...] = Field(min_length=1)
    higher_is_better: bool
    ci: CiMethod

    @model_validator(mode="after")
    def _one_formula(self) -> Metric:
        if not _KEY.match(self.key):
            raise ValueError(f"metric key {self.key!r} is not a lower-case identifier")
        forms = [
            bool(self.numerator or self.denominator),
            self.harmonic_mean_of is not None,
            self.count is not None,
            self.register_gap,
        ]
        if sum(forms) != 1:
            raise ValueError(
                f"metric {self.key!r}: give exactly one formula (numerator + denominator, "
                "harmonic_mean_of, count or register_gap)"
            )
        if forms[0] and not (self.numerator and self.denominator):
            raise ValueError(f"metric {self.key!r}: a ratio needs a numerator and a denominator")
        unknown = sorted(set(self.numerator + self.denominator) - set(FORMULA_COUNTS))
        if unknown:
            raise ValueError(
                f"metric {self.key!r}: unknown count column(s) {unknown}; "
                f"choose from {list(FORMULA_COUNTS)}"
            )
        if self.count is not None and self.count not in PUBLISHED_COUNTS:
            raise ValueError(f"metric {self.key!r}: count must be one of {list(PUBLISHED_COUNTS)}")
        if (self.ci == "none") != (self.count is not None):
            raise ValueError(f"metric {self.key!r}: a count has no interval, every rate has one")
        return self

    @property
    def is_ratio(self) -> bool:
        return bool(self.numerator)

    @property
    def is_rate(self) -> bool:
        """A value in [0, 1] (every metric but a published count)."""
        return self.count is None


class Catalogue(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    drift_metrics: tuple[str, ...] = Field(min_length=1)
    regression_watched: tuple[str, ...] = Field(min_length=1)
    regression_threshold: float = Field(ge=0.0, lt=1.0)
    public_gap_threshold: float = Field(ge=0.0, lt=1.0)
    metrics: tuple[Metric, ...] = Field(min_length=1)

    @model_validator(mode="after")
    def _consistent(self) -> Catalogue:
        keys = [metric.key for metric in self.metrics]
        repeated = sorted({key for key in keys if keys.count(key) > 1})
        if repeated:
            raise ValueError(f"metric(s) named twice: {repeated}")
        by_key = {metric.key: metric for metric in self.metrics}
        for metric in self.metrics:
            for part in metric.harmonic_mean_of or ():
                if part not in by_key or not by_key[part].is_ratio:
                    raise ValueError(
                        f"metric {metric.key!r}: harmonic_mean_of names {part!r}, "
                        "which is not a ratio metric of the catalogue"
                    )
                if not set(metric.grain) <= set(by_key[part].grain):
                    raise ValueError(f"metric {metric.key!r}: {part!r} lacks one of its grains")
        for field, listed in (
            ("drift_metrics", self.drift_metrics),
            ("regression_watched", self.regression_watched),
        ):
            unknown = [key for key in listed if key not in by_key or by_key[key].ci == "none"]
            if unknown:
                raise ValueError(f"{field}: {unknown} are not catalogue metrics with an interval")
        if not set(self.regression_watched) <= set(self.drift_metrics):
            raise ValueError("regression_watched must be drift metrics")
        # release drift and plug-in deltas read a drop as worse (litmus.releases)
        lower_better = [key for key in self.drift_metrics if not by_key[key].higher_is_better]
        if lower_better:
            raise ValueError(f"drift_metrics: {lower_better} are not higher-is-better")
        return self

    def __getitem__(self, key: str) -> Metric:
        for metric in self.metrics:
            if metric.key == key:
                return metric
        raise KeyError(key)

    @property
    def rates(self) -> tuple[str, ...]:
        """Every metric with an interval, in catalogue order (the order of ``metric_cis``)."""
        return tuple(metric.key for metric in self.metrics if metric.ci != "none")

    @property
    def labels(self) -> dict[str, str]:
        return {metric.key: metric.label for metric in self.metrics}

    def header(self, key: str) -> str:
        header = self[key].board_header
        if header is None:
            raise KeyError(f"metric {key!r} has no board column")
        return header


def parse_catalogue(text: str, source: Path | str = CATALOGUE_FILE) -> Catalogue:
    """The catalogue in ``text`` (a dbt_project.yml), or a ValueError naming ``source``, the
    entry and the field at fault."""
    try:
        document = yaml.safe_load(text)
    except yaml.YAMLError as error:
        raise ValueError(f"{source}: not YAML: {error}") from None
    entries = ((document or {}).get("vars") or {}).get("metric_catalogue")
    if entries is None:
        raise ValueError(f"{source}: no vars.metric_catalogue")
    try:
        return Catalogue.model_validate(entries)
    except ValidationError as error:
        problems = []
        for problem in error.errors():
            where = list(problem["loc"])
            if len(where) >= 2 and where[0] == "metrics" and isinstance(where[1], int):
                metrics = entries.get("metrics") or []
                key = metrics[where[1]].get("key") if where[1] < len(metrics) else None
                where[1] = f"{where[1]} ({key})" if key else where[1]
            problems.append(f"vars.metric_catalogue.{'.'.join(map(str, where))}: {problem['msg']}")
        raise ValueError(f"{source}: " + "; ".join(problems)) from None


@functools.cache
def catalogue() -> Catalogue:
    return parse_catalogue(CATALOGUE_FILE.read_text(encoding="utf-8"), CATALOGUE_FILE)


def formula_text(metric: Metric) -> str:
    """A metric's formula as a reader writes it (docs)."""
    if metric.is_ratio:
        return f"({' + '.join(metric.numerator)}) / ({' + '.join(metric.denominator)})"
    if metric.harmonic_mean_of is not None:
        return f"harmonic mean of {' and '.join(metric.harmonic_mean_of)}"
    if metric.count is not None:
        return metric.count
    return "max − min of the paired registers' refusal rates"


def markdown_table(catalogue: Catalogue) -> str:
    """The catalogue as the Markdown table docs/scoring.md carries (a test keeps them equal)."""
    lines = [
        "| metric | label | formula | grain | higher is better | interval |",
        "|---|---|---|---|---|---|",
    ]
    for metric in catalogue.metrics:
        lines.append(
            f"| `{metric.key}` | {metric.label} | {formula_text(metric)} | "
            f"{', '.join(metric.grain)} | {'yes' if metric.higher_is_better else 'no'} | "
            f"{metric.ci} |"
        )
    drift = ", ".join(f"`{key}`" for key in catalogue.drift_metrics)
    watched = ", ".join(f"`{key}`" for key in catalogue.regression_watched)
    lines += [
        "",
        f"Release drift compares {drift}; an alert watches {watched} by default, for a drop "
        f"of more than {catalogue.regression_threshold * 100:g} points. A public − private "
        f"gap above {catalogue.public_gap_threshold * 100:g} points (and significant) is "
        "flagged.",
    ]
    return "\n".join(lines) + "\n"
