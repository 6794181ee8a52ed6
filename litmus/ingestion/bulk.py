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
  ``json_keys`` lists them, so an object is right when it holds exactly as many keys as it
  has of the model's fields), and every field has exactly the JSON type the strict model wants:
  integers only as unsigned JSON integers in range, never a DOUBLE (which also catches
  ``NaN``, ``Infinity`` and ``1e400``, all of which DuckDB reads);
- a tool call's arguments are one flat object of strings, booleans, nulls and 64-bit integers
  (a nested value, a float or a bigger integer falls back), so the compact JSON DuckDB writes
  for them is the text Python's ``json.dumps`` writes;
- the record's suite, version and instance are stored;
- the record has no ``post_state`` (absent or null): one that has is the validator's to
  measure against its size limit and to store as the compact JSON Python writes.

How: each check is split in two (``_Check``). Its *types* part reads only a document's
shape — its own JSON type, the type of every path and the number of keys of every object —
and is evaluated once per distinct shape of a batch (a typical file has a handful: the
sample has 7 record shapes and 8 step shapes in 100,000 lines); its *values* part (non-empty
texts, value sets, integer ranges, flat arguments) is evaluated per row. The shape is one
injective text (``_Fields.shape``), so one verdict is exact for every row that has it.

Lone surrogates, invalid UTF-8 (decoded in Python first), raw control characters and
malformed JSON make DuckDB's parser say "not valid", so they fall back too. Duplicates across
lines and files are not decided here: both paths stage rows and ``ingest`` quarantines
duplicates afterwards, the same way for both.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import duckdb
import numpy as np
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
from litmus.warehouse import execute_many

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
    "post_state",
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
            f"ingest_bulk checks {_fields}, but {_model.__name__} has "
            f"{tuple(_model.model_fields)}: update the bulk path"
        )


def _sql_list(values: Sequence[str]) -> str:
    """A SQL list literal of fixed names (constants of this module, never input)."""
    return "[" + ", ".join(f"'{value}'" for value in values) + "]"


class _Check(NamedTuple):
    """One condition in two parts whose AND it is: ``types`` reads only JSON types and object
    keys, the same for every document of one shape, so it is evaluated once per distinct
    shape in a batch (typical files have a handful); ``values`` reads the rest, per row."""

    types: str
    values: str = "true"


def _all(checks: Iterable[_Check]) -> _Check:
    checks = tuple(checks)
    values = [c.values for c in checks if c.values != "true"]
    return _Check(
        "(" + " AND ".join(c.types for c in checks) + ")",
        "(" + " AND ".join(values) + ")" if values else "true",
    )


