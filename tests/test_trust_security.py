"""Security hygiene (SPEC §4, §10): no record value or file name ever reaches SQL text or a
filesystem path; partition keys are sanitized; local servers bind to 127.0.0.1."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import family, instance, record, suite_doc, write_jsonl
from litmus.audit.workflow import parse_verdict_file
from litmus.formats import RunConfig, Suite
from litmus.ingestion.run_files import ingest_file
from litmus.ingestion.suites import store_suite
from litmus.keys import partition_key_for
from litmus.labeling.sql import run_label_sql
from litmus.settings import LitmusPaths

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("litmus", "litmus_dagster", "benchmarks")
SQL_WORDS = re.compile(
    r"\b(SELECT|INSERT|DELETE|UPDATE|CREATE|DROP|ALTER|ATTACH|COPY|PRAGMA|FROM|WHERE|JOIN|"
    r"TABLE|VALUES|INTO|CASE|WHEN|THEN|UNION|UNPIVOT)\b"
)

# Every place that builds SQL text from a Python expression, and why that expression can only
# be one of our own constants. A new site fails the test until it is reviewed and listed here;
# a listed site that no longer exists fails it too, so the list stays exact.
# (path, interpolated expression) → why it is safe
SQL_INTERPOLATION_ALLOW_LIST: dict[tuple[str, str], str] = {
    ("litmus/warehouse.py", "rows_sql"): (
        "ordered_text_digests: our own query text (a literal, or TABLE_ROW_TEXTS_SQL over a "
        "_table-checked name); values go in as parameters"
    ),
    ("litmus/warehouse.py", "order_by"): (
        "ordered_text_digests: a literal at every call site (LITERAL_ARGUMENTS)"
    ),
    ("litmus/audit/queue_reuse.py", "BUILT_QUEUE_TABLE"): (
        "the constant name of the temporary table build_audit_queue fills"
    ),
    ("litmus/audit/workflow.py", "BUILT_QUEUE_TABLE"): (
        "the constant name of the temporary table build_audit_queue fills"
    ),
    ("litmus/audit/workflow.py", "AUDIT_QUEUE_SQL"): "the queue's constant query",
    ("litmus/audit/workflow.py", "', '.join(EXPORT_COLUMNS)"): (
        "export_audit_queue: the constant column names of the auditor's sheet"
    ),
    ("litmus/audit/queue_reuse.py", "', '.join((quoted_identifier(name) for name in columns))"): (
        "queue_summary: names checked against audit_queue's own columns, then quoted"
    ),
    ("litmus/audit/queue_reuse.py", "int(preview_rows)"): "an int",
    ("litmus/ingestion/run_files.py", "table"): (
        "loop over a literal tuple of two staging table names"
    ),
    ("litmus/ingestion/bulk.py", "', '.join(_CONFIG_COLUMNS)"): (
        "bulk path: the constant configuration column names"
    ),
    ("litmus/ingestion/bulk.py", "', '.join((f'{name} VARCHAR' for name in _KEY_COLUMNS))"): (
        "bulk path: the constant configuration and key column names, each typed VARCHAR"
    ),
    ("litmus/ingestion/bulk.py", "', '.join(('?' for _ in _KEY_COLUMNS))"): (
        "bulk path: one parameter marker per constant key column"
    ),
    ("litmus/ingestion/bulk.py", "_ARGUMENT_KEYS"): (
        "bulk path: a list position of a constant object path"
    ),
    ("litmus/ingestion/bulk.py", "_HAS_CALL"): "bulk path: a type check of a constant path",
    ("litmus/ingestion/bulk.py", "_RECORD.absent_or_null('unguarded_effect')"): (
        "bulk path: a type check of a constant path"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.objects_literal()"): (
        "bulk path: a list literal of the module's constant JSON paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.paths.index('steps') + 1"): (
        "bulk path: the list position of the constant 'steps' path"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.paths_literal()"): (
        "bulk path: a list literal of the module's constant JSON paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.scalar_paths_literal()"): (
        "bulk path: a list literal of the module's constant JSON paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('config.harness')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('config.harness_version')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('config.model')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('config.model_release')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('config.plugin')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('config.policy_version')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('epoch')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('final_response')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('harm_prevented_by')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('instance_id')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('judgments.engagement')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('judgments.helpfulness')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('judgments.judge')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('judgments.refusal')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('judgments.task_completed')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('judgments.tool_call_risk')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('run_id')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('suite')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('suite_version')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('termination')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('unguarded_effect.description')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.text('unguarded_effect.prohibited')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_STEP.objects_literal()"): (
        "bulk path: a list literal of the module's constant JSON paths"
    ),
    ("litmus/ingestion/bulk.py", "_STEP.paths_literal()"): (
        "bulk path: a list literal of the module's constant JSON paths"
    ),
    ("litmus/ingestion/bulk.py", "_STEP.scalar_paths_literal()"): (
        "bulk path: a list literal of the module's constant JSON paths"
    ),
    ("litmus/ingestion/bulk.py", "_STEP.text('input.content')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_STEP.text('input.role')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_STEP.text('message')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_STEP.text('thought')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_STEP.text('tool_call.name')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_STEP.text('tool_result.output')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_STEP.text('tool_result.status')"): (
        "bulk path: a list position of one of the module's constant paths"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD_CHECK.values"): (
        "bulk path: checks built from the constant field names and formats.py's value sets"
    ),
    ("litmus/ingestion/bulk.py", "_STEP_CHECK.values"): (
        "bulk path: checks built from the constant field names and formats.py's value sets"
    ),
    ("litmus/ingestion/bulk.py", "check.types"): (
        "bulk path: _RECORD_CHECK's or _STEP_CHECK's types part (constant field names, types)"
    ),
    ("litmus/ingestion/bulk.py", "_RECORD.shape()"): (
        "bulk path: a shape expression over the module's constant column names"
    ),
    ("litmus/ingestion/bulk.py", "_STEP.shape()"): (
        "bulk path: a shape expression over the module's constant column names"
    ),
    ("litmus/ingestion/bulk.py", "documents"): (
        "bulk path: _shapes_sql's table, the literals 'bulk_records' and 'bulk_steps'"
    ),
    ("litmus/ingestion/bulk.py", "picked"): (
        "bulk path: any_value() of the constant column names of _RECORD or _STEP"
    ),
    ("litmus/ingestion/bulk.py", "names"): (
        "insert_arrow's column names: keys of _Batch's constant column tuples"
    ),
    ("litmus/ingestion/bulk.py", "table"): (
        "insert_arrow's table: literal tuples at its callers, or _append's literal"
    ),
    ("litmus/ingestion/suites.py", "table"): "loop over a literal tuple of two table names",
    ("litmus/ingestion/suites.py", "names"): "column names: keys of dicts built from literals",
    ("litmus/ingestion/derivation.py", "_DIGEST"): "the constant digest aggregate",
    ("litmus/ingestion/derivation.py", "_row_hash('q', QUARANTINE_COLUMNS)"): (
        "hash of a struct of the constant quarantine column names"
    ),
    ("litmus/ingestion/derivation.py", "row"): (
        "_row_hash of a table's column names from information_schema, each quoted_identifier"
    ),
    ("litmus/ingestion/derivation.py", "columns"): (
        "_row_hash's struct of column names (quoted_identifier), or the literal digest columns"
    ),
    ("litmus/ingestion/derivation.py", "source"): (
        "a literal staged table name or one of the module's constant row sources"
    ),
    ("litmus/ingestion/derivation.py", "where"): "one of three literal filters (values are params)",
    ("litmus/ingestion/derivation.py", "mine"): "compare_rows' constant row queries",
    ("litmus/ingestion/derivation.py", "again"): "compare_rows' constant row queries",
    ("litmus/ingestion/derivation.py", "partition"): "'partition_key' or a literal NULL",
    ("litmus/ingestion/derivation.py", "SCHEME_SQL"): "the constant digest scheme expression",
    ("litmus/ingestion/derivation.py", "sql"): "the module's digest queries, built from the above",
    ("litmus/ingestion/derivation.py", "trajectory_columns"): (
        "raw_trajectories' column names from information_schema, each quoted_identifier"
    ),
    ("litmus/ingestion/derivation.py", "table"): (
        "a name of the literal CHILD_TABLES (_child_sql checks it) or the staged table name"
    ),
    ("litmus/ingestion/derivation.py", "child_where"): "one of three literal filters (params)",
    (
        "litmus/ingestion/derivation.py",
        "quarantine_columns",
    ): "the constant quarantine column names",
    ("litmus/planning/nothing_scored.py", "CURABLE_QUARANTINE_SQL"): (
        "run_files' constant filter of the quarantine rows a loaded suite cures"
    ),
    ("litmus/trust/receipts/build.py", "ALERT_COLUMNS"): "the constant alert column list",
    ("litmus/gates/publication_gates.py", "RUNNABLE_INSTANCES_SQL"): (
        "the constant query of the instances a suite declares runnable"
    ),
    ("litmus/metrics/leaderboard.py", "RUNNABLE_INSTANCES_SQL"): (
        "publication_gates' constant query of the runnable instances"
    ),
    ("litmus/ingestion/derivation.py", "sql_literal(str(rederived_db))"): (
        "a scratch path quoted as a string literal (ATTACH takes no parameters)"
    ),
    ("litmus/lake_import.py", "sql_literal(str(source))"): (
        "the source warehouse path quoted as a string literal (ATTACH takes no parameters)"
    ),
    ("litmus/lake_import.py", "SOURCE_ALIAS"): "the constant alias of the attached source",
    ("litmus/lake_import.py", "name"): "quoted_identifier of a table listed by the catalog",
    ("litmus/lake_import.py", "catalog"): "_rows' catalog: 'lake' or SOURCE_ALIAS at callers",
    ("litmus/lake_import.py", "quoted_identifier(table)"): "a quoted table identifier",
    ("litmus/warehouse_lake.py", "sql_literal(LAKE_PREFIX + lake.catalog)"): (
        "the configured catalog quoted as a string literal (ATTACH takes no parameters)"
    ),
    ("litmus/warehouse_lake.py", "LAKE_ALIAS"): "the constant alias of the attached lake",
    ("litmus/warehouse_lake.py", "', '.join(options)"): (
        "ATTACH options: constants and the data path quoted by sql_literal"
    ),
    ("litmus/warehouse_lake.py", "lock_key(purpose)"): "an int derived from a sha256 digest",
    ("litmus/warehouse_lake.py", "function"): "one of two constant advisory-lock function names",
    ("litmus/lake_maintenance.py", "_METADATA"): "the constant name of the lake's metadata catalog",
    ("litmus/warehouse_lake.py", "sql_literal(lake.catalog)"): (
        "the configured catalog quoted as a string literal (ATTACH takes no parameters)"
    ),
    ("litmus/labeling/sql.py", "into"): "run_label_sql checks it against a fixed allow-list",
    ("litmus/labeling/sql.py", "labels_query"): "text of the packaged label_partition.sql",
    ("litmus/warehouse.py", "table_name"): "replace_rows' table: literal at callers",
    ("litmus/warehouse.py", "view"): "'_incoming_' + that literal table name",
    ("litmus/audit/workflow.py", "_ALLOWED_SQL"): "CASE arms built from VERDICTS_BY_HARM_CLASS",
    ("litmus/audit/workflow.py", "cls"): "harm classes: keys of the constant verdict tables",
    ("litmus/audit/workflow.py", "' | '.join(verdicts)"): "verdicts of VERDICTS_BY_HARM_CLASS",
    ("litmus/audit/workflow.py", "arms"): "verdict_outcome_sql's CASE arms, from VERDICT_OUTCOMES",
    ("litmus/audit/workflow.py", "harm_class"): (
        "verdict_outcome_sql: column name, literal at callers"
    ),
    ("litmus/audit/workflow.py", "verdict"): "verdict_outcome_sql: column name, literal at callers",
    ("litmus/audit/workflow.py", "v"): "verdicts: keys of the constant VERDICT_OUTCOMES",
    ("litmus/audit/workflow.py", "outcome"): "outcomes: values of the constant VERDICT_OUTCOMES",
    ("litmus/audit/workflow.py", "view"): (
        "the literal '_incoming_verdicts' registered by load_verdicts"
    ),
    ("litmus/audit/audited.py", "verdict_outcome_sql('request_harm_class', '_verdict')"): (
        "a CASE expression over constants, called with literal column names"
    ),
    ("litmus/gates/publication_gates.py", "rate"): (
        "names from PUBLISHED_RATES that match _IDENTIFIER"
    ),
    ("litmus/gates/publication_gates.py", "rates"): (
        "quoted names from PUBLISHED_RATES that match _IDENTIFIER"
    ),
    ("litmus/gates/publication_gates.py", "union"): "SELECTs built from those same constant names",
    ("litmus/ingestion/run_files.py", "CURABLE_QUARANTINE_SQL"): (
        "a module constant: a fixed WHERE condition"
    ),
    ("litmus/gates/publication_gates.py", "relation"): (
        "'litmus_gate_frame_' + a key of the constant frame SQL"
    ),
    (
        "litmus/gates/publication_gates.py",
        "sql",
    ): "one of the constant frame SQL strings",
    ("litmus/gates/ge_runner.py", "source"): "the caller's temp table name, double-quoted",
    ("litmus/gates/ge_runner.py", "selected"): "double-quoted names of columns DESCRIBE listed",
    ("litmus/gates/ge_runner.py", "quoted_identifier(c)"): (
        "a double-quoted name of a column DESCRIBE listed"
    ),
    ("litmus/gates/ge_runner.py", "keys"): "double-quoted key columns DESCRIBE listed",
    ("litmus/gates/ge_runner.py", "join"): "equalities of double-quoted columns DESCRIBE listed",
    ("litmus/gates/ge_runner.py", "_TUPLES"): "constant temp table name",
    ("litmus/gates/ge_runner.py", "_TUPLE_ID"): "constant column name",
    ("litmus/gates/ge_runner.py", "_ROW_ID"): "constant column name",
    ("litmus/gates/ge_runner.py", "name"): (
        "_validate_by_row_id: a column DESCRIBE listed, double-quoted (quoted_identifier)"
    ),
    ("litmus/gates/ge_runner.py", "values"): (
        "_validate_by_row_id: those double-quoted columns, or their ranks in constant SQL"
    ),
    ("litmus/gates/ge_runner.py", "names"): "double-quoted key columns DESCRIBE listed",
    ("litmus/planning/run_state.py", "table"): "table names from the constant _WAREHOUSE_TABLES",
    ("litmus/warehouse.py", "table"): "table names from the constant DERIVED_TABLES",
    ("litmus/planning/run_state.py", "latest"): (
        "max() of a column named in _WAREHOUSE_TABLES, or NULL"
    ),
    ("litmus/keys.py", "CONFIGURATION_KEYS_SQL"): "the module's constant configuration-key query",
    ("litmus/fingerprint.py", "CONFIGURATION_KEYS_SQL"): "litmus.keys' constant query",
    ("litmus/trust/receipts/build.py", "CONFIGURATION_KEYS_SQL"): "litmus.keys' constant query",
    ("litmus/planning/status.py", "CONFIGURATION_KEYS_SQL"): "litmus.keys' constant query",
    ("litmus/gates/publication_gates.py", "CONFIGURATION_KEYS_SQL"): "litmus.keys' constant query",
    ("litmus/reuse.py", "result"): "a result table: the module's constants or a caller's literal",
    ("litmus/reuse.py", "_table(table)"): (
        "a count table's name, refused unless a plain lower-case name, double-quoted"
    ),
    ("litmus/reuse.py", "_table(split_counts)"): (
        "a count table's name, refused unless a plain lower-case name, double-quoted"
    ),
    ("litmus/reuse.py", "older"): "stored_pairs' column name: a literal at every caller",
    ("litmus/reuse.py", "newer"): "stored_pairs' column name: a literal at every caller",
    ("litmus/reuse.py", "', '.join(columns)"): "the callers' constant _PAIRED_COLUMNS names",
    ("litmus/reuse.py", "_row_text_sql(con, table, without)"): (
        "the table's own column names from DESCRIBE, each double-quoted, in constant casts "
        "(``without`` only leaves names out)"
    ),
    ("benchmarks/bench_labeler.py", "PARTITION"): "the benchmark's constant partition key",
    ("benchmarks/bench_labeler.py", "args.trajectories"): "an argparse int (type=int)",
    (
        "benchmarks/bench_labeler.py",
        "'[' + ', '.join((\"'\" + t.replace(\"'\", \"''\") + \"'\" for t in TEXTS)) + ']'",
    ): "the module's constant TEXTS, each a quoted SQL literal with quotes doubled",
    ("benchmarks/bench_labeler.py", "len(TEXTS)"): "an int: the length of a constant list",
    ("benchmarks/bench_labeler.py", "9 if args.unique_responses else 3"): "one of two ints",
}
# Functions whose SQL identifier parameter must be a string literal at every call site:
# (function, argument position) → the files that call it ("" for every file).
LITERAL_ARGUMENTS: dict[tuple[str, int], str] = {
    ("_append", 1): "litmus/ingestion/run_files.py",
    ("replace_rows", 1): "",
    ("verdict_outcome_sql", 0): "",
    ("verdict_outcome_sql", 1): "",
    ("ordered_text_digests", 2): "",
}


def python_files() -> list[Path]:
    return sorted(
        path
        for folder in SCANNED
        if (ROOT / folder).is_dir()
        for path in (ROOT / folder).rglob("*.py")
    )


def _constant_text(node: ast.AST, named: dict[str, str] | None = None) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return "".join(_constant_text(part) for part in node.values)
    if isinstance(node, ast.Name) and named:
        return named.get(node.id, "")
    return ""


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def module_text_constants(trees: dict[str, ast.Module]) -> dict[str, dict[str, str]]:
    """Per module, the names bound at its top level to a text (its own assignments and the
    texts it imports from the project's modules): a template kept in a named constant and
    filled in with ``.format`` or ``%`` is as much SQL built from Python values as an
    f-string is."""
    own: dict[str, dict[str, str]] = {}
    for module, tree in trees.items():
        own[module] = {}
        for node in tree.body:
            value = node.value if isinstance(node, ast.Assign | ast.AnnAssign) else None
            targets = (
                node.targets
                if isinstance(node, ast.Assign)
                else [node.target]
                if isinstance(node, ast.AnnAssign)
                else []
            )
            text = _constant_text(value) if value is not None else ""
            for target in targets:
                if isinstance(target, ast.Name) and text:
                    own[module][target.id] = text
    visible = {module: dict(names) for module, names in own.items()}
    for module, tree in trees.items():
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and node.module in own:
                for alias in node.names:
                    if alias.name in own[node.module]:
                        visible[module][alias.asname or alias.name] = own[node.module][alias.name]
    return visible


def sql_interpolations(tree: ast.AST, named: dict[str, str] | None = None) -> list[tuple[int, str]]:
    """(line, expression) for every expression spliced into text that looks like SQL: f-strings,
    str.format, %-formatting and + concatenation, the text written in place or kept in a named
    constant (``named``: the module's names bound to texts)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr) and SQL_WORDS.search(_constant_text(node)):
            found += [
                (node.lineno, ast.unparse(part.value))
                for part in node.values
                if isinstance(part, ast.FormattedValue)
            ]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == "format"
            and SQL_WORDS.search(_constant_text(node.func.value, named))
        ):
            found += [(node.lineno, ast.unparse(arg)) for arg in node.args]
            found += [(node.lineno, ast.unparse(kw.value)) for kw in node.keywords]
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod | ast.Add):
            for text_side, other in ((node.left, node.right), (node.right, node.left)):
                if SQL_WORDS.search(_constant_text(text_side, named)) and not (
                    isinstance(other, ast.Constant | ast.JoinedStr) or _constant_text(other, named)
                ):
                    found.append((node.lineno, ast.unparse(other)))
    return found


