"""Resources of the releases domain: the regression policy and where alerts go.

Every field may be left empty and is then read from the environment when used (so a secret
such as the Slack token is never part of the resource configuration the UI shows):

| field | environment variable | default |
|---|---|---|
| ``RegressionPolicy.threshold`` | ``LITMUS_REGRESSION_THRESHOLD`` | 0.02 (2 points) |
| ``RegressionPolicy.correction`` | ``LITMUS_REGRESSION_CORRECTION`` | ``holm`` (or ``bh``) |
| ``AlertSinks.webhook_url`` | ``LITMUS_ALERT_WEBHOOK_URL`` | no webhook |
| ``AlertSinks.slack_token`` | ``LITMUS_SLACK_TOKEN`` | no Slack |
| ``AlertSinks.slack_channel`` | ``LITMUS_SLACK_CHANNEL`` | required with a token |
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import datetime

import dagster as dg
from dagster_slack import SlackResource
from pydantic import Field

from litmus.releases.alerts import (
    CORRECTIONS,
    DEFAULT_CORRECTION,
    DEFAULT_REGRESSION_METRICS,
    DEFAULT_REGRESSION_THRESHOLD,
    WEBHOOK_TIMEOUT_S,
    AlertDeliveryError,
    AlertSink,
    RegressionAlert,
    WebhookSink,
    validate_policy,
)

THRESHOLD_ENV = "LITMUS_REGRESSION_THRESHOLD"
CORRECTION_ENV = "LITMUS_REGRESSION_CORRECTION"
WEBHOOK_ENV = "LITMUS_ALERT_WEBHOOK_URL"
SLACK_TOKEN_ENV = "LITMUS_SLACK_TOKEN"
SLACK_CHANNEL_ENV = "LITMUS_SLACK_CHANNEL"


class RegressionPolicy(dg.ConfigurableResource):
    """When a release comparison is a regression (SPEC §9)."""

    threshold: float | None = None  # a drop larger than this (rate units: 0.02 = 2 points)
    metrics: list[str] = Field(default_factory=lambda: list(DEFAULT_REGRESSION_METRICS))
    # multiple-comparison control across watched metrics × lineages: holm | bh | none
    correction: str | None = None

    def resolved_correction(self) -> str:
        value = (
            self.correction
            if self.correction is not None
            else os.environ.get(CORRECTION_ENV, "").strip() or DEFAULT_CORRECTION
        ).lower()
        if value not in CORRECTIONS:
            source = "RegressionPolicy.correction" if self.correction else CORRECTION_ENV
            raise ValueError(f"{source}={value!r}: choose one of {list(CORRECTIONS)}")
        return value

    def resolved_threshold(self) -> float:
        if self.threshold is not None:
            value = float(self.threshold)
        else:
            text = os.environ.get(THRESHOLD_ENV, "").strip()
            try:
                value = float(text) if text else DEFAULT_REGRESSION_THRESHOLD
            except ValueError:
                raise ValueError(
                    f"{THRESHOLD_ENV}={text!r} is not a number (a rate drop such as 0.02)"
                ) from None
        validate_policy(value, self.metrics)
        return value


@dataclass(frozen=True)
class SlackSink:
    """Post the alert's summary to a Slack channel through dagster-slack's client."""

    slack: SlackResource
    channel: str
    api_url: str = ""
    name: str = "slack"

    def deliver(self, alert: RegressionAlert, raised_at: datetime) -> None:
        from slack_sdk.errors import SlackApiError, SlackClientError

        client = self.slack.get_client()
        if self.api_url:
            client.base_url = self.api_url if self.api_url.endswith("/") else self.api_url + "/"
        client.timeout = int(WEBHOOK_TIMEOUT_S)
        try:
            client.chat_postMessage(
                channel=self.channel, text=":rotating_light: " + alert.summary()
            )
        except SlackApiError as error:
            raise AlertDeliveryError(
                f"Slack refused the alert for {self.channel}: {error.response.get('error')}"
            ) from None
        except (SlackClientError, OSError) as error:
            raise AlertDeliveryError(f"Slack unreachable: {error}") from None


class AlertSinks(dg.ConfigurableResource):
    """Where regression alerts are sent: a generic JSON webhook and/or Slack (dagster-slack).

    A sink that is not configured is skipped; with none configured alerts are still written
    to the ``alerts`` table and shown by the failed check.
    """

    webhook_url: str = ""
    slack_token: str = ""
    slack_channel: str = ""
    slack_api_url: str = ""  # Slack Web API base URL; empty = Slack's own
    timeout_s: float = WEBHOOK_TIMEOUT_S

    def sinks(self) -> list[AlertSink]:
        """The configured sinks; a half-configured Slack sink is an error, not a silent skip."""
        chosen: list[AlertSink] = []
        webhook = self.webhook_url or os.environ.get(WEBHOOK_ENV, "").strip()
        if webhook:
            chosen.append(WebhookSink(webhook, timeout_s=self.timeout_s))
        token = self.slack_token or os.environ.get(SLACK_TOKEN_ENV, "").strip()
        channel = self.slack_channel or os.environ.get(SLACK_CHANNEL_ENV, "").strip()
        if token and not channel:
            raise ValueError(
                f"a Slack token is configured but no channel: set {SLACK_CHANNEL_ENV} "
                "(or AlertSinks.slack_channel)"
            )
        if token:
            chosen.append(SlackSink(SlackResource(token=token), channel, self.slack_api_url))
        return chosen