class _Fields:
    """SQL checks over one JSON document's fields, read in one parse each: ``types`` (the
    ``json_type`` list), ``texts`` (the ``json_extract_string`` list) and ``keys`` (the
    ``json_keys`` list of its objects), all 1-based SQL lists in the order of the paths;
    ``document_type`` is the column holding the document's own ``json_type``."""

    def __init__(
        self,
        document_type: str,
        paths: Sequence[str],
        objects: Sequence[str],
        names: tuple[str, str, str],
    ) -> None:
        self.document_type, self.paths, self.objects = document_type, tuple(paths), tuple(objects)
        self.types, self.texts, self.keys = names

    def shape(self) -> str:
        """A document's shape as one text, which is all ``_Check.types`` reads: its own type,
        every path's type and how many keys each of its objects holds. The text is
        injective (type names hold no brackets, and ``to_json`` tells an absent path's NULL
        from the type name ``'NULL'``), so one verdict is exact for every row of a shape."""
        return (
            f"coalesce({self.document_type}, '-') || to_json({self.types}) || "
            f"to_json(list_transform({self.keys}, lambda names: len(names)))"
        )

    def type(self, path: str) -> str:
        if path == "":
            return self.document_type
        return f"{self.types}[{self.paths.index(path) + 1}]"

    @property
    def scalar_paths(self) -> tuple[str, ...]:
        """The paths whose text is read: not an object's or array's (their text is long)."""
        return tuple(
            path for path in self.paths if path not in (*self.objects, "steps", "post_state")
        )

    def text(self, path: str) -> str:
        return f"{self.texts}[{self.scalar_paths.index(path) + 1}]"

    def is_(self, path: str, kind: str) -> _Check:
        return _Check(f"coalesce({self.type(path)} = '{kind}', false)")

    def absent_or_null(self, path: str) -> str:
        return f"({self.type(path)} IS NULL OR {self.type(path)} = 'NULL')"

    def optional(self, path: str, check: _Check) -> _Check:
        """Absent, null, or ``check``: absent-or-null OR (types AND values), distributed."""
        absent = self.absent_or_null(path)
        if check.values == "true":
            return _Check(f"({absent} OR {check.types})")
        # a scalar's text is NULL exactly when it is absent or null, without reading its type
        absent_value = f"{self.text(path)} IS NULL" if path in self.scalar_paths else absent
        return _Check(f"({absent} OR {check.types})", f"({absent_value} OR {check.values})")

    def non_empty_text(self, path: str) -> _Check:
        return _Check(self.is_(path, "VARCHAR").types, f"{self.text(path)} <> ''")

    def one_of(self, path: str, values: Sequence[str]) -> _Check:
        return _Check(
            self.is_(path, "VARCHAR").types, f"{self.text(path)} IN ({_sql_values(values)})"
        )

    def unsigned_at_most(self, path: str, limit: int) -> _Check:
        return _Check(
            self.is_(path, "UBIGINT").types,
            f"coalesce(try_cast({self.text(path)} AS UBIGINT) <= {limit}, false)",
        )

    def object_of(self, path: str, fields: Sequence[str]) -> _Check:
        """An object holding only these keys, each at most once: it holds exactly as many
        keys (``json_keys`` lists every duplicate and unknown one) as it has of these."""
        keys = f"{self.keys}[{self.objects.index(path) + 1}]"
        present = " + ".join(
            f"({self.type(f'{path}.{name}' if path else name)} IS NOT NULL)::INTEGER"
            for name in fields
        )
        return _Check(f"({self.is_(path, 'OBJECT').types} AND len({keys}) = {present})")

    def paths_literal(self) -> str:
        return _sql_list([f"$.{path}" for path in self.paths])

    def scalar_paths_literal(self) -> str:
        return _sql_list([f"$.{path}" for path in self.scalar_paths])

    def objects_literal(self) -> str:
        return _sql_list(["$" if path == "" else f"$.{path}" for path in self.objects])


def _sql_values(values: Sequence[str]) -> str:
    return ", ".join(f"'{value}'" for value in values)


_RECORD = _Fields(
    "root_type",
    (
        *RECORD_FIELDS,
        *(f"config.{name}" for name in CONFIG_FIELDS),
        *(f"unguarded_effect.{name}" for name in EFFECT_FIELDS),
        *(f"judgments.{name}" for name in JUDGMENT_FIELDS),
    ),
    ("", "config", "unguarded_effect", "judgments"),
    ("t", "s", "k"),
)
_STEP = _Fields(
    "step_type",
    (
        *STEP_FIELDS,
        *(f"input.{name}" for name in INPUT_FIELDS),
        *(f"tool_call.{name}" for name in TOOL_CALL_FIELDS),
        *(f"tool_result.{name}" for name in TOOL_RESULT_FIELDS),
    ),
    ("", "input", "tool_call", "tool_result", "tool_call.arguments"),
    ("st", "ss", "sk"),
)


