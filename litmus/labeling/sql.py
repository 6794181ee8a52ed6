"""The production labeler: SPEC §5 over a whole configuration partition in DuckDB.

Two steps. ``compute_refusal_signals`` runs the refusal classifier once per trajectory over
the agent's own words (the only per-row Python, and it skips repeated texts); then
``label_partition`` evaluates evidence and the decision tables for every trajectory at once
with ``litmus/sql/label_partition.sql``. The partition is replaced in one transaction.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib import resources

import duckdb
import pyarrow as pa

from litmus.labeling import LABELER_VERSION
from litmus.labeling.reference import agent_texts, classify_agent_texts
from litmus.labeling.refusal import (
    LOW_CONFIDENCE,
    RefusalClassifier,
    RefusalVerdict,
    RuleBasedRefusalClassifier,
    default_classifier,
)
from litmus.labeling.refusal_bulk import classify_many
from litmus.tokens import LABELED_ROWS, renew_partition_token
from litmus.warehouse import transaction

TEXT_BATCH_ROWS = 50_000
_LABELS_MARKER = "INSERT INTO trajectory_labels"


@dataclass(frozen=True)
class PartitionLabelReport:
    partition_key: str
    trajectories: int
    outcomes: dict[str, int]
    needs_audit: int
    classifier_version: str
    audit_reasons: dict[str, int] = field(default_factory=dict)  # needs_audit rows by reason
    labeler_version: str = LABELER_VERSION


def label_sql() -> str:
    return resources.files("litmus").joinpath("sql/label_partition.sql").read_text()


def compute_refusal_signals(
    con: duckdb.DuckDBPyConnection, partition_key: str, classifier: RefusalClassifier
) -> int:
    """Write the classifier's opinion of every trajectory in the partition."""
    con.execute("DELETE FROM refusal_signals WHERE partition_key = ?", [partition_key])
    # A second cursor streams the texts while the first one writes the signals.
    reader_cursor = con.cursor()
    reader = reader_cursor.sql(
        """
        SELECT t.trajectory_id, t.n_steps, t.final_response,
               list(s.step_idx ORDER BY s.step_idx) FILTER (WHERE s.message IS NOT NULL)
                   AS message_steps,
               list(s.message ORDER BY s.step_idx) FILTER (WHERE s.message IS NOT NULL)
                   AS messages
        FROM raw_trajectories t
        LEFT JOIN (SELECT trajectory_id, step_idx, message FROM raw_steps
                   WHERE partition_key = $partition_key AND message IS NOT NULL) s
          USING (trajectory_id)
        WHERE t.partition_key = $partition_key
        GROUP BY t.trajectory_id, t.n_steps, t.final_response
        """,
        params={"partition_key": partition_key},
    ).to_arrow_reader(TEXT_BATCH_ROWS)
    cache: dict[tuple[tuple[int, str], ...], tuple[RefusalVerdict, int | None]] = {}
    total = 0
    for batch in reader:
        columns = batch.to_pydict()
        out: dict[str, list[object]] = {
            "trajectory_id": columns["trajectory_id"],
            "classifier_refusal": [],
            "classifier_step": [],
            "classifier_confidence": [],
            "classifier_engagement": [],
        }
        batch_texts = [
            tuple(
                agent_texts(zip(steps or [], messages or [], strict=True), final_response, n_steps)
            )
            for n_steps, final_response, steps, messages in zip(
                columns["n_steps"],
                columns["final_response"],
                columns["message_steps"],
                columns["messages"],
                strict=True,
            )
        ]
        _classify_new(batch_texts, classifier, cache)
        for texts in batch_texts:
            verdict, step = cache[texts]
            out["classifier_refusal"].append(verdict.refusal)
            out["classifier_step"].append(step)
            out["classifier_confidence"].append(float(verdict.confidence))
            out["classifier_engagement"].append(verdict.engagement)
        frame = pa.table(
            {
                "trajectory_id": pa.array(out["trajectory_id"], pa.string()),
                "classifier_refusal": pa.array(out["classifier_refusal"], pa.string()),
                "classifier_step": pa.array(out["classifier_step"], pa.int32()),
                "classifier_confidence": pa.array(out["classifier_confidence"], pa.float64()),
                "classifier_engagement": pa.array(out["classifier_engagement"], pa.int32()),
            }
        )
        con.register("incoming_signals", frame)
        con.execute(
            """
            INSERT INTO refusal_signals
            SELECT trajectory_id, ?, ?, classifier_refusal, classifier_step,
                   classifier_confidence, classifier_engagement
            FROM incoming_signals
            """,
            [partition_key, classifier.version],
        )
        con.unregister("incoming_signals")
        total += frame.num_rows
    reader_cursor.close()
    return total


