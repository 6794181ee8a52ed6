"""The vectorized accepted path of ingestion (issue 16): DuckDB proves records valid in bulk.

A batch of lines goes to DuckDB as one Arrow column. One SQL pass accepts every line whose
every field it can *prove* is exactly what the strict validator (``formats.RunRecord``, behind
``ingest._parse_line`` and ``ingest._validate``) accepts, and computes the same stored values
the per-record path computes. A line it cannot prove is handed back untouched, and the
per-record path decides it: so a quarantined record's reason never depends on this module.

What "prove" means here is deliberately narrower than what the validator accepts; anything
outside it falls back:

- the line is exactly one JSON object (``{`` … ``}``, nothing around it) that DuckDB's parser
  reads, with no ``,]`` / ``,}`` anywhere (DuckDB allows trailing commas, Python does not)
  and no ``\\u00XX`` control-character escape (DuckDB writes those with upper-case hex,
  Python with lower-case, and ``\\u0000`` is best left to the reference);
- every object holds only the model's field names, each once (DuckDB keeps duplicate keys;
  ``json_keys`` lists them), and every field has exactly the JSON type the strict model wants:
  integers only as unsigned JSON integers in range, never a DOUBLE (which also catches
  ``NaN``, ``Infinity`` and ``1e400``, all of which DuckDB reads);
- a tool call's arguments are one flat object of strings, booleans, nulls and 64-bit integers
  (a nested value, a float or a bigger integer falls back), so the compact JSON DuckDB writes
  for them is the text Python's ``json.dumps`` writes;
- the record's suite, version and instance are stored.

Lone surrogates, invalid UTF-8 (decoded in Python first), raw control characters and
malformed JSON make DuckDB's parser say "not valid", so they fall back too. Duplicates across
lines and files are not decided here: both paths stage rows and ``ingest`` quarantines
duplicates afterwards, the same way for both.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

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

INT64_MAX = 2**63 - 1
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
JUDGMENT_FIELDS = ("refusal", "task_completed", "helpfulness", "tool_call_risk", "engagement", "judge")

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
        raise AssertionError(f"ingest_bulk checks {_fields}, but {_model.__name__} has "
                             f"{tuple(_model.model_fields)}: update the bulk path")


def _sql_list(values: Sequence[str]) -> str:
    """A SQL list literal of fixed identifiers (constants of this module, never input)."""
    return "[" + ", ".join(f"'{value}'" for value in values) + "]"


def _is(json: str, kind: str) -> str:
    return f"coalesce(json_type({json}) = '{kind}', false)"


def _absent_or_null(json: str) -> str:
    return f"({json} IS NULL OR json_type({json}) = 'NULL')"


def _text(json: str) -> str:
    return _is(json, "VARCHAR")


def _non_empty_text(json: str) -> str:
    return f"({_text(json)} AND {json}::VARCHAR <> '\"\"')"


def _optional(check: Callable[[str], str]) -> Callable[[str], str]:
    return lambda json: f"({_absent_or_null(json)} OR {check(json)})"


def _one_of(values: Sequence[str]) -> Callable[[str], str]:
    return lambda json: f"({_text(json)} AND ({json} ->> '$') IN ({', '.join(map(repr, values))}))"


def _unsigned_at_most(limit: int) -> Callable[[str], str]:
    return lambda json: (
        f"({_is(json, 'UBIGINT')} AND "
        f"coalesce(try_cast({json}::VARCHAR AS UBIGINT) <= {limit}, false))"
    )


def _object(fields: Sequence[str]) -> Callable[[str], str]:
    """An object of only these keys, each at most once."""
    return lambda json: (
        f"({_is(json, 'OBJECT')} AND list_has_all({_sql_list(fields)}, json_keys({json})) "
        f"AND len(json_keys({json})) = len(list_distinct(json_keys({json}))))"
    )


# Paths read from each line in one parse; v[i] below is the i-th (1-based) of these.
_RECORD_PATHS = (
    *RECORD_FIELDS,
    *(f"config.{name}" for name in CONFIG_FIELDS),
    *(f"unguarded_effect.{name}" for name in EFFECT_FIELDS),
    *(f"judgments.{name}" for name in JUDGMENT_FIELDS),
)
_STEP_PATHS = (
    *STEP_FIELDS,
    *(f"input.{name}" for name in INPUT_FIELDS),
    *(f"tool_call.{name}" for name in TOOL_CALL_FIELDS),
    *(f"tool_result.{name}" for name in TOOL_RESULT_FIELDS),
)


def _at(path: str, paths: Sequence[str] = _RECORD_PATHS, column: str = "v") -> str:
    return f"{column}[{paths.index(path) + 1}]"


def _step(path: str) -> str:
    return _at(path, _STEP_PATHS, "s")


def _paths_literal(paths: Sequence[str]) -> str:
    return _sql_list([f"$.{path}" for path in paths])


_optional_text = _optional(_text)
_optional_bool = _optional(lambda json: _is(json, "BOOLEAN"))
_optional_score = _optional(_unsigned_at_most(MAX_SCORE))

_RECORD_OK = " AND ".join(
    (
        f"list_has_all({_sql_list(RECORD_FIELDS)}, keys)",
        "len(keys) = len(list_distinct(keys))",
        f"({_is(_at('schema_version'), 'UBIGINT')} AND {_at('schema_version')}::VARCHAR = '1')",
        _non_empty_text(_at("run_id")),
        _object(CONFIG_FIELDS)(_at("config")),
        *(
            _non_empty_text(_at(f"config.{name}"))
            for name in CONFIG_FIELDS
            if name != "policy_version"
        ),
        _optional_text(_at("config.policy_version")),
        _non_empty_text(_at("suite")),
        _non_empty_text(_at("suite_version")),
        _non_empty_text(_at("instance_id")),
        f"({_at('epoch')} IS NULL OR {_unsigned_at_most(MAX_EPOCH)(_at('epoch'))})",
        _is(_at("steps"), "ARRAY"),
        _one_of(TERMINATIONS)(_at("termination")),
        _optional_text(_at("final_response")),
        _optional(_object(EFFECT_FIELDS))(_at("unguarded_effect")),
        (
            f"({_absent_or_null(_at('unguarded_effect'))} OR "
            f"({_text(_at('unguarded_effect.description'))} AND "
            f"{_is(_at('unguarded_effect.prohibited'), 'BOOLEAN')}))"
        ),
        _optional_text(_at("harm_prevented_by")),
        _optional(_object(JUDGMENT_FIELDS))(_at("judgments")),
        _optional(_one_of(JUDGE_REFUSALS))(_at("judgments.refusal")),
        _optional_bool(_at("judgments.task_completed")),
        _optional_score(_at("judgments.helpfulness")),
        _optional_score(_at("judgments.tool_call_risk")),
        _optional_score(_at("judgments.engagement")),
        _optional_text(_at("judgments.judge")),
    )
)

_FLAT_ARGUMENT = (
    "json_type(x) IN ('VARCHAR', 'BOOLEAN', 'NULL', 'BIGINT') OR "
    f"(json_type(x) = 'UBIGINT' AND coalesce(try_cast(x::VARCHAR AS UBIGINT) <= {INT64_MAX}, "
    "false))"
)
_ARGUMENTS = _step("tool_call.arguments")
_STEP_OK = " AND ".join(
    (
        f"{_object(STEP_FIELDS)('step')}",
        _optional(_object(INPUT_FIELDS))(_step("input")),
        (
            f"({_absent_or_null(_step('input'))} OR "
            f"({_one_of(INPUT_ROLES)(_step('input.role'))} AND {_text(_step('input.content'))}))"
        ),
        _optional_text(_step("thought")),
        _optional_text(_step("message")),
        _optional(_object(TOOL_CALL_FIELDS))(_step("tool_call")),
        (
            f"({_absent_or_null(_step('tool_call'))} OR "
            f"({_non_empty_text(_step('tool_call.name'))} AND ({_ARGUMENTS} IS NULL OR "
            f"({_is(_ARGUMENTS, 'OBJECT')} AND "
            f"len(json_keys({_ARGUMENTS})) = len(list_distinct(json_keys({_ARGUMENTS}))) AND "
            f"coalesce(list_bool_and(list_transform(json_extract({_ARGUMENTS}, '$.*'), "
            f"lambda x: {_FLAT_ARGUMENT})), true)))))"
        ),
        _optional(_object(TOOL_RESULT_FIELDS))(_step("tool_result")),
        (
            f"({_absent_or_null(_step('tool_result'))} OR "
            f"({_one_of(TOOL_STATUSES)(_step('tool_result.status'))} AND "
            f"{_optional_text(_step('tool_result.output'))} AND "
            f"NOT {_absent_or_null(_step('tool_call'))}))"
        ),
    )
)

# Lines this path leaves to the per-record validator whatever else they hold (see above).
_SCREEN = r",\s*[\]}]|\\u00[01]"

_RECORDS_SQL = f"""
CREATE OR REPLACE TEMP TABLE bulk_records AS
SELECT line_no, line, json_keys(line) AS keys, json_extract(line, {_paths_literal(_RECORD_PATHS)}) AS v
FROM incoming_lines
WHERE starts_with(line, '{{') AND ends_with(line, '}}') AND NOT regexp_matches(line, ?)
  AND json_valid(line)