def _record_ok(r: _Fields) -> _Check:
    score_fields = ("helpfulness", "tool_call_risk", "engagement")
    epoch_type = r.type("epoch")
    return _all(
        (
            r.object_of("", RECORD_FIELDS),
            _Check(r.is_("schema_version", "UBIGINT").types, f"{r.text('schema_version')} = '1'"),
            r.non_empty_text("run_id"),
            r.object_of("config", CONFIG_FIELDS),
            *(r.non_empty_text(f"config.{name}") for name in CONFIG_FIELDS[:-1]),
            r.optional("config.policy_version", r.is_("config.policy_version", "VARCHAR")),
            r.non_empty_text("suite"),
            r.non_empty_text("suite_version"),
            r.non_empty_text("instance_id"),
            # absent, or an unsigned integer in range (null is not allowed)
            _Check(
                f"({epoch_type} IS NULL OR {epoch_type} = 'UBIGINT')",
                f"({r.text('epoch')} IS NULL OR {r.unsigned_at_most('epoch', MAX_EPOCH).values})",
            ),
            r.is_("steps", "ARRAY"),
            r.one_of("termination", TERMINATIONS),
            r.optional("final_response", r.is_("final_response", "VARCHAR")),
            r.optional(
                "unguarded_effect",
                _all(
                    (
                        r.object_of("unguarded_effect", EFFECT_FIELDS),
                        r.is_("unguarded_effect.description", "VARCHAR"),
                        r.is_("unguarded_effect.prohibited", "BOOLEAN"),
                    )
                ),
            ),
            r.optional("harm_prevented_by", r.is_("harm_prevented_by", "VARCHAR")),
            r.optional("judgments", r.object_of("judgments", JUDGMENT_FIELDS)),
            r.optional("judgments.refusal", r.one_of("judgments.refusal", JUDGE_REFUSALS)),
            r.optional("judgments.task_completed", r.is_("judgments.task_completed", "BOOLEAN")),
            *(
                r.optional(f"judgments.{name}", r.unsigned_at_most(f"judgments.{name}", MAX_SCORE))
                for name in score_fields
            ),
            r.optional("judgments.judge", r.is_("judgments.judge", "VARCHAR")),
            # a post-state is left to the per-record validator (its size is measured on the
            # compact JSON Python writes, and it is stored as that text): only a record
            # without one is proven here, and its stored post_state is NULL
            _Check(r.absent_or_null("post_state")),
        )
    )


# A tool argument's value the compact JSON of which DuckDB writes exactly as Python does.
_FLAT_ARGUMENT = (
    "json_type(x) IN ('VARCHAR', 'BOOLEAN', 'NULL', 'BIGINT') OR "
    f"(json_type(x) = 'UBIGINT' AND coalesce(try_cast(x::VARCHAR AS UBIGINT) <= {INT64_MAX}, "
    "false))"
)


def _step_ok(s: _Fields) -> _Check:
    arguments_keys = f"{s.keys}[{s.objects.index('tool_call.arguments') + 1}]"
    return _all(
        (
            s.object_of("", STEP_FIELDS),
            s.optional(
                "input",
                _all(
                    (
                        s.object_of("input", INPUT_FIELDS),
                        s.one_of("input.role", INPUT_ROLES),
                        s.is_("input.content", "VARCHAR"),
                    )
                ),
            ),
            s.optional("thought", s.is_("thought", "VARCHAR")),
            s.optional("message", s.is_("message", "VARCHAR")),
            s.optional(
                "tool_call",
                _all(
                    (
                        s.object_of("tool_call", TOOL_CALL_FIELDS),
                        s.non_empty_text("tool_call.name"),
                        # absent, or one object (its keys once each) of flat values: the
                        # values' types differ per row (arguments differ), so they are values
                        _Check(
                            f"({s.type('tool_call.arguments')} IS NULL OR "
                            f"{s.is_('tool_call.arguments', 'OBJECT').types})",
                            f"coalesce(len({arguments_keys}) = len(list_distinct({arguments_keys}))"
                            ", true) AND coalesce(list_bool_and(list_transform(argument_values, "
                            f"lambda x: {_FLAT_ARGUMENT})), true)",
                        ),
                    )
                ),
            ),
            s.optional(
                "tool_result",
                _all(
                    (
                        s.object_of("tool_result", TOOL_RESULT_FIELDS),
                        s.one_of("tool_result.status", TOOL_STATUSES),
                        s.optional("tool_result.output", s.is_("tool_result.output", "VARCHAR")),
                        _Check(f"NOT {s.absent_or_null('tool_call')}"),
                    )
                ),
            ),
        )
    )


# Lines this path leaves to the per-record validator whatever else they hold (see above).
_TRAILING_COMMA = r",\s*[\]}]"
_CONTROL_ESCAPE = r"\\u00[01]"


