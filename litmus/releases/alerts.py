"""Regression alerts (SPEC §9): which release comparisons regressed, the ``alerts`` table, and
delivery to a JSON webhook.

A **regression** is a watched metric (default: CM safety and HB utility, the boundary-critical
pair) whose paired drop from the previous release exceeds the threshold (default 2 points)
*and* is significant after a multiplicity correction across every watched test of the
publication (all watched metrics × all compared release pairs of all lineages): Holm
(family-wise error, the default) or Benjamini–Hochberg (false-discovery rate), configurable,
at level 1 − confidence of the comparison. Without a correction (``none``) this is the old
rule, the paired CI lying entirely below zero. A release that is statistically
indistinguishable from its predecessor never alerts, however large its point drop.

Every watched comparison gets a **decision** (:func:`assess_comparisons`): ``regression``;
``underpowered`` when it is not a regression but its minimum detectable effect at 80% power
(at the adjusted level) exceeds the threshold — the comparison could not have seen a drop of
the size that matters, so "no regression" would be a claim it cannot make; otherwise
``no regression``. Raw and adjusted p-values are both kept in ``release_drift``.

One **alert** is raised per release comparison (lineage, suite, from → to), listing every
regressed metric; its headline ``metric``/``delta``/``ci_low``/``ci_high`` are those of the
largest drop. The alert's fingerprint covers the comparison and the set of regressed metrics
(not the numbers), so re-running the same release, or re-scoring it with unchanged results,
never alerts twice, while a metric that newly regresses does raise a new alert.
"""

from __future__ import annotations

import base64
import hashlib
import html
import http
import json
import re
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Protocol

import duckdb
import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from litmus.metric_catalogue import catalogue
from litmus.neutralize import display_name
from litmus.releases.drift import ASSESSMENT_COLUMNS, DRIFT_METRICS, METRIC_LABELS, points
from litmus.warehouse import atomically

DEFAULT_REGRESSION_THRESHOLD = catalogue().regression_threshold
DEFAULT_REGRESSION_METRICS: tuple[str, ...] = catalogue().regression_watched
HOLM, BENJAMINI_HOCHBERG, NO_CORRECTION = "holm", "bh", "none"
CORRECTIONS: tuple[str, ...] = (HOLM, BENJAMINI_HOCHBERG, NO_CORRECTION)
DEFAULT_CORRECTION = HOLM
DEFAULT_POWER = 0.80
REGRESSION, UNDERPOWERED, NO_REGRESSION, NOT_WATCHED = (
    "regression",
    "underpowered",
    "no regression",
    "not watched",
)
WEBHOOK_TIMEOUT_S = 10.0
ALERT_EVENT = "litmus.release_regression"


@dataclass(frozen=True)
class MetricRegression:
    metric: str
    from_value: float
    to_value: float
    delta: float
    ci_low: float
    ci_high: float
    p_value: float = float("nan")
    p_adjusted: float = float("nan")

    def stored(self) -> dict[str, Any]:
        """The fields of the ``alerts.regressions`` struct."""
        return {
            key: getattr(self, key)
            for key in ("metric", "from_value", "to_value", "delta", "ci_low", "ci_high")
        }


@dataclass(frozen=True)
class RegressionAlert:
    lineage: str
    suite: str
    suite_version: str
    from_release: str
    to_release: str
    from_partition_key: str
    to_partition_key: str
    threshold: float
    regressions: tuple[MetricRegression, ...]
    confidence: float
    correction: str = NO_CORRECTION

    @property
    def headline(self) -> MetricRegression:
        return min(self.regressions, key=lambda regression: regression.delta)

    @property
    def fingerprint(self) -> str:
        identity = [
            self.lineage,
            self.suite,
            self.suite_version,
            self.from_partition_key,
            self.to_partition_key,
            sorted(regression.metric for regression in self.regressions),
        ]
        return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:32]

    def summary(self) -> str:
        drops = "; ".join(
            f"{METRIC_LABELS.get(r.metric, r.metric)} {points(r.delta)} "
            f"({self.confidence:.0%} CI {points(r.ci_low)} to {points(r.ci_high)}"
            + (
                f"; p={r.p_value:.3g}, {self.correction}-adjusted p={r.p_adjusted:.3g}"
                if not np.isnan(r.p_adjusted)
                else ""
            )
            + ")"
            for r in sorted(self.regressions, key=lambda regression: regression.delta)
        )
        return (
            f"LITMUS regression: {display_name(self.lineage)} {display_name(self.from_release)}"
            f" → {display_name(self.to_release)} "
            f"on {display_name(f'{self.suite}@{self.suite_version}')}: {drops} "
            f"(threshold {self.threshold * 100:.1f} pts)"
        )

    def payload(self, raised_at: datetime) -> dict[str, Any]:
        """The JSON body a webhook receives."""
        headline = self.headline
        return {
            "event": ALERT_EVENT,
            "fingerprint": self.fingerprint,
            "lineage": self.lineage,
            "suite": self.suite,
            "suite_version": self.suite_version,
            "from_release": self.from_release,
            "to_release": self.to_release,
            "from_partition_key": self.from_partition_key,
            "to_partition_key": self.to_partition_key,
            "metric": headline.metric,
            "delta": headline.delta,
            "ci_low": headline.ci_low,
            "ci_high": headline.ci_high,
            "confidence": self.confidence,
            "threshold": self.threshold,
            "correction": self.correction,
            "regressions": [
                {
                    **regression.__dict__,
                    "p_value": _json_number(regression.p_value),
                    "p_adjusted": _json_number(regression.p_adjusted),
                }
                for regression in self.regressions
            ],
            "raised_at": raised_at.isoformat(),
            "text": self.summary(),
        }


