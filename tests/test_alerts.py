"""Regression alerts: what counts as a regression, one alert per release comparison, the
``alerts`` table's de-duplication, and delivery to real HTTP servers (webhook, Slack API)."""

from __future__ import annotations

import base64
import json
import threading
import urllib.parse
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from scipy import stats as scipy_stats

from litmus.releases.alerts import (
    AlertDeliveryError,
    WebhookSink,
    deliver,
    find_regressions,
    read_alerts,
    record_delivery,
    record_new_alerts,
    redact_url,
    undelivered,
)
from litmus.releases.drift import DRIFT_COLUMNS
from litmus.warehouse import connect
from litmus_dagster.releases.resources import AlertSinks, RegressionPolicy

RAISED_AT = datetime(2026, 11, 20, 9, 30, tzinfo=UTC)


class RecordingServer:
    """A real HTTP server on 127.0.0.1 that records every JSON (or form) POST it receives and
    answers with ``status`` and ``reply``."""

    def __init__(
        self, status: int = 200, reply: dict[str, Any] | None = None, *, echo: bool = False
    ) -> None:
        self.received: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self.authorizations: list[str | None] = []
        self.status = status
        self.reply = reply or {"ok": True}
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                recorder.paths.append(self.path)
                recorder.authorizations.append(self.headers.get("Authorization"))
                recorder.received.append(json.loads(body) if body else {})
                # ``echo``: a careless sink that repeats the decoded path in its answer
                said = urllib.parse.unquote(self.path)
                reply = {"error": f"no hook at {said}"} if echo else recorder.reply
                payload = json.dumps(reply).encode()
                self.send_response(recorder.status, f"no hook at {said}" if echo else None)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def log_message(self, *args: object) -> None:  # keep test output clean
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/"

    def __enter__(self) -> RecordingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def drift_row(metric: str, delta: float, ci_low: float, ci_high: float, **extra: Any) -> dict:
    """A release_drift row whose standard error, p-value and MDE follow from its interval
    (paired-t with 200 degrees of freedom, as litmus.stats computes them)."""
    df = 200
    t = scipy_stats.t.ppf(0.975, df)
    se = (ci_high - ci_low) / (2 * t)
    row: dict[str, Any] = {
        "lineage_key": "aurora/react/bare",
        "suite": "litmus-sample",
        "suite_version": "2026.11.0",
        "comparison": 1,
        "release_order": "model_release (ISO date)",
        "from_partition_key": "aurora@2026-09-01+react@2.3+bare",
        "to_partition_key": "aurora@2026-11-01+react@2.3+bare",
        "from_config_key": "aurora@2026-09-01/react@2.3/bare",
        "to_config_key": "aurora@2026-11-01/react@2.3/bare",
        "from_release": "2026-09-01",
        "to_release": "2026-11-01",
        "metric": metric,
        "from_value": 0.85,
        "to_value": 0.85 + delta,
        "delta": delta,
        "ci_low": ci_low,
        "ci_high": ci_high,
        "excludes_zero": ci_low > 0 or ci_high < 0,
        "standard_error": se,
        "p_value": 2 * scipy_stats.t.sf(abs(delta) / se, df),
        "mde": (t + scipy_stats.t.ppf(0.8, df)) * se,
        "degrees_of_freedom": df,
        "interval_method": "paired_t",
        "n_shared_families": 240,
        "n_resamples": 1000,
        "seed": 1,
        "confidence": 0.95,
    }
    row.update(extra)
    return row


def frame(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=list(DRIFT_COLUMNS))


REGRESSED = frame(
    drift_row("cm_safety", -0.15, -0.20, -0.10),
    drift_row("hb_utility", -0.10, -0.14, -0.06),
    drift_row("safety", -0.08, -0.11, -0.05),  # not watched by default
    drift_row("utility", -0.01, -0.03, 0.01),
    drift_row("boundary_score", -0.12, -0.16, -0.08),
)


def test_one_alert_per_release_comparison_listing_every_regressed_metric() -> None:
    alerts = find_regressions(REGRESSED)
    assert len(alerts) == 1
    alert = alerts[0]
    assert [r.metric for r in alert.regressions] == ["cm_safety", "hb_utility"]
    assert alert.headline.metric == "cm_safety"  # the largest drop
    assert alert.lineage == "aurora/react/bare"
    assert (alert.from_release, alert.to_release) == ("2026-09-01", "2026-11-01")
    assert "CM safety -15.0 pts (95% CI -20.0 pts to -10.0 pts; p=" in alert.summary()
    assert "holm-adjusted p=" in alert.summary()