_RECORDS_SQL = f"""
CREATE OR REPLACE TEMP TABLE bulk_records AS
WITH fields AS (
-- one valid JSON document that starts with a brace is an object: no parse needed to say so
SELECT line_no, line_sha256, 'OBJECT' AS root_type,
       json_type(line, {_RECORD.paths_literal()}) AS t,
       json_extract_string(line, {_RECORD.scalar_paths_literal()}) AS s,
       json_keys(line, {_RECORD.objects_literal()}) AS k,
       json_extract(line, '$.steps[*]') AS steps
FROM incoming_lines
WHERE starts_with(line, '{{') AND ends_with(line, '}}') AND json_valid(line)
  -- two expressions: RE2 runs each about six times faster than their alternation
  AND NOT regexp_matches(line, ?) AND NOT regexp_matches(line, ?)
)
SELECT *, {_RECORD.shape()} AS shape FROM fields
"""
_STEPS_SQL = f"""
CREATE OR REPLACE TEMP TABLE bulk_steps AS
WITH exploded AS (
    SELECT line_no, unnest(range(len(steps))) AS step_idx, unnest(steps) AS step
    FROM bulk_records WHERE t[{_RECORD.paths.index("steps") + 1}] = 'ARRAY'
), fields AS (
SELECT line_no, step_idx, json_type(step) AS step_type,
       json_type(step, {_STEP.paths_literal()}) AS st,
       json_extract_string(step, {_STEP.scalar_paths_literal()}) AS ss,
       json_keys(step, {_STEP.objects_literal()}) AS sk,
       json_extract(step, '$.tool_call.arguments') AS arguments,
       json_extract(step, '$.tool_call.arguments.*') AS argument_values
FROM exploded
)
SELECT *, {_STEP.shape()} AS shape FROM fields
"""


def _shapes_sql(documents: str, fields: _Fields, check: _Check) -> str:
    """``documents``_shapes: the verdict of the types part of ``check`` on each distinct
    shape of ``documents``, evaluated once for all of them: on any one row's columns, which
    are the same in every row of the shape as far as the types part reads them."""
    picked = ", ".join(
        f"any_value({column}) AS {column}"
        for column in (fields.document_type, fields.types, fields.keys)
    )
    return (
        f"CREATE OR REPLACE TEMP TABLE {documents}_shapes AS "
        f"SELECT shape, coalesce({check.types}, false) AS shape_ok "
        f"FROM (SELECT shape, {picked} FROM {documents} GROUP BY shape)"
    )