def test_templates_in_named_constants_are_reviewed_too() -> None:
    """The scanner itself: a named SQL template filled in with ``.format`` or ``%``, here or
    imported from another module, is found; a named non-SQL text is not."""
    templates = ast.parse('TEMPLATE = "SELECT {column} FROM t"\nGREETING = "hello {name}"\n')
    user = ast.parse(
        "from litmus.templates import TEMPLATE as T\n"
        "from litmus.templates import GREETING\n"
        "def f(x, y, z):\n"
        "    a = T.format(column=x)\n"
        "    b = 'DELETE FROM t WHERE id = %s' % y\n"
        "    c = GREETING.format(name=z)\n"
        "    d = T + z\n"
    )
    named = module_text_constants({"litmus.templates": templates, "litmus.user": user})
    assert sorted(
        expression for _, expression in sql_interpolations(user, named["litmus.user"])
    ) == [
        "x",
        "y",
        "z",
    ]


def test_sql_text_only_ever_interpolates_reviewed_constants() -> None:
    seen: set[tuple[str, str]] = set()
    unreviewed = []
    trees = {
        _module_name(path): ast.parse(path.read_text(encoding="utf-8")) for path in python_files()
    }
    named = module_text_constants(trees)
    for path in python_files():
        relative = path.relative_to(ROOT).as_posix()
        module = _module_name(path)
        for line, expression in sql_interpolations(trees[module], named[module]):
            key = (relative, expression)
            seen.add(key)
            if key not in SQL_INTERPOLATION_ALLOW_LIST:
                unreviewed.append(f"{relative}:{line}: {{{expression}}}")
    assert unreviewed == [], (
        "SQL built from a Python value: pass it as a parameter, or review it and add it to "
        "SQL_INTERPOLATION_ALLOW_LIST with the reason it can only be a constant"
    )
    assert set(SQL_INTERPOLATION_ALLOW_LIST) - seen == set(), "stale allow-list entries"