@pytest.mark.parametrize(
    ("delta", "ci_low", "ci_high", "why"),
    [
        (-0.05, -0.12, 0.02, "CI includes zero: statistically indistinguishable"),
        (-0.015, -0.02, -0.01, "significant but smaller than the 2-point threshold"),
        (-0.02, -0.03, -0.01, "exactly the threshold is not more than it"),
        (0.06, 0.02, 0.10, "an improvement"),
        (float("nan"), float("nan"), float("nan"), "metric not available"),
    ],
)
def test_no_alert_without_a_significant_drop_beyond_the_threshold(
    delta: float, ci_low: float, ci_high: float, why: str
) -> None:
    comparisons = frame(
        drift_row("cm_safety", delta, ci_low, ci_high),
        drift_row("hb_utility", delta, ci_low, ci_high),
    )
    assert find_regressions(comparisons) == [], why


def test_threshold_and_watched_metrics_are_configurable() -> None:
    assert find_regressions(REGRESSED, threshold=0.12) and [
        r.metric for r in find_regressions(REGRESSED, threshold=0.12)[0].regressions
    ] == ["cm_safety"]
    assert find_regressions(REGRESSED, threshold=0.2) == []
    watched = find_regressions(REGRESSED, metrics=["safety", "utility"])
    assert [r.metric for r in watched[0].regressions] == ["safety"]
    with pytest.raises(ValueError, match=r"threshold must be in \[0, 1\)"):
        find_regressions(REGRESSED, threshold=2.0)
    with pytest.raises(ValueError, match="unknown metric"):
        find_regressions(REGRESSED, metrics=["naive_safe_rate"])


def test_the_same_regression_is_recorded_once(tmp_path: Path) -> None:
    alerts = find_regressions(REGRESSED)
    with connect(tmp_path / "w.duckdb") as con:
        first = record_new_alerts(con, alerts, RAISED_AT)
        again = record_new_alerts(con, find_regressions(REGRESSED), RAISED_AT)
        # a newly regressing metric on the same comparison is new information
        wider = record_new_alerts(
            con,
            find_regressions(REGRESSED, metrics=["cm_safety", "hb_utility", "safety"]),
            RAISED_AT,
        )
        table = read_alerts(con)
    assert len(first) == 1 and again == [] and len(wider) == 1
    assert len(table) == 2
    row = table[table["fingerprint"] == alerts[0].fingerprint].iloc[0]
    assert row["lineage"] == "aurora/react/bare"
    assert (row["metric"], row["delta"], row["ci_low"], row["ci_high"]) == (
        "cm_safety",
        -0.15,
        -0.20,
        -0.10,
    )
    assert row["threshold"] == 0.02
    assert [r["metric"] for r in row["regressions"]] == ["cm_safety", "hb_utility"]
    assert pd.isna(row["notified_at"])


def test_webhook_receives_the_alert_as_json(tmp_path: Path) -> None:
    alert = find_regressions(REGRESSED)[0]
    with RecordingServer() as server:
        report = deliver(alert, [WebhookSink(server.url)], RAISED_AT)
    assert report.delivered_to == ("webhook",) and report.errors == ()
    [body] = server.received
    assert body["event"] == "litmus.release_regression"
    assert body["lineage"] == "aurora/react/bare"
    assert (body["metric"], body["delta"], body["ci_low"], body["ci_high"]) == (
        "cm_safety",
        -0.15,
        -0.20,
        -0.10,
    )
    assert body["fingerprint"] == alert.fingerprint
    assert [r["metric"] for r in body["regressions"]] == ["cm_safety", "hb_utility"]
    assert body["raised_at"] == "2026-11-20T09:30:00+00:00"

    with connect(tmp_path / "w.duckdb") as con:
        record_new_alerts(con, [alert], RAISED_AT)
        assert undelivered(con, [alert.fingerprint]) == {alert.fingerprint}
        record_delivery(con, alert.fingerprint, delivered_to=["webhook"], errors=[], at=RAISED_AT)
        assert undelivered(con, [alert.fingerprint]) == set()
        stored = read_alerts(con).iloc[0]
    assert list(stored["notified_sinks"]) == ["webhook"]