"""
_STEPS_SQL = f"""
CREATE OR REPLACE TEMP TABLE bulk_steps AS
WITH exploded AS (
    SELECT line_no, unnest(range(len(steps))) AS step_idx, unnest(steps) AS step
    FROM (
        SELECT line_no, json_extract({_at('steps')}, '$[*]') AS steps FROM bulk_records
        WHERE json_type({_at('steps')}) = 'ARRAY'
    )
)
SELECT line_no, step_idx, step, json_extract(step, {_paths_literal(_STEP_PATHS)}) AS s
FROM exploded
"""
_ACCEPTED_SQL = f"""
CREATE OR REPLACE TEMP TABLE bulk_accepted AS
SELECT line_no, line, v,
       {_at('run_id')} ->> '$' AS run_id,
       {_at('suite')} ->> '$' AS suite,
       {_at('suite_version')} ->> '$' AS suite_version,
       {_at('instance_id')} ->> '$' AS instance_id,
       coalesce(try_cast({_at('epoch')}::VARCHAR AS INTEGER), 0) AS epoch,
       {_at('config.model')} ->> '$' AS model,
       {_at('config.model_release')} ->> '$' AS model_release,
       {_at('config.harness')} ->> '$' AS harness,
       {_at('config.harness_version')} ->> '$' AS harness_version,
       {_at('config.plugin')} ->> '$' AS plugin