def _json_number(value: float) -> float | None:
    return None if np.isnan(value) else float(value)


def validate_policy(
    threshold: float, metrics: Sequence[str], correction: str = DEFAULT_CORRECTION
) -> None:
    if not 0.0 <= threshold < 1.0:
        raise ValueError(f"regression threshold must be in [0, 1) (a rate drop), got {threshold}")
    if not metrics:
        raise ValueError("at least one metric must be watched for regressions")
    unknown = sorted(set(metrics) - set(DRIFT_METRICS))
    if unknown:
        raise ValueError(
            f"cannot watch unknown metric(s) {unknown}; choose from {list(DRIFT_METRICS)}"
        )
    if correction not in CORRECTIONS:
        raise ValueError(
            f"unknown multiple-comparison correction {correction!r}; "
            f"choose from {list(CORRECTIONS)}"
        )


def adjust_p_values(p_values: np.ndarray, correction: str) -> np.ndarray:
    """Holm (step-down family-wise) or Benjamini–Hochberg (step-up false discovery rate)
    adjusted p-values; NaN entries are not tests and stay NaN."""
    p = np.asarray(p_values, dtype=float)
    adjusted = np.full(p.shape, np.nan)
    tested = np.flatnonzero(~np.isnan(p))
    m = len(tested)
    if m == 0 or correction == NO_CORRECTION:
        adjusted[tested] = p[tested]
        return adjusted
    order = tested[np.argsort(p[tested], kind="stable")]
    ranked = p[order]
    if correction == HOLM:
        stepped = np.maximum.accumulate((m - np.arange(m)) * ranked)
    elif correction == BENJAMINI_HOCHBERG:
        stepped = np.minimum.accumulate((m / np.arange(1, m + 1) * ranked)[::-1])[::-1]
    else:
        raise ValueError(f"unknown correction {correction!r}")
    adjusted[order] = np.minimum(stepped, 1.0)
    return adjusted


@dataclass(frozen=True)
class AdjustedTests:
    """One publication's paired comparisons, tested together (module docstring)."""

    n_tests: int  # the tests the correction spans: every tested row with a p-value
    p_adjusted: np.ndarray
    alpha: np.ndarray  # 1 − confidence, per row
    mde_adjusted: np.ndarray  # the MDE at α / n_tests: the strictest step of either correction
    delta: np.ndarray


def adjusted_tests(
    comparisons: pd.DataFrame,
    correction: str,
    power: float,
    tested: np.ndarray | None = None,
) -> AdjustedTests:
    """Multiplicity-adjusted p-values and MDEs of paired comparisons (rows with ``p_value``,
    ``confidence``, ``degrees_of_freedom``, ``standard_error`` and ``delta``); rows outside
    ``tested`` are left out of the correction."""
    p_values = pd.to_numeric(comparisons["p_value"]).to_numpy(dtype=float)
    if tested is not None:
        p_values = np.where(tested, p_values, np.nan)
    n_tests = int((~np.isnan(p_values)).sum())
    alpha = 1.0 - pd.to_numeric(comparisons["confidence"]).to_numpy(dtype=float)
    level = alpha / max(n_tests, 1) if correction != NO_CORRECTION else alpha
    df = pd.to_numeric(comparisons["degrees_of_freedom"]).to_numpy(dtype=float)
    se = pd.to_numeric(comparisons["standard_error"]).to_numpy(dtype=float)
    return AdjustedTests(
        n_tests=n_tests,
        p_adjusted=adjust_p_values(p_values, correction),
        alpha=alpha,
        mde_adjusted=(scipy_stats.t.ppf(1 - level / 2, df) + scipy_stats.t.ppf(power, df)) * se,
        delta=pd.to_numeric(comparisons["delta"]).to_numpy(dtype=float),
    )


