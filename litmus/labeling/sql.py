"""The production labeler: SPEC §5 over a whole configuration partition in DuckDB.

Two steps. ``compute_refusal_signals`` runs the refusal classifier over the agent's own words
(DuckDB gathers them and their distinct sequences; Python classifies each sequence once);
then ``label_partition`` evaluates evidence and the decision tables for every trajectory at
once with ``litmus/sql/label_partition.sql``. The partition is replaced in one transaction.
"""

from __future__ import annotations

import contextlib
import json
from dataclasses import dataclass, field
from importlib import resources

import duckdb
import pyarrow as pa
from duckdb.sqltypes import VARCHAR

from litmus.faults import kill_once
from litmus.globmatch import equality_json, match_text
from litmus.labeling import LABELER_VERSION
from litmus.labeling.agent_texts import classify_agent_texts
from litmus.labeling.refusal import (
    LOW_CONFIDENCE,
    RefusalClassifier,
    RefusalVerdict,
    RuleBasedRefusalClassifier,
    default_classifier,
)
from litmus.labeling.refusal_bulk import classify_many
from litmus.tokens import LABELED_ROWS, renew_partition_token
from litmus.warehouse import atomically

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


# A text is blank to ``agent_texts`` when ``str.strip()`` leaves nothing: every character is
# one ``str.isspace`` accepts. RE2's ``\s`` is ASCII only, so DuckDB gets them spelled out
# (tests/test_labeler_equivalence.py checks this list against Python's own).
PYTHON_WHITESPACE = (
    "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005"
    "\u2006\u2007\u2008\u2009\u200a\u2028\u2029\u202f\u205f\u3000"
)
BLANK_TEXT_PATTERN = "[" + "".join(f"\\x{{{ord(c):x}}}" for c in PYTHON_WHITESPACE) + "]*"

# Each trajectory's agent texts as ``agent_texts`` gives them, split into the texts and their
# steps: the non-blank step messages in step order, then the final response at step n_steps.
AGENT_TEXTS_SQL = """
CREATE OR REPLACE TEMP TABLE litmus_agent_texts AS
WITH spoken AS (
    SELECT t.trajectory_id, t.n_steps, t.final_response,
           t.final_response IS NOT NULL AND NOT regexp_full_match(t.final_response, $blank)
               AS final_spoken,
           coalesce(list(s.message ORDER BY s.step_idx) FILTER (WHERE s.message IS NOT NULL),
                    []::VARCHAR[]) AS messages,
           coalesce(list(s.step_idx ORDER BY s.step_idx) FILTER (WHERE s.message IS NOT NULL),
                    []::INTEGER[]) AS message_steps
    FROM raw_trajectories t
    LEFT JOIN (SELECT trajectory_id, step_idx, message FROM raw_steps
               WHERE partition_key = $partition_key AND message IS NOT NULL
                 AND NOT regexp_full_match(message, $blank)) s
      USING (trajectory_id)
    WHERE t.partition_key = $partition_key
    GROUP BY t.trajectory_id, t.n_steps, t.final_response
)
SELECT trajectory_id,
       CASE WHEN final_spoken THEN list_append(messages, final_response) ELSE messages END
           AS texts,
       CASE WHEN final_spoken THEN list_append(message_steps, n_steps) ELSE message_steps END
           AS text_steps
FROM spoken
"""
_DROP_SIGNAL_TABLES = (
    "DROP TABLE IF EXISTS litmus_agent_texts",
    "DROP TABLE IF EXISTS litmus_text_groups",
    "DROP TABLE IF EXISTS litmus_text_verdicts",
)


def compute_refusal_signals(
    con: duckdb.DuckDBPyConnection, partition_key: str, classifier: RefusalClassifier
) -> int:
    """Write the classifier's opinion of every trajectory in the partition.

    DuckDB gathers each trajectory's texts and their distinct sequences; Python classifies each
    distinct sequence once (a verdict depends on the texts alone) and DuckDB joins the
    verdicts back, the refusal's position in the sequence becoming its step.
    """
    con.execute("DELETE FROM refusal_signals WHERE partition_key = ?", [partition_key])
    con.execute(AGENT_TEXTS_SQL, {"partition_key": partition_key, "blank": BLANK_TEXT_PATTERN})
    con.execute(
        "CREATE OR REPLACE TEMP TABLE litmus_text_groups AS "
        "SELECT texts, (row_number() OVER () - 1)::BIGINT AS text_group "
        "FROM (SELECT DISTINCT texts FROM litmus_agent_texts)"
    )
    con.execute(
        "CREATE OR REPLACE TEMP TABLE litmus_text_verdicts (text_group BIGINT, "
        "refusal VARCHAR, position INTEGER, confidence DOUBLE, engagement INTEGER)"
    )
    [(groups,)] = con.execute("SELECT count(*) FROM litmus_text_groups").fetchall()
    # Temp tables are this connection's own (a cursor cannot stream them while this
    # connection writes), so the sequences come in ranges of their group number.
    for start in range(0, groups, TEXT_BATCH_ROWS):
        batch = con.sql(
            "SELECT text_group, texts FROM litmus_text_groups "
            "WHERE text_group >= $start AND text_group < $stop",
            params={"start": start, "stop": start + TEXT_BATCH_ROWS},
        ).to_arrow_table()
        verdicts = _classify_sequences(batch.column("texts").to_pylist(), classifier)
        frame = pa.table(
            {
                "text_group": batch.column("text_group"),
                "refusal": pa.array([v.refusal for v, _ in verdicts], pa.string()),
                "position": pa.array([p for _, p in verdicts], pa.int32()),
                "confidence": pa.array([float(v.confidence) for v, _ in verdicts], pa.float64()),
                "engagement": pa.array([v.engagement for v, _ in verdicts], pa.int32()),
            }
        )
        con.register("incoming_verdicts", frame)
        con.execute("INSERT INTO litmus_text_verdicts SELECT * FROM incoming_verdicts")
        con.unregister("incoming_verdicts")
    con.execute(
        """
        INSERT INTO refusal_signals
        SELECT a.trajectory_id, ?, ?, v.refusal, a.text_steps[v.position + 1],
               v.confidence, v.engagement
        FROM litmus_agent_texts a
        JOIN litmus_text_groups g ON a.texts = g.texts
        JOIN litmus_text_verdicts v USING (text_group)
        """,
        [partition_key, classifier.version],
    )
    [(total,)] = con.execute("SELECT count(*) FROM litmus_agent_texts").fetchall()
    # Dropped once done; after an error they go with the rolled-back transaction, and
    # CREATE OR REPLACE replaces any a failed autocommit call left behind.
    for drop in _DROP_SIGNAL_TABLES:
        con.execute(drop)
    return total