FROM bulk_records r
WHERE coalesce({_RECORD_OK}, false)
  AND NOT EXISTS (
      SELECT 1 FROM bulk_steps WHERE bulk_steps.line_no = r.line_no
      AND NOT coalesce({_STEP_OK}, false)
  )
  AND EXISTS (
      SELECT 1 FROM suite_instances i
      WHERE i.suite = {_at('suite')} ->> '$' AND i.suite_version = {_at('suite_version')} ->> '$'
        AND i.instance_id = {_at('instance_id')} ->> '$'
  )
"""
_CONFIG_COLUMNS = ("model", "model_release", "harness", "harness_version", "plugin")
_TRAJECTORIES_SQL = f"""
CREATE OR REPLACE TEMP TABLE bulk_trajectories AS
SELECT left(sha256('[' || to_json(a.run_id)::VARCHAR || ', ' || to_json(a.instance_id)::VARCHAR
                   || ', ' || a.epoch::VARCHAR || ']'), 24) AS trajectory_id,
       k.partition_key, k.config_key, k.lineage_key,
       a.model, a.model_release, a.harness, a.harness_version, a.plugin,
       {_at('config.policy_version')} ->> '$' AS policy_version,
       a.run_id, a.suite, a.suite_version, a.instance_id, a.epoch,
       {_at('termination')} ->> '$' AS termination,
       {_at('final_response')} ->> '$' AS final_response,
       json_array_length({_at('steps')})::INTEGER AS n_steps,
       NOT {_absent_or_null(_at('unguarded_effect'))} AS has_unguarded_effect,
       try_cast({_at('unguarded_effect.prohibited')}::VARCHAR AS BOOLEAN)
           AS unguarded_effect_prohibited,
       {_at('unguarded_effect.description')} ->> '$' AS unguarded_effect_description,
       {_at('harm_prevented_by')} ->> '$' AS harm_prevented_by,
       {_at('judgments.refusal')} ->> '$' AS judge_refusal,
       try_cast({_at('judgments.task_completed')}::VARCHAR AS BOOLEAN) AS judge_task_completed,
       try_cast({_at('judgments.helpfulness')}::VARCHAR AS INTEGER) AS judge_helpfulness,
       try_cast({_at('judgments.tool_call_risk')}::VARCHAR AS INTEGER) AS judge_tool_call_risk,
       try_cast({_at('judgments.engagement')}::VARCHAR AS INTEGER) AS judge_engagement,
       {_at('judgments.judge')} ->> '$' AS judge_name,
       ?::VARCHAR AS source_file_hash,
       a.line_no AS source_line,
       sha256(a.line) AS record_sha256
