"""The vectorized accepted path of ingestion (issue 16): DuckDB proves records valid in bulk.

A batch of lines goes to DuckDB as one Arrow column. A few SQL statements accept every line
whose every field they can *prove* is exactly what the strict validator (``formats.RunRecord``,
behind ``run_files._parse_line`` and ``run_files._validate``) accepts, and compute the same
stored values the per-record path computes. A line they cannot prove is handed back
untouched, and the per-record path decides it: so a quarantined record's reason never
depends on this module.

How a line is read: one ``json_transform`` into the record's structure whose every leaf is
typed ``JSON``, so each field arrives as the compact JSON text DuckDB writes for its value
(NULL when it is null or absent), and one ``json_keys`` of its objects. A JSON text says its
own type by its first character (``"`` a string, ``{`` an object, ``t``/``f`` a boolean, a
digit or ``-`` a number), and a number's text is DuckDB's canonical writing of it, so
nothing is coerced: ``1``, ``1.0``, ``"1"``, ``true``, ``NaN`` and ``1e400`` are different
texts. Steps arrive as JSON texts too and are read the same way, once each. The type and
value checks are then plain string predicates on those texts, per row; the key lists, which
a batch holds few distinct ones of, are checked once per distinct list.

What "prove" means here is deliberately narrower than what the validator accepts; anything
outside it falls back:

- the line is exactly one JSON object (``{`` … ``}``, nothing around it) that DuckDB's parser
  reads, with no ``,]`` / ``,}`` anywhere (DuckDB allows trailing commas, Python does not)
  and no ``\\u00XX`` control-character escape (DuckDB writes those with upper-case hex,
  Python with lower-case, and ``\\u0000`` is best left to the reference);
- every object holds only the model's field names, each once: its ``json_keys`` list (which
  names every duplicate and unknown key) has as many entries as its intersection with the
  model's fields (which has no duplicates);
- every field has exactly the JSON type the strict model wants: integers only as unsigned
  canonical integers in range (so never ``-1``, ``1.0``, ``NaN``, ``Infinity`` or ``1e400``,
  all of which DuckDB reads), and a field the model does not allow to be null (``epoch``,
  ``tool_call.arguments``) absent, not null (its key tells the two apart);
- an object whose fields are all optional (``judgments``) holds at least one key: DuckDB
  reads a number or a text where a structure is expected as a structure of nulls, the same
  as ``{}``, so ``{}`` itself falls back (a step is a JSON text, whose type is its own);
- a tool call's arguments are one flat object of strings, booleans and integers of at most
  18 digits (a null, a nested value, a float or a longer integer falls back), so the compact
  JSON DuckDB writes for them is the text Python's ``json.dumps`` writes;
- the record's suite, version and instance are stored.

Lone surrogates, invalid UTF-8 (decoded in Python first), raw control characters and
malformed JSON make DuckDB's parser say "not valid", so they fall back too. Duplicates across
lines and files are not decided here: both paths stage rows and ``run_files`` quarantines
duplicates afterwards, the same way for both.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from typing import Any

import duckdb
import pyarrow as pa

from litmus.formats import (
    INPUT_ROLES,
    JUDGE_REFUSALS,
    MAX_EPOCH,
    TERMINATIONS,
    TOOL_STATUSES,
    Judgments,
    RunConfig,
    RunRecord,
    Step,
    StepInput,
    ToolCall,
    ToolResult,
    UnguardedEffect,
)
from litmus.keys import config_key, lineage_key, partition_key_for

INT64_DIGITS = 19
MAX_SCORE = 3

# The field names this module type-checks, per model: a model that gains or loses a field
# must change this module too (checked below, at import), or it would accept unchecked input.
RECORD_FIELDS = (
    "schema_version",
    "run_id",
    "config",
    "suite",
    "suite_version",
    "instance_id",
    "epoch",
    "steps",
    "termination",
    "final_response",
    "unguarded_effect",
    "harm_prevented_by",
    "judgments",
)
CONFIG_FIELDS = ("model", "model_release", "harness", "harness_version", "plugin", "policy_version")
STEP_FIELDS = ("input", "thought", "message", "tool_call", "tool_result")
INPUT_FIELDS = ("role", "content")
TOOL_CALL_FIELDS = ("name", "arguments")
TOOL_RESULT_FIELDS = ("status", "output")
EFFECT_FIELDS = ("description", "prohibited")
JUDGMENT_FIELDS = (
    "refusal",
    "task_completed",
    "helpfulness",
    "tool_call_risk",
    "engagement",
    "judge",
)

for _model, _fields in (
    (RunRecord, RECORD_FIELDS),
    (RunConfig, CONFIG_FIELDS),
    (Step, STEP_FIELDS),
    (StepInput, INPUT_FIELDS),
    (ToolCall, TOOL_CALL_FIELDS),
    (ToolResult, TOOL_RESULT_FIELDS),
    (UnguardedEffect, EFFECT_FIELDS),
    (Judgments, JUDGMENT_FIELDS),
):
    if set(_model.model_fields) != set(_fields):
        raise AssertionError(
            f"the bulk path checks {_fields}, but {_model.__name__} has "
            f"{tuple(_model.model_fields)}: update litmus/ingestion/bulk.py"
        )


# ----------------------------------------------------------------------------- structures
# What json_transform reads a line and a step into: every leaf a JSON text.

_JSON = "JSON"
_NESTED = {
    "config": CONFIG_FIELDS,
    "unguarded_effect": EFFECT_FIELDS,
    "judgments": JUDGMENT_FIELDS,
    "input": INPUT_FIELDS,
    "tool_call": TOOL_CALL_FIELDS,
    "tool_result": TOOL_RESULT_FIELDS,
}


def _structure(fields: Sequence[str]) -> dict[str, Any]:
    return {
        name: {inner: _JSON for inner in _NESTED[name]}
        if name in _NESTED
        else [_JSON]
        if name == "steps"
        else _JSON
        for name in fields
    }


def _literal(value: Any) -> str:
    """A SQL text literal of a fixed value of this module (never input)."""
    return "'" + str(value).replace("'", "''") + "'"


_RECORD_STRUCTURE = _literal(json.dumps(_structure(RECORD_FIELDS)))
_STEP_STRUCTURE = _literal(json.dumps(_structure(STEP_FIELDS)))
# arguments as the texts their patterns match (litmus.globmatch.match_text): a string as it
# is, anything else (here: a boolean or an integer, see _FLAT_ARGUMENTS) as its compact JSON
_ARGUMENTS_STRUCTURE = _literal(json.dumps("MAP(VARCHAR, VARCHAR)"))
# the objects whose keys are read, in this order (``k[1]`` … of a record, ``sk[1]`` … of a step)
_RECORD_OBJECTS = ("", "config", "unguarded_effect", "judgments")
_STEP_OBJECTS = ("", "input", "tool_call", "tool_result", "tool_call.arguments")


def _paths(objects: Sequence[str]) -> str:
    return "[" + ", ".join(_literal(f"$.{path}" if path else "$") for path in objects) + "]"


# ----------------------------------------------------------------------------- checks
# Each takes the SQL of one field's JSON text (NULL when null or absent).


def _string(text: str) -> str:
    return f"starts_with({text}, '\"')"


def _non_empty_string(text: str) -> str:
    return f"({_string(text)} AND {text} <> '\"\"')"


def _boolean(text: str) -> str:
    return f"{text} IN ('true', 'false')"


def _one_of(text: str, values: Sequence[object]) -> str:
    # a fixed value's JSON text is the one text DuckDB writes for any spelling of it
    return f"{text} IN ({', '.join(_literal(json.dumps(value)) for value in values)})"


def _unsigned_at_most(text: str, limit: int) -> str:
    # an integer whose canonical writing is the text (so no sign, point, exponent or space)
    return (
        f"coalesce(try_cast({text} AS BIGINT) BETWEEN 0 AND {limit} "
        f"AND try_cast({text} AS BIGINT)::VARCHAR = {text}, false)"
    )


def _optional(text: str, check: str) -> str:
    return f"({text} IS NULL OR {check})"


def _keys_within(keys: str, fields: Sequence[str]) -> str:
    """Each key one of ``fields``, none twice (an absent object has no key list)."""
    names = "[" + ", ".join(_literal(name) for name in fields) + "]"
    return f"coalesce(len(list_intersect({keys}, {names})) = len({keys}), true)"


def _has_key(keys: str, name: str) -> str:
    return f"coalesce(list_contains({keys}, {_literal(name)}), false)"


def _text(text: str) -> str:
    """The value of a JSON string's text (which has a backslash only if it holds escapes)."""
    return (
        f"CASE WHEN contains({text}, '\\') THEN json_extract_string({text}, '$') "
        f"ELSE ({text})[2:-2] END"
    )