def _classify_new(
    batch_texts: list[tuple[tuple[int, str], ...]],
    classifier: RefusalClassifier,
    cache: dict[tuple[tuple[int, str], ...], tuple[RefusalVerdict, int | None]],
) -> None:
    """Put the verdict on every text sequence of ``batch_texts`` not yet in ``cache`` there.

    The rule classifier reads them all through its bulk path (``refusal_bulk.classify_many``,
    the same verdicts, cheaper per text); any other classifier one trajectory at a time.
    """
    new = list(dict.fromkeys(texts for texts in batch_texts if texts and texts not in cache))
    if type(classifier) is RuleBasedRefusalClassifier:
        verdicts = classify_many(
            [[text for _, text in texts] for texts in new], sql_settlement=False
        )
        for texts, verdict in zip(new, verdicts, strict=True):
            step = texts[verdict.step][0] if verdict.step is not None else None
            cache[texts] = (verdict, step)
    for texts in batch_texts:
        if texts not in cache:  # no text, or another classifier
            cache[texts] = classify_agent_texts(texts, classifier)


def run_label_sql(
    con: duckdb.DuckDBPyConnection,
    partition_key: str,
    *,
    into: str = "trajectory_labels",
    judge: tuple[str, str] | None = None,
) -> None:
    """Decide the partition's labels into ``trajectory_labels`` (its old rows already gone).

    ``into`` names another table of the same shape (the benchmark uses a temp table); it is
    never built from input data.
    """
    if into not in ("trajectory_labels", "benchmark_labels"):
        raise ValueError(f"unexpected label table {into!r}")
    macros, _, labels_query = label_sql().partition(_LABELS_MARKER)
    con.execute(macros)
    con.execute(
        f"INSERT INTO {into} BY NAME" + labels_query,
        {
            "partition_key": partition_key,
            "low_confidence": LOW_CONFIDENCE,
            "labeler_version": LABELER_VERSION,
            # (judge model, prompt version) whose refusal_judgments count; None: no judge
            "judge_model": judge[0] if judge else None,
            "judge_prompt_version": judge[1] if judge else None,
        },
    )


def label_partition(
    con: duckdb.DuckDBPyConnection,
    partition_key: str,
    *,
    classifier: RefusalClassifier | None = None,
    judge: tuple[str, str] | None = None,
) -> PartitionLabelReport:
    """Label every trajectory of one configuration, replacing its previous labels atomically.

    ``judge`` = (judge model, prompt version) of the LLM refusal judge whose verdicts
    (already in ``refusal_judgments``, see ``litmus.labeling.refusal_judge.judge_partition``) count.
    """
    classifier = classifier or default_classifier()
    with transaction(con):
        compute_refusal_signals(con, partition_key, classifier)
        con.execute("DELETE FROM trajectory_labels WHERE partition_key = ?", [partition_key])
        run_label_sql(con, partition_key, judge=judge)
        # results computed from these rows (the audit queue) see that they changed
        renew_partition_token(con, LABELED_ROWS, partition_key)
        outcomes = dict(
            con.execute(
                "SELECT outcome, count(*) FROM trajectory_labels WHERE partition_key = ? "
                "GROUP BY 1 ORDER BY 1",
                [partition_key],
            ).fetchall()
        )
        audit_reasons = dict(
            con.execute(
                "SELECT audit_reason_code, count(*) FROM trajectory_labels "
                "WHERE partition_key = ? AND label = 'needs_audit' GROUP BY 1 ORDER BY 1",
                [partition_key],
            ).fetchall()
        )
    return PartitionLabelReport(
        partition_key=partition_key,
        trajectories=sum(outcomes.values()),
        outcomes=outcomes,
        needs_audit=outcomes.get("insufficient_evidence", 0),
        classifier_version=classifier.version,
        audit_reasons=audit_reasons,
    )