FROM bulk_accepted a JOIN bulk_config_keys k USING ({', '.join(_CONFIG_COLUMNS)})
"""
_HAS_CALL = f"NOT {_absent_or_null(_step('tool_call'))}"
_STEP_ROWS_SQL = f"""
SELECT st.line_no AS source_line, t.trajectory_id, st.step_idx::INTEGER AS step_idx,
       {_step('thought')} ->> '$' AS thought,
       {_step('message')} ->> '$' AS message,
       {_step('tool_call.name')} ->> '$' AS tool_name,
       CASE WHEN {_HAS_CALL} THEN coalesce({_ARGUMENTS}::VARCHAR, '{{}}') END AS arguments_json,
       CASE WHEN {_HAS_CALL} THEN map(
           coalesce(json_keys({_ARGUMENTS}), []::VARCHAR[]),
           coalesce(list_transform(json_extract({_ARGUMENTS}, '$.*'),
               lambda x: CASE WHEN json_type(x) = 'VARCHAR' THEN x ->> '$' ELSE x::VARCHAR END),
               []::VARCHAR[])
       ) END AS match_args,
       {_step('tool_result.status')} ->> '$' AS status,
       {_step('tool_result.output')} ->> '$' AS output,
       {_step('input.role')} ->> '$' AS input_role,
       {_step('input.content')} ->> '$' AS input_content
FROM bulk_steps st JOIN bulk_trajectories t ON t.source_line = st.line_no
"""


def stage_provable_lines(
    con: duckdb.DuckDBPyConnection,
    worker: duckdb.DuckDBPyConnection,
    lines: Sequence[tuple[int, str]],
    file_hash: str,
) -> set[int]:
    """Stage (into ``con``'s staged_trajectories and staged_steps) every line of ``lines``
    this path proves valid, with the values the per-record path would stage; their numbers.

    ``worker`` is a cursor of the same database outside ``con``'s transaction: the batch's
    intermediate tables live and die there, so the ingestion's transaction holds only the
    staged rows (memory stays flat however many batches a file has).
    """
    if not lines:
        return set()
    worker.register(
        "incoming_lines",
        pa.table(
            {
                "line_no": pa.array([number for number, _ in lines], pa.int64()),
                "line": pa.array([text for _, text in lines], pa.string()),
            }
        ),
    )
    try:
        worker.execute(_RECORDS_SQL, [_SCREEN])
        worker.execute(_STEPS_SQL)
        worker.execute(_ACCEPTED_SQL)
        configs = worker.execute(
            f"SELECT DISTINCT {', '.join(_CONFIG_COLUMNS)} FROM bulk_accepted"
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
        worker.execute(_TRAJECTORIES_SQL, [file_hash])
        trajectories = worker.sql("SELECT * FROM bulk_trajectories").to_arrow_table()
        steps = worker.sql(_STEP_ROWS_SQL).to_arrow_table()
    finally:
        worker.unregister("incoming_lines")
    for table, rows in (("staged_trajectories", trajectories), ("staged_steps", steps)):
        if rows.num_rows:
            con.register("bulk_rows", rows)
            con.execute(f"INSERT INTO {table} BY NAME SELECT * FROM bulk_rows")
            con.unregister("bulk_rows")
    return set(trajectories.column("source_line").to_pylist())


_KEYS_SCHEMA = pa.schema(
    [(name, pa.string()) for name in (*_CONFIG_COLUMNS, "partition_key", "config_key", "lineage_key")]
)