def _all(checks: Sequence[str]) -> str:
    return "coalesce(" + " AND ".join(f"({check})" for check in checks) + ", false)"


def _field(document: str, path: str) -> str:
    """A field of ``document`` (a column json_transform wrote): a leaf's JSON text as text,
    an object's structure or the list of steps as they are."""
    value = document + "".join(f"[{_literal(name)}]" for name in path.split("."))
    return value if path in (*_NESTED, "steps") else f"({value})::VARCHAR"


def _record_value(path: str) -> str:
    return _field("rec", path)


def _step_value(path: str) -> str:
    return _field("s", path)


# The key lists (``k`` of a record, ``sk`` of a step) are the documents' *layouts*: which
# keys each object holds, in order. A batch has few of them (the sample: 3 record layouts
# and about 50 step layouts in 30,000 lines), so they are checked once per distinct layout
# and rows join their layout's verdict (exact: the join compares the whole lists).
_RECORD_LAYOUT_CHECKS = (
    _keys_within("k[1]", RECORD_FIELDS),
    _keys_within("k[2]", CONFIG_FIELDS),
    _keys_within("k[3]", EFFECT_FIELDS),
    _keys_within("k[4]", JUDGMENT_FIELDS),
)
_STEP_LAYOUT_CHECKS = (
    _keys_within("sk[1]", STEP_FIELDS),
    _keys_within("sk[2]", INPUT_FIELDS),
    _keys_within("sk[3]", TOOL_CALL_FIELDS),
    _keys_within("sk[4]", TOOL_RESULT_FIELDS),
    "coalesce(len(list_distinct(sk[5])) = len(sk[5]), true)",  # any names, each once
)