def _classify_sequences(
    sequences: list[list[str]], classifier: RefusalClassifier
) -> list[tuple[RefusalVerdict, int | None]]:
    """Each text sequence's verdict and the position of the text its refusal points at.

    The rule classifier reads the non-empty sequences through its bulk path
    (``refusal_bulk.classify_many``, the same verdicts, cheaper per text); any other
    classifier, and a trajectory that said nothing, go through ``classify_agent_texts``.
    """
    verdicts: list[tuple[RefusalVerdict, int | None] | None] = [None] * len(sequences)
    if type(classifier) is RuleBasedRefusalClassifier:
        spoken = [index for index, texts in enumerate(sequences) if texts]
        bulk = classify_many([sequences[index] for index in spoken], sql_settlement=False)
        for index, verdict in zip(spoken, bulk, strict=True):
            verdicts[index] = (verdict, verdict.step)
    return [
        verdict or classify_agent_texts(list(enumerate(texts)), classifier)
        for verdict, texts in zip(verdicts, sequences, strict=True)
    ]


def _state_canonical(value_json: str) -> str:
    return equality_json(json.loads(value_json))


def _state_text(value_json: str) -> str:
    return match_text(json.loads(value_json))


# A post-state value that is not a string is compared as JSON text: its canonical JSON for
# ``equals`` and its compact JSON for ``matches``, both as Python's json writes them (DuckDB
# writes numbers and escapes its own way: 1e-05 as 0.00001). DuckDB resolves the pointer and
# hands over the value's JSON; Python only rewrites that text, and only for non-strings.
STATE_FUNCTIONS = (
    ("litmus_state_canonical", _state_canonical),
    ("litmus_state_text", _state_text),
)


def register_state_functions(con: duckdb.DuckDBPyConnection) -> None:
    """Define the label SQL's two post-state value functions on ``con`` (again if present)."""
    for name, function in STATE_FUNCTIONS:
        with contextlib.suppress(duckdb.InvalidInputException):  # not defined here yet
            con.remove_function(name)
        con.create_function(name, function, [VARCHAR], VARCHAR, side_effects=False)


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
    register_state_functions(con)
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


def unsafe_counts(con: duckdb.DuckDBPyConnection, partition_key: str) -> tuple[int, int]:
    """(unsafe by the naive rule, unsafe by the corrected labeler) of a labeled partition."""
    naive, corrected = con.execute(
        "SELECT count(*) FILTER (WHERE naive_label = 'unsafe'), "
        "count(*) FILTER (WHERE label = 'unsafe') "
        "FROM labeled_trajectories WHERE partition_key = ?",
        [partition_key],
    ).fetchone()
    return int(naive), int(corrected)


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
    outcomes, audit_reasons = atomically(
        con,
        lambda: _label_partition_once(con, partition_key, classifier, judge),
        what=f"labeling {partition_key}",
    )
    return PartitionLabelReport(
        partition_key=partition_key,
        trajectories=sum(outcomes.values()),
        outcomes=outcomes,
        needs_audit=outcomes.get("insufficient_evidence", 0),
        classifier_version=classifier.version,
        audit_reasons=audit_reasons,
    )


def _label_partition_once(
    con: duckdb.DuckDBPyConnection,
    partition_key: str,
    classifier: RefusalClassifier,
    judge: tuple[str, str] | None,
) -> tuple[dict[str, int], dict[str, int]]:
    compute_refusal_signals(con, partition_key, classifier)
    con.execute("DELETE FROM trajectory_labels WHERE partition_key = ?", [partition_key])
    run_label_sql(con, partition_key, judge=judge)
    # results computed from these rows (the audit queue) see that they changed
    renew_partition_token(con, LABELED_ROWS, partition_key)
    kill_once("labeling.written", partition_key)  # tests/test_scale_out_lake.py
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
    return outcomes, audit_reasons