_RECORD_CHECK = _record_ok(_RECORD)
_STEP_CHECK = _step_ok(_STEP)
_RECORD_SHAPES_SQL = _shapes_sql("bulk_records", _RECORD, _RECORD_CHECK)
_STEP_SHAPES_SQL = _shapes_sql("bulk_steps", _STEP, _STEP_CHECK)
# The lines of which a step fails (its shape or its values).
_FAILED_STEPS_SQL = f"""
CREATE OR REPLACE TEMP TABLE bulk_failed_lines AS
SELECT DISTINCT b.line_no FROM bulk_steps b
LEFT JOIN bulk_steps_shapes h USING (shape)
WHERE NOT coalesce(h.shape_ok AND ({_STEP_CHECK.values}), false)
"""
_ACCEPTED_SQL = f"""
CREATE OR REPLACE TEMP TABLE bulk_accepted AS
SELECT line_no AS source_line,
       {_RECORD.text("run_id")} AS run_id,
       {_RECORD.text("suite")} AS suite,
       {_RECORD.text("suite_version")} AS suite_version,
       {_RECORD.text("instance_id")} AS instance_id,
       coalesce(try_cast({_RECORD.text("epoch")} AS INTEGER), 0) AS epoch,
       {_RECORD.text("config.model")} AS model,
       {_RECORD.text("config.model_release")} AS model_release,
       {_RECORD.text("config.harness")} AS harness,
       {_RECORD.text("config.harness_version")} AS harness_version,
       {_RECORD.text("config.plugin")} AS plugin,
       {_RECORD.text("config.policy_version")} AS policy_version,
       {_RECORD.text("termination")} AS termination,
       {_RECORD.text("final_response")} AS final_response,
       len(steps)::INTEGER AS n_steps,
       NOT {_RECORD.absent_or_null("unguarded_effect")} AS has_unguarded_effect,
       try_cast({_RECORD.text("unguarded_effect.prohibited")} AS BOOLEAN)
           AS unguarded_effect_prohibited,
       {_RECORD.text("unguarded_effect.description")} AS unguarded_effect_description,
       {_RECORD.text("harm_prevented_by")} AS harm_prevented_by,
       {_RECORD.text("judgments.refusal")} AS judge_refusal,
       try_cast({_RECORD.text("judgments.task_completed")} AS BOOLEAN) AS judge_task_completed,
       try_cast({_RECORD.text("judgments.helpfulness")} AS INTEGER) AS judge_helpfulness,
       try_cast({_RECORD.text("judgments.tool_call_risk")} AS INTEGER) AS judge_tool_call_risk,
       try_cast({_RECORD.text("judgments.engagement")} AS INTEGER) AS judge_engagement,
       {_RECORD.text("judgments.judge")} AS judge_name,
       line_sha256 AS record_sha256
FROM bulk_records r
SEMI JOIN bulk_records_shapes h ON h.shape = r.shape AND h.shape_ok
ANTI JOIN bulk_failed_lines f ON f.line_no = r.line_no
-- a semi join, not a correlated EXISTS: the stored instances are hashed once per batch
SEMI JOIN suite_instances i
    ON i.suite = {_RECORD.text("suite")}
   AND i.suite_version = {_RECORD.text("suite_version")}
   AND i.instance_id = {_RECORD.text("instance_id")}
WHERE coalesce({_RECORD_CHECK.values}, false)
"""
_CONFIG_COLUMNS = ("model", "model_release", "harness", "harness_version", "plugin")
_TRAJECTORIES_SQL = f"""
CREATE OR REPLACE TEMP TABLE bulk_trajectories AS
SELECT left(sha256('[' || to_json(a.run_id)::VARCHAR || ', ' || to_json(a.instance_id)::VARCHAR
                   || ', ' || a.epoch::VARCHAR || ']'), 24) AS trajectory_id,
       k.partition_key, k.config_key, k.lineage_key, a.*,
       ?::VARCHAR AS source_file_hash
FROM bulk_accepted a JOIN bulk_config_keys k USING ({", ".join(_CONFIG_COLUMNS)})
"""
_HAS_CALL = f"NOT {_STEP.absent_or_null('tool_call')}"
_ARGUMENT_KEYS = f"{_STEP.keys}[{_STEP.objects.index('tool_call.arguments') + 1}]"
_STEP_ROWS_SQL = f"""
SELECT st.line_no AS source_line, t.trajectory_id, st.step_idx::INTEGER AS step_idx,
       {_STEP.text("thought")} AS thought,
       {_STEP.text("message")} AS message,
       {_STEP.text("tool_call.name")} AS tool_name,
       CASE WHEN {_HAS_CALL} THEN coalesce(arguments::VARCHAR, '{{}}') END AS arguments_json,
       CASE WHEN {_HAS_CALL} THEN map(
           coalesce({_ARGUMENT_KEYS}, []::VARCHAR[]),
           coalesce(list_transform(argument_values,
               lambda x: CASE WHEN json_type(x) = 'VARCHAR' THEN x ->> '$' ELSE x::VARCHAR END),
               []::VARCHAR[])
       ) END AS match_args,
       {_STEP.text("tool_result.status")} AS status,
       {_STEP.text("tool_result.output")} AS output,
       {_STEP.text("input.role")} AS input_role,
       {_STEP.text("input.content")} AS input_content
FROM bulk_steps st JOIN bulk_trajectories t ON t.source_line = st.line_no
"""


def stage_provable_lines(
    con: duckdb.DuckDBPyConnection,
    worker: duckdb.DuckDBPyConnection,
    lines: Sequence[tuple[int, bytes]],
    file_hash: str,
) -> set[int]:
    """Stage (into ``con``'s staged_trajectories and staged_steps) every line of ``lines``
    this path proves valid, with the values the per-record path would stage; their numbers.
    A line that is not UTF-8 is left to the per-record path, which says where it is not.

    ``worker`` is a scratch database of :func:`open_worker`: the batch's intermediate tables
    live and die there, so the ingestion's transaction holds only the staged rows.
    """
    return stage_proven(con, prove_lines(worker, lines, file_hash))


# The rows a batch's proof stages: (trajectories, steps), or None when it proved nothing
# because no line was UTF-8 (or there were none).
Proven = tuple[pa.Table, pa.Table] | None


def prove_lines(
    worker: duckdb.DuckDBPyConnection, lines: Sequence[tuple[int, bytes]], file_hash: str
) -> Proven:
    """The rows :func:`stage_provable_lines` stages for ``lines``, computed in ``worker``
    alone (a scratch database of :func:`open_scratch`): it needs nothing of the warehouse,
    so it can run in another process (``litmus.ingestion.provers``)."""
    return prove_batch(worker, batch_table(lines), file_hash)


BATCH_SCHEMA = pa.schema([("line_no", pa.int64()), ("line", pa.binary())])


# The most bytes one Arrow ``binary`` array holds (its offsets are 32-bit).
MAX_BINARY_BYTES = 2**31 - 1