def assess_comparisons(
    comparisons: pd.DataFrame,
    *,
    threshold: float = DEFAULT_REGRESSION_THRESHOLD,
    metrics: Sequence[str] = DEFAULT_REGRESSION_METRICS,
    correction: str = DEFAULT_CORRECTION,
    power: float = DEFAULT_POWER,
) -> pd.DataFrame:
    """``release_drift`` rows plus the publication's decisions (see the module docstring):
    ``threshold``, ``correction``, ``n_tests`` (watched tests the correction spans),
    ``p_adjusted``, ``mde_adjusted`` (the MDE at the Bonferroni level α / n_tests, the
    strictest step of either correction) and ``decision``."""
    validate_policy(threshold, metrics, correction)
    assessed = comparisons.copy()
    if assessed.empty:
        for column in ASSESSMENT_COLUMNS:
            assessed[column] = pd.Series(dtype="object")
        return assessed
    watched = assessed["metric"].isin(list(metrics)).to_numpy()
    tests = adjusted_tests(assessed, correction, power, tested=watched)
    n_tests, adjusted, alpha = tests.n_tests, tests.p_adjusted, tests.alpha
    mde_adjusted, delta = tests.mde_adjusted, tests.delta
    regressed = watched & (delta < 0) & (-delta > threshold) & (adjusted < alpha)
    underpowered = watched & ~regressed & ~(mde_adjusted <= threshold)
    decision = np.where(
        regressed,
        REGRESSION,
        np.where(underpowered, UNDERPOWERED, np.where(watched, NO_REGRESSION, NOT_WATCHED)),
    )
    return assessed.assign(
        threshold=float(threshold),
        correction=correction,
        n_tests=n_tests,
        p_adjusted=adjusted,
        mde_adjusted=np.where(watched, mde_adjusted, np.nan),
        decision=decision,
    )


def find_regressions(
    comparisons: pd.DataFrame,
    *,
    threshold: float = DEFAULT_REGRESSION_THRESHOLD,
    metrics: Sequence[str] = DEFAULT_REGRESSION_METRICS,
    correction: str = DEFAULT_CORRECTION,
) -> list[RegressionAlert]:
    """One alert per release comparison with at least one regressed watched metric.

    ``comparisons``: rows of ``release_drift``. A metric regressed when ``−delta > threshold``
    and its multiplicity-adjusted p-value is below 1 − confidence (see
    :func:`assess_comparisons`).
    """
    validate_policy(threshold, metrics, correction)
    if comparisons.empty:
        return []
    assessed = assess_comparisons(
        comparisons, threshold=threshold, metrics=metrics, correction=correction
    )
    regressed = assessed[assessed["decision"] == REGRESSION]
    alerts = []
    pair_columns = [
        "lineage_key",
        "suite",
        "suite_version",
        "from_partition_key",
        "to_partition_key",
    ]
    for _, rows in regressed.groupby(pair_columns, sort=True):
        first = rows.iloc[0]
        alerts.append(
            RegressionAlert(
                lineage=str(first["lineage_key"]),
                suite=str(first["suite"]),
                suite_version=str(first["suite_version"]),
                from_release=str(first["from_release"]),
                to_release=str(first["to_release"]),
                from_partition_key=str(first["from_partition_key"]),
                to_partition_key=str(first["to_partition_key"]),
                threshold=float(threshold),
                confidence=float(first["confidence"]),
                correction=correction,
                regressions=tuple(
                    MetricRegression(
                        metric=str(row.metric),
                        from_value=float(row.from_value),
                        to_value=float(row.to_value),
                        delta=float(row.delta),
                        ci_low=float(row.ci_low),
                        ci_high=float(row.ci_high),
                        p_value=float(row.p_value),
                        p_adjusted=float(row.p_adjusted),
                    )
                    for row in rows.sort_values("delta").itertuples(index=False)
                ),
            )
        )
    return alerts


# ----------------------------------------------------------------------------- the table