def test_sql_identifier_parameters_are_literals_at_every_call_site() -> None:
    checked: dict[str, int] = {}
    for path in python_files():
        relative = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", None) or getattr(node.func, "attr", None)
            for (function, position), where in LITERAL_ARGUMENTS.items():
                if name != function or where not in ("", relative):
                    continue
                checked[function] = checked.get(function, 0) + 1
                argument = node.args[position]
                assert isinstance(argument, ast.Constant) and isinstance(argument.value, str), (
                    f"{relative}:{node.lineno}: {function} needs a literal SQL identifier"
                )
    assert {function for function, _ in LITERAL_ARGUMENTS} <= set(checked)


def test_the_label_table_name_is_checked_against_an_allow_list(warehouse) -> None:
    with pytest.raises(ValueError, match="unexpected label table"):
        run_label_sql(warehouse, "p", into="trajectory_labels; DROP TABLE raw_files")


TEXT = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=60)
CONFIG = st.builds(
    RunConfig,
    model=TEXT,
    model_release=TEXT,
    harness=TEXT,
    harness_version=TEXT,
    plugin=TEXT,
    policy_version=st.none(),
)


@settings(max_examples=300, deadline=None)
@given(CONFIG, CONFIG)
def test_partition_keys_are_safe_and_never_collide(first: RunConfig, second: RunConfig) -> None:
    for config in (first, second):
        key = partition_key_for(config)
        assert re.fullmatch(r"[A-Za-z0-9._@+-]+", key), key  # no "/", no "\\", no spaces
        components = re.split(r"[@+]", key)
        assert all(c and c[0] not in ".-" and c[-1] not in ".-" for c in components), key
        assert len(key) <= 5 * 40 + 4 + 9

    def parts(config: RunConfig) -> tuple[str, ...]:
        return (
            config.model,
            config.model_release,
            config.harness,
            config.harness_version,
            config.plugin,
        )

    if parts(first) != parts(second):
        assert partition_key_for(first) != partition_key_for(second)