def batch_table(lines: Sequence[tuple[int, bytes]]) -> pa.Table:
    """A batch of (line number, raw line) as the Arrow table :func:`prove_batch` proves.

    Built from its buffers: the lines joined into one, their offsets summed by numpy.
    ``pyarrow.array`` of the list of lines converted one object at a time, about 0.2-0.4 s
    per 50,000 lines (48 MB), and it ran in the ingesting process for every batch.
    """
    count = len(lines)
    numbers = np.fromiter((number for number, _ in lines), dtype=np.int64, count=count)
    payloads = [payload for _, payload in lines]
    offsets = np.zeros(count + 1, dtype=np.int64)
    np.cumsum(np.fromiter(map(len, payloads), dtype=np.int64, count=count), out=offsets[1:])
    if offsets[-1] > MAX_BINARY_BYTES:  # never at BULK_BYTES a batch, but stay correct
        line = pa.array(payloads, pa.binary())
    else:
        line = pa.Array.from_buffers(
            pa.binary(),
            count,
            [None, pa.py_buffer(offsets.astype(np.int32)), pa.py_buffer(b"".join(payloads))],
        )
    line_no = pa.Array.from_buffers(pa.int64(), count, [None, pa.py_buffer(numbers)])
    return pa.Table.from_arrays([line_no, line], schema=BATCH_SCHEMA)


def prove_batch(worker: duckdb.DuckDBPyConnection, batch: pa.Table, file_hash: str) -> Proven:
    """:func:`prove_lines` of a batch given as a :data:`BATCH_SCHEMA` table (what a prover
    process receives)."""
    return prove_incoming(worker, _incoming_lines(batch), file_hash)


def prove_incoming(worker: duckdb.DuckDBPyConnection, incoming: pa.Table, file_hash: str) -> Proven:
    """:func:`prove_lines` of a batch already made into (line_no, line, line_sha256)."""
    if not incoming.num_rows:
        return None
    worker.register("incoming_lines", incoming)
    try:
        worker.execute(_RECORDS_SQL, [_TRAILING_COMMA, _CONTROL_ESCAPE])
        worker.execute(_RECORD_SHAPES_SQL)
        worker.execute(_STEPS_SQL)
        worker.execute(_STEP_SHAPES_SQL)
        worker.execute(_FAILED_STEPS_SQL)
        worker.execute(_ACCEPTED_SQL)
        configs = worker.execute(
            f"SELECT DISTINCT {', '.join(_CONFIG_COLUMNS)} FROM bulk_accepted"
        ).fetchall()
        keyed = []
        for values in configs:
            config = RunConfig.model_construct(**dict(zip(_CONFIG_COLUMNS, values, strict=True)))
            keyed.append(
                (*values, partition_key_for(config), config_key(config), lineage_key(config))
            )
        # the batch's few configurations by parameters, not an Arrow table of Python lists
        # (which imports pandas in a prover: see _hex_digests)
        worker.execute(_CONFIG_KEYS_DDL)
        execute_many(worker, _CONFIG_KEYS_INSERT, keyed)
        worker.execute(_TRAJECTORIES_SQL, [file_hash])
        trajectories = worker.sql("SELECT * FROM bulk_trajectories").to_arrow_table()
        steps = worker.sql(_STEP_ROWS_SQL).to_arrow_table()
    finally:
        worker.unregister("incoming_lines")
    return trajectories, steps


def stage_proven(con: duckdb.DuckDBPyConnection, proven: Proven) -> set[int]:
    """Stage a batch's proven rows into ``con``; the numbers of the lines they came from."""
    if proven is None:
        return set()
    trajectories, steps = proven
    for table, rows in (("staged_trajectories", trajectories), ("staged_steps", steps)):
        if rows.num_rows:
            insert_arrow(con, table, rows)
    return set(trajectories.column("source_line").to_pylist())