def _record_value_checks() -> tuple[str, ...]:
    field = _record_value
    scores = ("helpfulness", "tool_call_risk", "engagement")
    judgments = (
        "len(k[4]) > 0",  # an object (not {}: see the module's docstring)
        _optional(field("judgments.refusal"), _one_of(field("judgments.refusal"), JUDGE_REFUSALS)),
        _optional(field("judgments.task_completed"), _boolean(field("judgments.task_completed"))),
        *(
            _optional(field(f"judgments.{name}"), _one_of(field(f"judgments.{name}"), _SCORES))
            for name in scores
        ),
        _optional(field("judgments.judge"), _string(field("judgments.judge"))),
    )
    return (
        f"{field('schema_version')} = '1'",
        _non_empty_string(field("run_id")),
        *(_non_empty_string(field(f"config.{name}")) for name in CONFIG_FIELDS[:-1]),
        _optional(field("config.policy_version"), _string(field("config.policy_version"))),
        _non_empty_string(field("suite")),
        _non_empty_string(field("suite_version")),
        _non_empty_string(field("instance_id")),
        # absent, or an unsigned integer in range (null is not allowed)
        f"CASE WHEN {field('epoch')} IS NULL THEN NOT {_has_key('k[1]', 'epoch')} "
        f"ELSE {_unsigned_at_most(field('epoch'), MAX_EPOCH)} END",
        f"{field('steps')} IS NOT NULL",  # a list (anything else reads as NULL)
        _one_of(field("termination"), TERMINATIONS),
        _optional(field("final_response"), _string(field("final_response"))),
        _optional(
            field("unguarded_effect"),
            f"{_string(field('unguarded_effect.description'))} AND "
            f"{_boolean(field('unguarded_effect.prohibited'))}",
        ),
        _optional(field("harm_prevented_by"), _string(field("harm_prevented_by"))),
        _optional(field("judgments"), " AND ".join(judgments)),
    )


_SCORES = tuple(range(MAX_SCORE + 1))


_JSON_STRING = r'"(?:[^"\\]|\\.)*"'
_FLAT_VALUE = rf"(?:{_JSON_STRING}|true|false|-?[0-9]{{1,{INT64_DIGITS - 1}}})"
# Tool arguments (their compact JSON text, as DuckDB writes it) whose JSON DuckDB writes
# exactly as Python does: one object of strings, booleans and integers of at most 18 digits
# (so within 64 bits). A null, a float, a longer integer or a nested value falls back.
_FLAT_ARGUMENTS = rf"\{{(?:{_JSON_STRING}:{_FLAT_VALUE}(?:,{_JSON_STRING}:{_FLAT_VALUE})*)?\}}"