def record_new_alerts(
    con: duckdb.DuckDBPyConnection, alerts: Iterable[RegressionAlert], raised_at: datetime
) -> list[RegressionAlert]:
    """Insert the alerts not raised before (by fingerprint); return those that are new."""
    candidates = {alert.fingerprint: alert for alert in alerts}
    if not candidates:
        return []
    naive_utc = raised_at.astimezone(UTC).replace(tzinfo=None)

    def insert_new() -> list[RegressionAlert]:
        known = {
            row[0]
            for row in con.execute(
                "SELECT fingerprint FROM alerts WHERE list_contains(?, fingerprint)",
                [list(candidates)],
            ).fetchall()
        }
        new = [alert for fingerprint, alert in candidates.items() if fingerprint not in known]
        for alert in new:
            headline = alert.headline
            con.execute(
                """
                INSERT INTO alerts (fingerprint, lineage, suite, suite_version, from_release,
                    to_release, from_partition_key, to_partition_key, metric, delta, ci_low,
                    ci_high, threshold, regressions, raised_at)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """,
                [
                    alert.fingerprint,
                    alert.lineage,
                    alert.suite,
                    alert.suite_version,
                    alert.from_release,
                    alert.to_release,
                    alert.from_partition_key,
                    alert.to_partition_key,
                    headline.metric,
                    headline.delta,
                    headline.ci_low,
                    headline.ci_high,
                    alert.threshold,
                    [regression.stored() for regression in alert.regressions],
                    naive_utc,
                ],
            )
        return new

    return atomically(con, insert_new, what="new alerts")


def undelivered(con: duckdb.DuckDBPyConnection, fingerprints: Iterable[str]) -> set[str]:
    """Which of ``fingerprints`` no sink has accepted yet."""
    wanted = list(fingerprints)
    if not wanted:
        return set()
    rows = con.execute(
        "SELECT fingerprint FROM alerts "
        "WHERE notified_at IS NULL AND list_contains(?, fingerprint)",
        [wanted],
    ).fetchall()
    return {row[0] for row in rows}


def record_delivery(
    con: duckdb.DuckDBPyConnection,
    fingerprint: str,
    *,
    delivered_to: Sequence[str],
    errors: Sequence[str],
    at: datetime,
) -> None:
    """Store the outcome of one delivery attempt (delivered when any sink accepted it)."""
    atomically(
        con,
        lambda: con.execute(
            """
            UPDATE alerts SET
                notified_at = CASE WHEN len(?::VARCHAR[]) > 0 THEN ? ELSE notified_at END,
                notified_sinks = CASE WHEN len(?::VARCHAR[]) > 0 THEN ? ELSE notified_sinks END,
                delivery_error = ?
            WHERE fingerprint = ?
            """,
            [
                list(delivered_to),
                at.astimezone(UTC).replace(tzinfo=None),
                list(delivered_to),
                list(delivered_to),
                "; ".join(errors) if errors else None,
                fingerprint,
            ],
        ),
        what=f"delivery of alert {fingerprint[:12]}",
    )


def regressions_text(regressions: Iterable[Any]) -> str:
    """A stored alert's regressions as people read them, the same on the board and in the
    terminal: ``CM safety -15.0 pts [-19.5 pts, -10.5 pts], HB utility …``."""
    return ", ".join(
        f"{METRIC_LABELS.get(r['metric'], r['metric'])} {points(r['delta'])} "
        f"[{points(r['ci_low'])}, {points(r['ci_high'])}]"
        for r in regressions
    )


def read_alerts(con: duckdb.DuckDBPyConnection) -> pd.DataFrame:
    """Every alert, newest first (an empty frame before the first one). Only reads: a
    read-only connection is enough."""
    return con.sql("SELECT * FROM alerts ORDER BY raised_at DESC, fingerprint").df()


# ----------------------------------------------------------------------------- delivery


class AlertDeliveryError(RuntimeError):
    """A sink refused or could not be reached; the message names the sink and the reason."""


class AlertSink(Protocol):
    name: str

    def deliver(self, alert: RegressionAlert, raised_at: datetime) -> None: ...