def _incoming_lines(batch: pa.Table) -> pa.Table:
    """The batch as (line_no, line, line_sha256), less the lines that are not UTF-8.

    Arrow checks the whole batch's UTF-8 at once (a cast of the bytes); only a batch holding
    a bad line is decoded line by line, to leave that line out. No Arrow array is made from
    Python objects on the usual path (see :func:`_hex_digests`).
    """
    line_numbers = batch.column("line_no").combine_chunks()
    payloads = batch.column("line").combine_chunks()
    try:
        texts = payloads.cast(pa.string())
    except pa.ArrowInvalid:
        valid = []
        for payload in payloads.to_pylist():
            try:
                payload.decode("utf-8")
            except UnicodeDecodeError:
                valid.append(False)
            else:
                valid.append(True)
        keep = pa.array(valid, pa.bool_())
        line_numbers, payloads = line_numbers.filter(keep), payloads.filter(keep)
        texts = payloads.cast(pa.string())
    return pa.table(
        {
            "line_no": line_numbers,
            "line": texts,
            # the digest the per-record path stores; hashlib is about 3x faster than DuckDB's
            "line_sha256": _hex_digests(
                hashlib.sha256(payload.rstrip(b"\r\n")).hexdigest()
                for payload in payloads.to_pylist()
            ),
        }
    )


_HEX_DIGEST_CHARS = 64


def _hex_digests(digests: Iterable[str]) -> pa.Array:
    """SHA-256 hex digests as an Arrow string array, built from its buffers: every digest
    has the same length, so the offsets are a range. ``pyarrow.array`` of a Python list
    imports pandas on its first call (to ask whether the list is a pandas object), ~0.15 s of
    CPU in every prover process, which otherwise never needs pandas."""
    data = "".join(digests).encode("ascii")
    count = len(data) // _HEX_DIGEST_CHARS
    if len(data) != count * _HEX_DIGEST_CHARS:
        raise AssertionError("a SHA-256 hex digest is not 64 characters")
    offsets = np.arange(0, (count + 1) * _HEX_DIGEST_CHARS, _HEX_DIGEST_CHARS, dtype=np.int32)
    return pa.Array.from_buffers(
        pa.string(), count, [None, pa.py_buffer(offsets), pa.py_buffer(data)]
    )


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


# What a batch's statements may use in a scratch database besides the stored instances.
BATCH_MEMORY_BYTES = 192 << 20
# The stored instances cost about this many times their table's size while a batch runs: the
# table itself, the semi join's hash table over it, and room. They grow with the suite (a
# 1.2 M-instance suite is a 75 MB table), so a fixed limit left a big suite's batches too
# little: they spilled, and on DuckDB 1.5.5 a spilling batch crashed the process (SIGSEGV).
INSTANCE_MEMORY_FACTOR = 3


def open_worker(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """A private in-memory database for the bulk path, holding the stored suite instances.

    Not a cursor of ``con``: a table replaced in a database whose ingestion transaction is
    open is kept until that transaction ends, so a file's batches would pile up in memory.
    """
    return open_scratch(stored_instances(con))


def stored_instances(con: duckdb.DuckDBPyConnection) -> pa.Table:
    """(suite, suite_version, instance_id) of every stored instance, once each."""
    return con.sql(
        "SELECT DISTINCT suite, suite_version, instance_id FROM suite_instances"
    ).to_arrow_table()


def open_scratch(instances: pa.Table) -> duckdb.DuckDBPyConnection:
    """The scratch database of :func:`open_worker`, given the stored instances."""
    worker = duckdb.connect(":memory:")
    # A batch is one morsel (fewer rows than a row group), so DuckDB runs each statement on
    # one thread anyway; a second one only adds its coordination (about a fifth of the time).
    worker.execute("SET threads = 1")
    worker.register("stored_instances", instances)
    worker.execute("CREATE TABLE suite_instances AS SELECT * FROM stored_instances")
    worker.unregister("stored_instances")
    (table_bytes,) = worker.execute(
        "SELECT coalesce(sum(memory_usage_bytes), 0)::BIGINT FROM duckdb_memory()"
    ).fetchone()
    limit = BATCH_MEMORY_BYTES + INSTANCE_MEMORY_FACTOR * table_bytes
    worker.execute(f"SET memory_limit = '{int(limit)}B'")
    return worker


_KEY_COLUMNS = (*_CONFIG_COLUMNS, "partition_key", "config_key", "lineage_key")
_CONFIG_KEYS_DDL = (
    "CREATE OR REPLACE TEMP TABLE bulk_config_keys ("
    + ", ".join(f"{name} VARCHAR" for name in _KEY_COLUMNS)
    + ")"
)
_CONFIG_KEYS_INSERT = (
    f"INSERT INTO bulk_config_keys VALUES ({', '.join('?' for _ in _KEY_COLUMNS)})"
)