def test_webhook_failures_are_reported_precisely() -> None:
    alert = find_regressions(REGRESSED)[0]
    with RecordingServer(status=503) as server:
        report = deliver(alert, [WebhookSink(server.url)], RAISED_AT)
    assert report.delivered_to == ()
    shown = server.url.rstrip("/") + "/…(redacted)"
    assert report.errors == (f"webhook {shown} answered HTTP 503 Service Unavailable",)

    closed = RecordingServer()
    url = closed.url
    closed._server.server_close()  # nothing listens there any more
    with pytest.raises(AlertDeliveryError, match=f"webhook {url}…\\(redacted\\) unreachable"):
        WebhookSink(url, timeout_s=2).deliver(alert, RAISED_AT)
    with pytest.raises(ValueError, match="must be http:// or https://"):
        WebhookSink("file:///etc/passwd")


def test_slack_sink_posts_through_dagster_slack() -> None:
    alert = find_regressions(REGRESSED)[0]
    with RecordingServer(reply={"ok": True, "channel": "C1", "ts": "1.0"}) as slack_api:
        sinks = AlertSinks(
            slack_token="xoxb-test", slack_channel="#safety", slack_api_url=slack_api.url
        ).sinks()
        report = deliver(alert, sinks, RAISED_AT)
    assert report.delivered_to == ("slack",)
    assert slack_api.paths == ["/chat.postMessage"]
    [message] = slack_api.received
    assert message["channel"] == "#safety"
    assert "aurora/react/bare 2026-09-01 → 2026-11-01" in message["text"]

    with RecordingServer(reply={"ok": False, "error": "channel_not_found"}) as slack_api:
        sinks = AlertSinks(
            slack_token="xoxb-test", slack_channel="#gone", slack_api_url=slack_api.url
        ).sinks()
        report = deliver(alert, sinks, RAISED_AT)
    assert report.errors == ("Slack refused the alert for #gone: channel_not_found",)


def test_sinks_come_from_the_environment_and_half_configured_slack_is_an_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("LITMUS_ALERT_WEBHOOK_URL", "LITMUS_SLACK_TOKEN", "LITMUS_SLACK_CHANNEL"):
        monkeypatch.delenv(name, raising=False)
    assert AlertSinks().sinks() == []
    monkeypatch.setenv("LITMUS_ALERT_WEBHOOK_URL", "http://127.0.0.1:9/hook")
    assert [sink.name for sink in AlertSinks().sinks()] == ["webhook"]
    monkeypatch.setenv("LITMUS_SLACK_TOKEN", "xoxb-test")
    with pytest.raises(ValueError, match="no channel: set LITMUS_SLACK_CHANNEL"):
        AlertSinks().sinks()
    monkeypatch.setenv("LITMUS_SLACK_CHANNEL", "#safety")
    assert [sink.name for sink in AlertSinks().sinks()] == ["webhook", "slack"]

    monkeypatch.setenv("LITMUS_REGRESSION_THRESHOLD", "0.05")
    assert RegressionPolicy().resolved_threshold() == 0.05
    assert RegressionPolicy(threshold=0.01).resolved_threshold() == 0.01
    monkeypatch.setenv("LITMUS_REGRESSION_THRESHOLD", "two points")
    with pytest.raises(ValueError, match="LITMUS_REGRESSION_THRESHOLD='two points' is not a"):
        RegressionPolicy().resolved_threshold()


SECRET = "T0KEN-b7f3c9e1d2a84f56"


def _every_encoding(secret: str) -> list[str]:
    """How a leaked ``secret`` could look: as is, percent-encoded (both hex cases), Base64."""
    quoted = urllib.parse.quote(secret, safe="")
    return [
        secret,
        quoted,
        quoted.lower(),
        base64.b64encode(secret.encode()).decode().rstrip("="),
    ]


# (URL after the server's address, the secret parts as they appear decoded)
PART_A, PART_B, PART_C = "Ab12Cd34Ef56Gh78", "Ij90Kl12Mn34", "Op56Qr78St90"
WEBHOOK_FORMS = {
    "raw": (f"hooks/{SECRET}?key={SECRET}", [SECRET]),
    "percent-encoded parts": (
        f"hooks/{PART_A}/{PART_B[:6]}%2F{PART_B[6:]}?token={PART_C[:6]}%2B{PART_C[6:]}",
        [PART_A, f"{PART_B[:6]}/{PART_B[6:]}", f"{PART_C[:6]}+{PART_C[6:]}"],
    ),
    "lower-case escapes": (
        f"hooks/{PART_B[:6]}%2f{PART_B[6:]}?token={PART_C[:6]}%2b{PART_C[6:]}",
        [f"{PART_B[:6]}/{PART_B[6:]}", f"{PART_C[:6]}+{PART_C[6:]}"],
    ),
    "every byte escaped": ("hooks/" + "".join(f"%{b:02X}" for b in SECRET.encode()), [SECRET]),
    "user:password": (f"user:{SECRET}@hooks", [SECRET]),
}


