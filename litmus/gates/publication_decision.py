"""Whether each configuration is published, and why not: decided here and nowhere else.

The ``publication`` relation has one row per configuration (partition key, published,
reasons). The leaderboard (and so its receipt, ``litmus verify`` and the release drift),
``litmus status`` and the gate assets' metadata in the UI all read it. A configuration is
withheld, fail closed, while any of these holds; the reasons are listed in this order:

1. no publication gate verdict is recorded for it ("gates not run"), or
2. a gate did not pass (false, or NULL: not evaluated yet), with the gate's message — except
   that a configuration whose only gate without a passing verdict is the rates gate with
   none yet (labeled and gated, its metrics not computed: a run cut short) is "not scored
   yet", which is what it is, not a failed gate;
3. its measured labeling disagreement exceeds its bound (``litmus.audit.spotcheck``).

Each reason has a short ``code`` (what ``litmus status`` prints) and a ``message`` (what the
board prints beside the withheld row). The gate verdicts judge the audited rows they were
evaluated on, which are the rows the metrics are computed from; rebuilding a configuration's
audited rows forgets its verdicts (``litmus.audit.audited``), so it is withheld until gated again.
Audited rows that are out of date (verdicts loaded since) are the plan's to refresh
(``litmus.planning.plan``); ``litmus status`` says so in place of the verdicts about to be replaced.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import duckdb

from litmus.gates.publication_gates import RATES_IN_UNIT_INTERVAL, RATES_PENDING_MESSAGE

AUDIT_OUT_OF_DATE = "audited rows out of date"
NOT_GATED = "gates not run"
NOT_GATED_REASON = "publication gates were not evaluated for this configuration"
NOT_SCORED = "not scored yet"
NOT_SCORED_REASON = (
    "not scored yet: labeled and gated, its metrics are computed by the next `litmus run`"
)
# SPEC §7 names no labeling gate: the spot checks' measured disagreement (litmus.audit.spotcheck)
LABELING_GATE = "labeling_error"


@dataclass(frozen=True)
class Reason:
    code: str  # a gate name, or one of the constants above
    message: str


@dataclass(frozen=True)
class Publication:
    """One row of the relation: what is known of a configuration, and the decision."""

    partition_key: str
    gated: bool = True  # some gate verdict is recorded
    failed_gates: tuple[Reason, ...] = ()  # gates that did not pass (false or NULL)
    labeling_note: str | None = None  # set when the labeling disagreement withholds it

    @property
    def reasons(self) -> tuple[Reason, ...]:
        """Why it is withheld (empty: published). The one place this is decided."""
        reasons: list[Reason] = []
        if not self.gated:
            reasons.append(Reason(NOT_GATED, NOT_GATED_REASON))
        else:
            reasons.extend(self.failed_gates)
        if self.labeling_note is not None:
            reasons.append(Reason(LABELING_GATE, f"{LABELING_GATE}: {self.labeling_note}"))
        return tuple(reasons)

    @property
    def published(self) -> bool:
        return not self.reasons

    @property
    def board_reasons(self) -> list[str]:
        return [reason.message for reason in self.reasons]

    def describe(self) -> str:
        """``published``, or ``withheld: `` and the reason codes."""
        if self.published:
            return "published"
        return "withheld: " + ", ".join(reason.code for reason in self.reasons)


def status_text(entry: Publication, *, audit_current: bool) -> str:
    """What ``litmus status`` says of a configuration's publication: the relation's verdict,
    or, while its audited rows wait for a refresh (the plan's re-audit), that: the verdicts
    on record judge rows the next run replaces."""
    return entry.describe() if audit_current else f"withheld: {AUDIT_OUT_OF_DATE}"


def publication(
    con: duckdb.DuckDBPyConnection, partition_keys: Iterable[str] = ()
) -> dict[str, Publication]:
    """The publication relation, over ``partition_keys`` and every configuration with gate
    verdicts or a labeling measurement. Reads only (a read-only connection is enough)."""
    gates = _gate_rows(con)
    labeling = _labeling_withheld(con)
    keys = set(partition_keys) | set(gates) | set(labeling)
    return {
        key: Publication(
            partition_key=key,
            gated=key in gates,
            failed_gates=_failed_gates(gates.get(key, [])),
            labeling_note=labeling.get(key),
        )
        for key in sorted(keys)
    }


def _failed_gates(rows: list[tuple[str, bool | None, str | None]]) -> tuple[Reason, ...]:
    failed = [(gate, passed, message) for gate, passed, message in rows if passed is not True]
    # the one row of a configuration whose metrics were never computed: not scored yet
    if failed == [(RATES_IN_UNIT_INTERVAL, None, RATES_PENDING_MESSAGE)]:
        return (Reason(NOT_SCORED, NOT_SCORED_REASON),)
    return tuple(
        Reason(gate, f"{gate}: {message or gate + ' failed'}") for gate, _, message in failed
    )


def withheld_reasons(
    con: duckdb.DuckDBPyConnection, partition_keys: Iterable[str] = ()
) -> dict[str, list[str]]:
    """partition_key → the board's reasons, for every withheld configuration."""
    return {
        key: entry.board_reasons
        for key, entry in publication(con, partition_keys).items()
        if not entry.published
    }


def _gate_rows(
    con: duckdb.DuckDBPyConnection,
) -> dict[str, list[tuple[str, bool | None, str | None]]]:
    rows: dict[str, list[tuple[str, bool | None, str | None]]] = {}
    for key, gate, passed, message in con.execute(
        "SELECT partition_key, gate, passed, message FROM publication_gates "
        "ORDER BY partition_key, gate, message"
    ).fetchall():
        rows.setdefault(key, []).append((gate, passed, message))
    return rows


def _labeling_withheld(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    return dict(
        con.execute(
            "SELECT partition_key, coalesce(labeling_note, '') FROM labeling_agreement "
            "WHERE labeling_status = 'withheld' ORDER BY partition_key"
        ).fetchall()
    )