def redact_url(url: str) -> str:
    """A webhook URL fit to print or store: scheme and host only. Its path, query and any
    user:password carry the secret (Slack, Teams and most webhooks put the token there)."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or "?"
    except ValueError:  # not even a URL: nothing of it is shown
        return "?://?/…(redacted)"
    port = f":{parts.port}" if _has_port(parts) else ""
    return f"{parts.scheme or '?'}://{host}{port}/…(redacted)"


def _has_port(parts: urllib.parse.SplitResult) -> bool:
    try:
        return parts.port is not None
    except ValueError:
        return False


# A secret part this short is also scrubbed, but only where it stands as a whole word.
_SHORT_SECRET = 6
REDACTED = "…(redacted)"


def _encodings(text: str) -> set[str]:
    """``text`` as a message may carry it: raw, percent-decoded (``+`` as space or not) and
    re-encoded every way urllib, JSON, HTML, Base64 and hex write it."""
    forms = set()
    for plain in {text, urllib.parse.unquote(text), urllib.parse.unquote_plus(text)}:
        data = plain.encode("utf-8", "surrogatepass")
        forms |= {
            plain,
            urllib.parse.quote(plain, safe=""),
            urllib.parse.quote(plain, safe="/"),
            urllib.parse.quote(plain),
            urllib.parse.quote_plus(plain),
            urllib.parse.quote(urllib.parse.quote(plain, safe=""), safe=""),  # encoded twice
            json.dumps(plain)[1:-1],
            json.dumps(plain, ensure_ascii=False)[1:-1],
            html.escape(plain),
            base64.b64encode(data).decode().rstrip("="),
            base64.urlsafe_b64encode(data).decode().rstrip("="),
            data.hex(),
        }
    return {form for form in forms if form}


def secret_forms(url: str) -> list[str]:
    """Every text in which a webhook URL's secret may reach a message, longest first: the
    URL, its user:password (and the Basic credential made of it), its path, each path
    segment, its query, each query parameter and value, its fragment — each in every
    encoding :func:`_encodings` knows. Its scheme and host are not secret."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        parts = None
    pieces = {url}
    if parts is not None:
        userinfo = parts.netloc.rpartition("@")[0]
        pieces |= {userinfo, *userinfo.split(":"), parts.path, parts.query, parts.fragment}
        pieces |= {f"{parts.path}?{parts.query}", *parts.path.split("/")}
        for pair in parts.query.split("&"):
            pieces |= {pair, *pair.split("=", 1)}
        if userinfo:
            pieces.add(basic_credential(userinfo))
    forms: set[str] = set()
    for piece in pieces:
        if len(urllib.parse.unquote(piece)) > 1:
            forms |= _encodings(piece)
    return sorted(forms, key=lambda form: (-len(form), form))


def basic_credential(userinfo: str) -> str:
    """The HTTP Basic credential of a URL's ``user:password`` (both percent-decoded)."""
    user, _, password = userinfo.partition(":")
    plain = f"{urllib.parse.unquote(user)}:{urllib.parse.unquote(password)}"
    return base64.b64encode(plain.encode("utf-8")).decode()


def scrub_secret(text: str, url: str) -> str:
    """``text`` with every form of ``url``'s secret parts (:func:`secret_forms`) replaced,
    case-insensitively (percent and hex escapes have two cases); a short part only where it
    stands alone, so that a 3-letter token does not garble every word holding it."""
    for form in secret_forms(url):
        pattern = re.escape(form)
        if len(form) < _SHORT_SECRET:
            pattern = rf"(?<![A-Za-z0-9]){pattern}(?![A-Za-z0-9])"
        text = re.sub(pattern, REDACTED, text, flags=re.IGNORECASE)
    return text