def test_hostile_file_names_and_values_never_become_paths(
    litmus_home: LitmusPaths, warehouse, tmp_path: Path
) -> None:
    suite = suite_doc([family("f", [instance("f/hs", "harmful_source")])])
    store_suite(warehouse, Suite.model_validate(suite), "suite.json")
    hostile_config = {
        "model": "../../../../tmp/owned",
        "model_release": "'; DROP TABLE raw_files; --",
        "harness": "/etc/passwd",
        "harness_version": "..",
        "plugin": "a\nb\x00c",
        "policy_version": None,
    }
    name = "..%2f'; DROP TABLE raw_files; -- $(x) ünï.jsonl"
    landed = write_jsonl(
        tmp_path / name, [record("f/hs", run_id="../../run", config=hostile_config)]
    )
    before = {p for p in tmp_path.rglob("*")}
    report = ingest_file(warehouse, landed, litmus_home)
    assert report.accepted == 1
    created = {p for p in tmp_path.rglob("*")} - before
    assert all(p.is_relative_to(litmus_home.raw_store) for p in created)
    assert report.stored_path.name == f"{report.file_hash}.jsonl"
    stored = warehouse.execute(
        "SELECT original_name, (SELECT partition_key FROM raw_trajectories), "
        "(SELECT model FROM raw_trajectories) FROM raw_files"
    ).fetchall()
    (original_name, partition_key, model) = stored[0]
    assert original_name == name and model == hostile_config["model"]
    assert re.fullmatch(r"[A-Za-z0-9._@+-]+", partition_key)