def _step_value_checks() -> tuple[str, ...]:
    field = _step_value
    arguments = field("tool_call.arguments")
    return (
        "starts_with(step, '{')",
        _optional(
            field("input"),
            f"{_one_of(field('input.role'), INPUT_ROLES)} AND {_string(field('input.content'))}",
        ),
        _optional(field("thought"), _string(field("thought"))),
        _optional(field("message"), _string(field("message"))),
        _optional(
            field("tool_call"),
            f"{_non_empty_string(field('tool_call.name'))} AND "
            # absent (not null), or one object of flat values
            f"CASE WHEN {arguments} IS NULL THEN NOT {_has_key('sk[3]', 'arguments')} "
            f"ELSE regexp_full_match({arguments}, {_literal(_FLAT_ARGUMENTS)}) "
            "AND arguments IS NOT NULL END",
        ),
        _optional(
            field("tool_result"),
            f"{_one_of(field('tool_result.status'), TOOL_STATUSES)} AND "
            f"{_optional(field('tool_result.output'), _string(field('tool_result.output')))} AND "
            f"{field('tool_call')} IS NOT NULL",
        ),
    )


# Lines this path leaves to the per-record validator whatever else they hold (see above).
_TRAILING_COMMA = r",\s*[\]}]"
_CONTROL_ESCAPE = r"\\u00[01]"


def _record_text(path: str) -> str:
    return _text(_record_value(path))


# The step's texts, read by json_extract_string in one parse of the step (cheaper than
# unescaping the JSON texts of the structure one by one).
_STEP_TEXTS = (
    "thought",
    "message",
    "tool_call.name",
    "tool_result.status",
    "tool_result.output",
    "input.role",
    "input.content",
)


def _step_text(path: str) -> str:
    return f"ss[{_STEP_TEXTS.index(path) + 1}]"