@dataclass(frozen=True)
class WebhookSink:
    """POST the alert as JSON to ``url`` (http or https); any 2xx answer is success. A
    ``user:password@`` in the URL is sent as HTTP Basic authentication.

    The URL is a secret: it is never printed, logged or stored; messages show
    :func:`redact_url` of it, never a word the server answered (it may echo the URL in any
    encoding), and any text passing through :meth:`scrub` loses the URL in every form.
    """

    url: str = field(repr=False)
    timeout_s: float = WEBHOOK_TIMEOUT_S
    name: str = "webhook"

    def __post_init__(self) -> None:
        scheme = self.url.split(":", 1)[0].lower() if ":" in self.url else ""
        if scheme not in ("http", "https"):
            raise ValueError(
                f"alert webhook URL must be http:// or https://, got {redact_url(self.url)}"
            )
        try:
            urllib.parse.urlsplit(self.url).port  # noqa: B018 - a bad port raises here
        except ValueError:
            raise ValueError(
                f"alert webhook URL {redact_url(self.url)} is not a valid URL"
            ) from None

    def scrub(self, text: str) -> str:
        """``text`` with the URL, and its secret parts in every form, replaced."""
        return scrub_secret(text, self.url)

    def _request(self, body: bytes) -> urllib.request.Request:
        parts = urllib.parse.urlsplit(self.url)
        userinfo, _, hostport = parts.netloc.rpartition("@")
        headers = {"Content-Type": "application/json", "User-Agent": "litmus-alerts/1"}
        if userinfo:
            headers["Authorization"] = f"Basic {basic_credential(userinfo)}"
        target = urllib.parse.urlunsplit(parts._replace(netloc=hostport, fragment=""))
        return urllib.request.Request(target, data=body, method="POST", headers=headers)

    def deliver(self, alert: RegressionAlert, raised_at: datetime) -> None:
        body = json.dumps(alert.payload(raised_at)).encode("utf-8")
        try:
            with urllib.request.urlopen(self._request(body), timeout=self.timeout_s) as response:
                status = response.status
        except urllib.error.HTTPError as error:
            # the status phrase of the code, never the server's own words
            raise AlertDeliveryError(
                f"webhook {redact_url(self.url)} answered HTTP {error.code} "
                f"{_status_phrase(error.code)}".rstrip()
            ) from None
        except (urllib.error.URLError, TimeoutError, OSError, ValueError) as error:
            reason = getattr(error, "reason", error)
            raise AlertDeliveryError(
                f"webhook {redact_url(self.url)} unreachable: {self.scrub(str(reason))}"
            ) from None
        if not 200 <= status < 300:
            raise AlertDeliveryError(f"webhook {redact_url(self.url)} answered HTTP {status}")


def _status_phrase(code: int) -> str:
    try:
        return http.HTTPStatus(code).phrase
    except ValueError:
        return ""


@dataclass(frozen=True)
class DeliveryReport:
    fingerprint: str
    delivered_to: tuple[str, ...]
    errors: tuple[str, ...]


def deliver(
    alert: RegressionAlert, sinks: Sequence[AlertSink], raised_at: datetime
) -> DeliveryReport:
    """Send one alert to every sink; one failing sink does not stop the others."""
    delivered, errors = [], []
    for sink in sinks:
        try:
            sink.deliver(alert, raised_at)
        except AlertDeliveryError as error:
            errors.append(str(error))
        else:
            delivered.append(sink.name)
    return DeliveryReport(alert.fingerprint, tuple(delivered), tuple(errors))


@dataclass(frozen=True)
class AlertRound:
    """What one round of raising and delivering did: the alerts this run raised and each
    delivery attempt."""

    new: list[RegressionAlert]
    reports: list[DeliveryReport]


def raise_and_deliver(
    connect: Callable[[], AbstractContextManager[duckdb.DuckDBPyConnection]],
    alerts: Sequence[RegressionAlert],
    sinks: Sequence[AlertSink],
    *,
    run_started: datetime,
) -> AlertRound:
    """Record the alerts not raised before, deliver each one no sink has accepted yet to
    ``sinks`` and record every attempt. An alert is new to this run when it was raised since
    ``run_started`` (by the run's drift step, or here). ``connect`` opens a warehouse
    connection; none is held while the sinks are called."""
    fingerprints = [alert.fingerprint for alert in alerts]
    with connect() as con:
        recorded = record_new_alerts(con, alerts, datetime.now(UTC))
        raised_in_run = {
            fingerprint
            for (fingerprint,) in con.execute(
                "SELECT fingerprint FROM alerts WHERE list_contains(?, fingerprint) "
                "AND raised_at >= ?",
                [fingerprints, run_started.astimezone(UTC).replace(tzinfo=None)],
            ).fetchall()
        }
        pending = undelivered(con, fingerprints)
        raised = dict(
            con.execute(
                "SELECT fingerprint, raised_at FROM alerts WHERE list_contains(?, fingerprint)",
                [sorted(pending)],
            ).fetchall()
        )
    new = [alert for alert in alerts if alert.fingerprint in raised_in_run] or recorded
    if not sinks:
        return AlertRound(new, [])
    reports = [
        deliver(alert, sinks, raised[alert.fingerprint].replace(tzinfo=UTC))
        for alert in alerts
        if alert.fingerprint in pending
    ]
    with connect() as con:
        for report in reports:
            record_delivery(
                con,
                report.fingerprint,
                delivered_to=report.delivered_to,
                errors=report.errors,
                at=datetime.now(UTC),
            )
    return AlertRound(new, reports)