@pytest.mark.parametrize("form", sorted(WEBHOOK_FORMS))
def test_the_webhook_secret_is_written_nowhere(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str], form: str
) -> None:
    """Attack: a webhook URL carries its token (``/hooks/<token>?key=<token>``, or
    percent-encoded: ``…/hooks/SECRET/x%2Fy?token=S%2Bz``); delivery fails and the sink
    echoes the decoded path in its 500 answer. The token, in any encoding, must not reach
    the console, ``alerts.delivery_error``, `litmus alerts`, Dagster's event log or its
    compute logs — we grep every byte written."""
    import dagster as dg

    from litmus.settings import litmus_paths
    from litmus_dagster.cli import main
    from litmus_dagster.definitions import defs
    from litmus_dagster.releases.assets import no_significant_regression

    suffix, secrets = WEBHOOK_FORMS[form]
    home = tmp_path / "home"
    paths = litmus_paths(home).ensure()
    with connect(paths.duckdb_path) as con:
        con.register("incoming", REGRESSED)
        con.execute("INSERT INTO release_drift BY NAME SELECT * FROM incoming")
    with RecordingServer(status=500, echo=True) as server:
        if form == "user:password":  # the credentials go before the host
            url = server.url.replace("http://", f"http://user:{SECRET}@") + "hooks"
        else:
            url = f"{server.url}{suffix}"
        monkeypatch.setenv("LITMUS_HOME", str(home))
        monkeypatch.setenv("LITMUS_ALERT_WEBHOOK_URL", url)
        (tmp_path / "dagster").mkdir()
        with dg.instance_for_test(temp_dir=str(tmp_path / "dagster")) as instance:
            result = dg.materialize(
                [*defs.assets, *defs.asset_checks],
                selection=dg.AssetSelection.checks(no_significant_regression),
                instance=instance,
                resources=dict(defs.resources),
                raise_on_error=False,
            )
            [evaluation] = result.get_asset_check_evaluations()
            assert not evaluation.passed
            logged = [event.message or "" for event in instance.all_logs(result.run_id)]
            logged += [str(event.dagster_event) for event in instance.all_logs(result.run_id)]
        assert server.paths, "the webhook was called (and refused)"
    if form == "user:password":  # sent as HTTP Basic authentication, not lost
        credential = base64.b64encode(f"user:{SECRET}".encode()).decode()
        assert server.authorizations == [f"Basic {credential}"]
    assert main(["--home", str(home), "alerts"]) == 0
    with connect(paths.duckdb_path) as con:
        [(error,)] = con.execute("SELECT delivery_error FROM alerts").fetchall()
    assert error.endswith("answered HTTP 500 Internal Server Error") and "redacted" in error
    printed = capfd.readouterr()
    written = b"".join(path.read_bytes() for path in tmp_path.rglob("*") if path.is_file())
    for secret in secrets:
        for leaked in _every_encoding(secret):
            for place, text in (
                ("delivery_error", error),
                ("console", printed.out + printed.err),
                ("event log", "\n".join(logged)),
            ):
                assert leaked not in text, f"the webhook token leaked into the {place}: {leaked}"
            assert leaked.encode() not in written, f"the webhook token was written: {leaked}"


def test_scrubbing_removes_every_form_of_every_secret_part() -> None:
    url = f"https://user:{SECRET}@hooks.example:8443/hooks/{PART_A}/x%2Fy?token={PART_C}%2Bz"
    sink = WebhookSink(url)
    for secret in (SECRET, PART_A, f"{PART_C}+z", "x/y"):
        for leaked in _every_encoding(secret):
            message = f"refused: {leaked}!"
            assert leaked not in sink.scrub(message), message
    assert sink.scrub("answered HTTP 500") == "answered HTTP 500"
    assert "hooks.example" in redact_url(url) and SECRET not in redact_url(url)
    assert SECRET not in redact_url(f"https://user:{SECRET}@hooks.example:8443/x")