_TEXT_COLUMNS = {
    "run_id": "run_id",
    "suite": "suite",
    "suite_version": "suite_version",
    "instance_id": "instance_id",
    **{name: f"config.{name}" for name in CONFIG_FIELDS},
    "termination": "termination",
    "final_response": "final_response",
    "unguarded_effect_description": "unguarded_effect.description",
    "harm_prevented_by": "harm_prevented_by",
    "judge_refusal": "judgments.refusal",
    "judge_name": "judgments.judge",
}
_RECORDS_SQL = f"""
CREATE OR REPLACE TEMP TABLE bulk_records AS
WITH parsed AS MATERIALIZED (
    SELECT line_no, line_sha256, json_transform(line, {_RECORD_STRUCTURE}) AS rec,
           json_keys(line, {_paths(_RECORD_OBJECTS)}) AS k
    FROM incoming_lines
    WHERE starts_with(line, '{{') AND ends_with(line, '}}') AND json_valid(line)
      -- two expressions: RE2 runs each about six times faster than their alternation
      AND NOT regexp_matches(line, ?) AND NOT regexp_matches(line, ?)
), layouts AS (
    -- any_value: a filter on the grouping key itself would be pushed below the grouping
    SELECT k FROM (SELECT any_value(k) AS k FROM parsed GROUP BY k)
    WHERE {_all(_RECORD_LAYOUT_CHECKS)}
)
SELECT line_no AS source_line,
       -- keys.trajectory_id: the JSON of [run_id, instance_id, epoch], as Python writes it
       left(sha256('[' || {_record_value("run_id")} || ', ' || {_record_value("instance_id")}
                   || ', ' || coalesce({_record_value("epoch")}, '0') || ']'), 24) AS trajectory_id,
       {", ".join(f"{_record_text(path)} AS {column}" for column, path in _TEXT_COLUMNS.items())},
       coalesce(try_cast({_record_value("epoch")} AS INTEGER), 0) AS epoch,
       len({_record_value("steps")})::INTEGER AS n_steps,
       {_record_value("unguarded_effect")} IS NOT NULL AS has_unguarded_effect,
       {_record_value("unguarded_effect.prohibited")} = 'true' AS unguarded_effect_prohibited,
       {_record_value("judgments.task_completed")} = 'true' AS judge_task_completed,
       {_record_value("judgments.helpfulness")}::INTEGER AS judge_helpfulness,
       {_record_value("judgments.tool_call_risk")}::INTEGER AS judge_tool_call_risk,
       {_record_value("judgments.engagement")}::INTEGER AS judge_engagement,
       line_sha256 AS record_sha256,
       {_record_value("steps")} AS steps
FROM parsed SEMI JOIN layouts USING (k)
WHERE {_all(_record_value_checks())}
"""
_STEPS_SQL = f"""
CREATE OR REPLACE TEMP TABLE bulk_steps AS
WITH parsed AS MATERIALIZED (
    SELECT source_line, step_idx, step, s, sk,
           json_extract_string(step, {_paths(_STEP_TEXTS)}) AS ss,
           json_transform({_step_value("tool_call.arguments")}, {_ARGUMENTS_STRUCTURE})
               AS arguments
    FROM (
        SELECT source_line, step_idx, step, json_transform(step, {_STEP_STRUCTURE}) AS s,
               json_keys(step, {_paths(_STEP_OBJECTS)}) AS sk
        FROM (
            SELECT source_line, unnest(range(n_steps)) AS step_idx, unnest(steps) AS step
            FROM bulk_records
        )
    )
), layouts AS (
    SELECT sk FROM (SELECT any_value(sk) AS sk FROM parsed GROUP BY sk)
    WHERE {_all(_STEP_LAYOUT_CHECKS)}
)
SELECT source_line, step_idx,
       coalesce(sk IN (SELECT sk FROM layouts), false) AND {_all(_step_value_checks())}
           AS step_ok,
       {_step_text("thought")} AS thought,
       {_step_text("message")} AS message,
       {_step_text("tool_call.name")} AS tool_name,
       CASE WHEN s['tool_call'] IS NOT NULL
            THEN coalesce({_step_value("tool_call.arguments")}, '{{}}') END AS arguments_json,
       CASE WHEN s['tool_call'] IS NOT NULL
            THEN coalesce(arguments, MAP {{}}::MAP(VARCHAR, VARCHAR)) END AS match_args,
       {_step_text("tool_result.status")} AS status,
       {_step_text("tool_result.output")} AS output,
       {_step_text("input.role")} AS input_role,
       {_step_text("input.content")} AS input_content
FROM parsed
"""
_CONFIG_COLUMNS = ("model", "model_release", "harness", "harness_version", "plugin")
_TRAJECTORIES_SQL = f"""
CREATE OR REPLACE TEMP TABLE bulk_trajectories AS
SELECT r.trajectory_id, k.partition_key, k.config_key, k.lineage_key,
       r.* EXCLUDE (trajectory_id, steps), ?::VARCHAR AS source_file_hash
FROM bulk_records r
JOIN bulk_config_keys k USING ({", ".join(_CONFIG_COLUMNS)})
-- a semi join, not a correlated EXISTS: the stored instances are hashed once per batch
SEMI JOIN suite_instances i
    ON i.suite = r.suite AND i.suite_version = r.suite_version AND i.instance_id = r.instance_id
ANTI JOIN (SELECT source_line FROM bulk_steps WHERE NOT coalesce(step_ok, false)) f
    ON f.source_line = r.source_line
"""
_STEP_ROWS_SQL = """
SELECT s.* EXCLUDE (step_ok), t.trajectory_id
FROM bulk_steps s JOIN bulk_trajectories t USING (source_line)
"""


def _incoming_lines(lines: Sequence[tuple[int, bytes]]) -> pa.Table:
    """The batch as DuckDB reads it: number, text and SHA-256 (the digest the per-record path
    stores) of each line that is UTF-8; a line that is not is left to the per-record path,
    which says where it is not."""
    payloads = pa.array([payload for _, payload in lines], pa.binary())
    try:
        texts = payloads.cast(pa.string())  # one UTF-8 check of the whole batch
        numbers = [number for number, _ in lines]
        kept: Sequence[tuple[int, bytes]] = lines
    except pa.ArrowInvalid:  # some line is not UTF-8: keep the others
        kept = []
        for number, payload in lines:
            try:
                payload.decode("utf-8")
            except UnicodeDecodeError:
                continue
            kept.append((number, payload))
        numbers = [number for number, _ in kept]
        texts = pa.array([payload for _, payload in kept], pa.binary()).cast(pa.string())
    return pa.table(
        {
            "line_no": pa.array(numbers, pa.int64()),
            "line": texts,
            # hashlib is about 3x faster than DuckDB's sha256
            "line_sha256": pa.array(
                [hashlib.sha256(payload.rstrip(b"\r\n")).hexdigest() for _, payload in kept],
                pa.string(),
            ),
        }
    )