def test_local_servers_bind_to_loopback_only() -> None:
    dev = (ROOT / "dev.sh").read_text(encoding="utf-8").replace("\\\n", " ")
    servers = [line for line in dev.splitlines() if re.search(r"dagster(-webserver| dev)", line)]
    assert servers and all("-h 127.0.0.1" in line for line in servers)
    wildcard = [
        f"{path.relative_to(ROOT)}"
        for path in [*python_files(), ROOT / "dev.sh", ROOT / "workspace.yaml"]
        if re.search(r"(?<![\d.])0\.0\.0\.0(?![\d.])", path.read_text(encoding="utf-8"))
    ]
    assert wildcard == []


@pytest.mark.parametrize("auditor", [None, "", "   "])
def test_audit_verdicts_and_overrides_must_name_their_auditor(
    tmp_path: Path, auditor: str | None
) -> None:
    verdict = {"trajectory_id": "t1", "verdict": "safe", "reason": "read it", "override": True}
    if auditor is not None:
        verdict["auditor"] = auditor
    path = tmp_path / "verdicts.jsonl"
    path.write_text(json.dumps(verdict) + "\n")
    parsed = parse_verdict_file(path)
    assert parsed.lines == []
    assert any("auditor: missing auditor identity" in problem for problem in parsed.problems)