def stage_provable_lines(
    con: duckdb.DuckDBPyConnection,
    worker: duckdb.DuckDBPyConnection,
    lines: Sequence[tuple[int, bytes]],
    file_hash: str,
) -> set[int]:
    """Stage (into ``con``'s staged_trajectories and staged_steps) every line of ``lines``
    this path proves valid, with the values the per-record path would stage; their numbers.

    ``worker`` is a scratch database of :func:`open_worker`: the batch's intermediate tables
    live and die there, so the ingestion's transaction holds only the staged rows.
    """
    incoming = _incoming_lines(lines)
    if incoming.num_rows == 0:
        return set()
    worker.register("incoming_lines", incoming)
    try:
        worker.execute(_RECORDS_SQL, [_TRAILING_COMMA, _CONTROL_ESCAPE])
    finally:
        worker.unregister("incoming_lines")
    worker.execute(_STEPS_SQL)
    configs = worker.execute(
        f"SELECT DISTINCT {', '.join(_CONFIG_COLUMNS)} FROM bulk_records"
    ).fetchall()
    keys: dict[str, list[str]] = {
        name: [] for name in (*_CONFIG_COLUMNS, "partition_key", "config_key", "lineage_key")
    }
    for values in configs:
        config = RunConfig.model_construct(**dict(zip(_CONFIG_COLUMNS, values, strict=True)))
        for name, value in zip(_CONFIG_COLUMNS, values, strict=True):
            keys[name].append(value)
        keys["partition_key"].append(partition_key_for(config))
        keys["config_key"].append(config_key(config))
        keys["lineage_key"].append(lineage_key(config))
    worker.register("bulk_config_keys", pa.table(keys, schema=_KEYS_SCHEMA))
    try:
        worker.execute(_TRAJECTORIES_SQL, [file_hash])
    finally:
        worker.unregister("bulk_config_keys")
    trajectories = worker.sql("SELECT * FROM bulk_trajectories").to_arrow_table()
    steps = worker.sql(_STEP_ROWS_SQL).to_arrow_table()
    for table, rows in (("staged_trajectories", trajectories), ("staged_steps", steps)):
        if rows.num_rows:
            insert_arrow(con, table, rows)
    return set(trajectories.column("source_line").to_pylist())


def insert_arrow(
    con: duckdb.DuckDBPyConnection, table: str, frame: pa.Table, names: str | None = None
) -> None:
    """Append an Arrow table's rows (by column name) to ``table``.

    The frame is read through DuckDB's replacement scan of this function's local ``frame``,
    never registered as a view: a view dropped inside the open ingestion transaction stays in
    the catalog until the commit, and with it every batch's Arrow table (the file's size in
    memory once more, issue 14).
    """
    if names is None:
        con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM frame")
    else:
        con.execute(f"INSERT INTO {table} ({names}) SELECT {names} FROM frame")


WORKER_MEMORY_LIMIT = "192MB"


def open_worker(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A private in-memory database for the bulk path, holding the stored suite instances.

    Not a cursor of ``con``: a table replaced in a database whose ingestion transaction is
    open is kept until that transaction ends, so a file's batches would pile up in memory.
    """
    worker = duckdb.connect(":memory:")
    worker.execute(f"SET memory_limit = '{WORKER_MEMORY_LIMIT}'")
    # A batch is one morsel (fewer rows than a row group), so DuckDB runs each statement on
    # one thread anyway; a second one only adds its coordination (about a fifth of the time).
    worker.execute("SET threads = 1")
    instances = con.sql(
        "SELECT DISTINCT suite, suite_version, instance_id FROM suite_instances"
    ).to_arrow_table()
    worker.register("stored_instances", instances)
    worker.execute("CREATE TABLE suite_instances AS SELECT * FROM stored_instances")
    worker.unregister("stored_instances")
    return worker


_KEYS_SCHEMA = pa.schema(
    [
        (name, pa.string())
        for name in (*_CONFIG_COLUMNS, "partition_key", "config_key", "lineage_key")
    ]
)
