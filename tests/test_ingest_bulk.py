"""The vectorized accepted path (litmus/ingestion/bulk.py) against the per-record reference.

Every example is one run file of mixed lines: the hostile corpus of test_fuzz_ingest (valid
records full of hostile text, records broken in every known way, duplicates) plus lines
aimed at where DuckDB's JSON reader and Python's differ (trailing commas, NaN, floats,
integers past 64 bits, duplicate keys at every level, control-character escapes, nested or
empty arguments, ``-0``). The same file is ingested into two warehouses, one with
``vectorized=False`` (every record through the strict validator), one with the bulk path;
every stored row and every quarantine row (file, line, field, reason, excerpt) must be equal.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import pytest
from hypothesis import given
from hypothesis import strategies as st
from property_examples import examples, floor_for
from test_fuzz_ingest import dumps, file_settings, run_files, valid_records

from conftest import ONE_FAMILY_SUITE
from litmus.formats import Suite
from litmus.ingestion.run_files import BULK_LINES, ingest_file
from litmus.ingestion.suites import load_suite_file, store_suite
from litmus.sample import generate_sample
from litmus.settings import LitmusPaths, litmus_paths
from litmus.warehouse import INGEST_MEMORY_LIMIT, connect

EXAMPLES = examples(12)


def _compact(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def _with_call(record: dict[str, Any], call: Any) -> dict[str, Any]:
    return record | {"steps": [{"tool_call": call, "tool_result": {"status": "ok"}}]}


def _args(record: dict[str, Any], arguments: Any) -> dict[str, Any]:
    return _with_call(record, {"name": "fs.list", "arguments": arguments})


def _marked(record: dict[str, Any], needle: bytes) -> bytes:
    return _compact(record | {"final_response": "MARK"}).replace(b'"MARK"', needle)


# Lines where the two parsers could disagree; each builds one line from a valid record.
EDGES: tuple[Callable[[dict[str, Any]], bytes], ...] = (
    lambda r: _compact(r),
    lambda r: dumps(r),  # ", " and ": " separators
    lambda r: b"  " + _compact(r) + b" \t",
    lambda r: _compact(r)[:-1] + b",}",
    lambda r: _compact(r)[:-1] + b" , }",
    lambda r: _compact(_args(r, {"a": [1, 2]})).replace(b"[1,2]", b"[1,2,]"),
    lambda r: _marked(r, b"NaN"),
    lambda r: _compact(_args(r, {"x": "MARK"})).replace(b'"MARK"', b"NaN"),
    lambda r: _compact(_args(r, {"x": "MARK"})).replace(b'"MARK"', b"-Infinity"),
    lambda r: _compact(_args(r, {"x": "MARK"})).replace(b'"MARK"', b"1e400"),
    lambda r: _compact(_args(r, {"amount": 45.5, "n": 1.0, "e": 1e-7})),
    lambda r: _compact(_args(r, {"n": 2**63 - 1, "m": -(2**63)})),
    lambda r: _compact(_args(r, {"n": 2**63})),
    lambda r: _compact(_args(r, {"n": 2**64 + 1})),
    lambda r: _compact(_args(r, {"x": "MARK"})).replace(b'"MARK"', b"-0"),
    lambda r: _compact(r | {"epoch": "MARK"}).replace(b'"MARK"', b"-0"),
    lambda r: _compact(r | {"epoch": "MARK"}).replace(b'"MARK"', b"1E2"),
    lambda r: _compact(r | {"epoch": 2**31 - 1}),
    lambda r: _compact(r | {"epoch": 2**31}),
    lambda r: _compact(r | {"schema_version": "MARK"}).replace(b'"MARK"', b"1.0"),
    lambda r: b'{"run_id":"dup",' + _compact(r)[1:],
    lambda r: _compact(r).replace(b'"config":{', b'"config":{"model":"twice",', 1),
    lambda r: _compact(_args(r, {"k": 1})).replace(b'{"k":1}', b'{"k":1,"k":2}'),
    lambda r: _compact(_args(r, {"k": 1})).replace(b'"name":', b'"name":"a","name":', 1),
    lambda r: _compact(_args(r, {"k\u0001ey": "v\u001bal", "n": "\u0000"})),
    lambda r: _compact(_args(r, {"q": 'say "hi"\\n\t/ \u2028 \u00e9 \U0001f9e8'})),
    lambda r: _compact(_args(r, {"nested": {"a": {"b": [1, None, True]}}})),
    lambda r: _compact(_args(r, {})),
    lambda r: _compact(_with_call(r, {"name": "fs.list"})),
    lambda r: _compact(_args(r, None)),
    lambda r: _compact(_args(r, [1])),
    lambda r: _compact(_with_call(r, None)),
    lambda r: _compact(r | {"steps": [{"tool_result": {"status": "ok"}}]}),
    lambda r: _compact(r | {"steps": [{"tool_call": None, "tool_result": None}]}),
    lambda r: _compact(r | {"steps": [{}, None]}),
    lambda r: _compact(r | {"steps": ["x"]}),
    lambda r: _compact(r | {"steps": [{"input": {"role": "user", "content": "c"}}]}),
    lambda r: _compact(r | {"steps": [{"input": {"role": "agent", "content": "c"}}]}),
    lambda r: _compact(r | {"steps": [{"input": {"role": "user"}}]}),
    lambda r: _compact(r | {"steps": [{"thought": 1}]}),
    lambda r: _compact(r | {"steps": [{"tool_call": {"name": ""}}]}),
    lambda r: _compact(r | {"steps": [{"tool_call": {"name": "n", "extra": 1}}]}),
    lambda r: _compact(r | {"judgments": {"helpfulness": 4}}),
    lambda r: _compact(r | {"judgments": {"helpfulness": True}}),
    lambda r: _compact(r | {"judgments": {}}),
    lambda r: _compact(r | {"judgments": {"refusal": "maybe"}}),
    lambda r: _compact(r | {"unguarded_effect": {"description": "d"}}),
    lambda r: _compact(r | {"unguarded_effect": {"description": "", "prohibited": False}}),
    lambda r: _compact(r | {"config": r["config"] | {"policy_version": None}}),
    lambda r: _compact({k: v for k, v in r.items() if k not in ("epoch", "judgments")}),
    lambda r: _compact(r | {"final_response": ""}),
    lambda r: _compact(r | {"run_id": ""}),
    lambda r: _compact(r | {"run_id": "a\\u00e9 \\ud83e\\udde8"}).replace(b"\\\\u", b"\\u"),
    lambda r: _compact(r | {"run_id": "lone \\ud800"}).replace(b"\\\\u", b"\\u"),
    lambda r: _compact(r | {"instance_id": "fam-1/zz"}),
    lambda r: _compact(r | {"suite": "nope"}),
    # post-states: the validator's alone (a record with one falls back), every way it can fail
    lambda r: _compact(r | {"post_state": None}),
    lambda r: _compact(r | {"post_state": {}}),
    lambda r: _compact(r | {"post_state": {"db": {"payee": "x", "amount": 1e-5, "ok": [1, None]}}}),
    lambda r: _compact(r | {"post_state": [1]}),
    lambda r: _compact(r | {"post_state": "done"}),
    lambda r: _compact(r | {"post_state": {"blob": "x" * 70_000}}),
    lambda r: _compact(r | {"post_state": {"k": 1}}).replace(b'{"k":1}', b'{"k":1,"k":2}'),
    lambda r: _compact(r | {"post_state": {"k": "MARK"}}).replace(b'"MARK"', b"NaN"),
    lambda r: _compact(r | {"post_state": {"k": 2**64}}),
    lambda r: "\ufeff".encode() + _compact(r),
    lambda r: _compact(r)[:-1],
    lambda r: _compact([r]),
    # Shapes: the bulk path decides types once per distinct shape of a batch (types of every
    # path and the number of keys of every object), so lines that share a valid line's shape
    # but not its keys or values must still fall back.
    lambda r: _compact(r).replace(b'"harm_prevented_by":', b'"harm_prevented":', 1),
    lambda r: _compact(r).replace(b'"policy_version":', b'"policy":', 1),
    lambda r: _compact(r | {"judgments": {"refusal": "refused"}}).replace(
        b'"refusal":', b'"refusa1":', 1
    ),
    lambda r: _compact(r | {"unguarded_effect": {"description": "d", "prohibited": True}}).replace(
        b'"description":', b'"descriptio":', 1
    ),
    lambda r: _compact(r | {"steps": [{"thought": "a"}]}).replace(b'"thought":', b'"Thought":'),
    lambda r: _compact(r | {"steps": [{"input": {"role": "user", "content": "c"}}]}).replace(
        b'"content":', b'"contents":'
    ),
    lambda r: _compact(r | {"steps": [{"thought": "a"}]}).replace(
        b'"thought":"a"', b'"thought":"a","thought":"b"'
    ),
    lambda r: _compact(r | {"judgments": {"judge": "j"}}).replace(
        b'"judge":"j"', b'"judge":"j","judge":"k"'
    ),
    lambda r: _compact(r).replace(b'"run_id":', b'"run\\u005fid":', 1),
    lambda r: _compact(r).replace(b'"suite":', b'"suite":"t-suite","s\\u0075ite":', 1),
    lambda r: _compact(r | {"epoch": 2**64}),
    lambda r: _compact(r | {"epoch": -1}),
    lambda r: _marked(r | {"judgments": {"helpfulness": "MARK"}}, b"NaN").replace(
        b'"final_response":NaN', b'"final_response":null'
    ),
    lambda r: _compact(r | {"judgments": {"engagement": 2**64 + 3}}),
    lambda r: _compact(r | {"judgments": {"tool_call_risk": -1}}),
    lambda r: _compact(r | {"schema_version": 2}),
    lambda r: _compact(r | {"termination": "Completed"}),
    lambda r: _compact(
        r | {"steps": [{"tool_result": {"status": "OK"}, "tool_call": {"name": "n"}}]}
    ),
    lambda r: _compact(
        r
        | {
            "steps": [
                {
                    "tool_call": {"name": "a", "arguments": {"x": 1}},
                    "tool_result": {"status": "ok"},
                },
                {"tool_result": {"status": "ok"}},
            ]
        }
    ),
    lambda r: _compact(
        r
        | {
            "steps": [
                {"tool_call": {"name": "a", "arguments": None}},
                {"tool_call": {"name": "b", "arguments": {"x": "y"}}},
            ]
        }
    ),
    lambda r: _compact(r | {"steps": [{"thought": "a"}, None, {"message": "b"}]}),
    lambda r: _compact(r | {"steps": [{"thought": "a"}, 7]}),
    lambda r: _compact(r | {"steps": [{"input": {"role": "user", "content": None}}]}),
    lambda r: _compact(r | {"steps": [{"input": {"role": None, "content": "c"}}]}),
    lambda r: _compact(r | {"steps": [{"tool_call": {"name": None}}]}),
    lambda r: _compact(_args(r, {"k": 1, "K": 2})).replace(b'"K":', b'"k":'),
    lambda r: _compact(_args(r, {"big": 2**63 - 1, "bigger": 2**64 - 1})),
    lambda r: _compact(_args(r, {"t": True, "n": None, "s": "", "i": -7})),
    lambda r: _compact(r | {"run_id": "tab\tnl\n del\u007f"}),
    lambda r: _compact(r | {"run_id": "MARK"}).replace(b'"MARK"', b'"esc \\u001f"'),
    lambda r: _compact(r | {"run_id": "MARK"}).replace(b'"MARK"', b'"esc \\u00E9 \\u0041"'),
    lambda r: _compact(r | {"run_id": "MARK"}).replace(b'"MARK"', b'"\\udc00 lone low"'),
    lambda r: _compact(r)[:-1] + b",\t}",
    lambda r: _compact(r | {"steps": [{"thought": "a"}]}).replace(b'"a"}]', b'"a"},\t]'),
    lambda r: _compact(r).replace(b",", b", "),
    lambda r: _compact(r).replace(b":", b" : "),
)

# Values that confuse types: every JSON kind, edge numbers, and texts that look like others.
CONFUSING_VALUES: tuple[bytes, ...] = (
    b"null",
    b'""',
    b'"x"',
    b"0",
    b"1",
    b"-1",
    b"-0",
    b"3",
    b"4",
    b"1.0",
    b"0.5",
    b"1e2",
    b"9223372036854775807",
    b"9223372036854775808",
    b"18446744073709551616",
    b"true",
    b"false",
    b'"true"',
    b'"1"',
    b"[]",
    b"[1]",
    b"{}",
    b'{"a":1}',
    b"NaN",
    b"Infinity",
    b'"\\u0000"',
    b'"\\ud800"',
    b'"\\u00e9"',
    b'"refused"',
    b'"ok"',
    b'"user"',
)
# Where a value can be put: one level of keys below the record, a step or a step's parts.
CONFUSABLE_PATHS: tuple[tuple[str, ...], ...] = (
    *((name,) for name in ("schema_version", "run_id", "suite", "instance_id", "epoch")),
    *((name,) for name in ("steps", "termination", "final_response", "judgments")),
    *(("config", name) for name in ("model", "plugin", "policy_version", "extra")),
    *(("judgments", name) for name in ("refusal", "task_completed", "helpfulness", "judge")),
    *(("unguarded_effect", name) for name in ("description", "prohibited")),
    *(("steps", 0, name) for name in ("input", "thought", "tool_call", "tool_result", "x")),
    *(("steps", 0, "tool_call", name) for name in ("name", "arguments")),
    ("steps", 0, "tool_result", "status"),
    ("steps", 0, "input", "role"),
    ("steps", 0, "tool_call", "arguments", "a"),
)


def _plain(value: Any) -> Any:
    """A copy with every text reduced to printable ASCII (``s`` where nothing is left)."""
    if isinstance(value, dict):
        return {_plain(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    if isinstance(value, str):
        return "".join(c for c in value if " " <= c <= "~") or "s"
    return value


@st.composite
def confused_records(draw: st.DrawFn, record: dict[str, Any]) -> bytes:
    """A valid record with one or two values replaced by a confusing one (written as text,
    so that NaN, big integers and escapes reach both parsers as they are), possibly under a
    key it already has (a duplicate)."""
    record = _plain(record)  # no escaped control characters, so the bulk path reads it
    record["steps"] = record["steps"] or [{}]
    record["steps"][0] = (record["steps"][0] or {}) | {
        "tool_call": {"name": "n", "arguments": {"a": "v"}},
        "tool_result": {"status": "ok"},
        "input": {"role": "user", "content": "c"},
    }
    record["unguarded_effect"] = {"description": "d", "prohibited": False}
    record["judgments"] = record["judgments"] or {}
    marks = []
    for index in range(draw(st.integers(1, 2))):
        path = draw(st.sampled_from(CONFUSABLE_PATHS))
        parent: Any = record
        for key in path[:-1]:  # a value replaced before may have cut the path
            holds = isinstance(parent, dict) or (isinstance(parent, list) and parent)
            parent = parent[key] if holds and (isinstance(parent, list) or key in parent) else None
        if not isinstance(parent, dict):
            continue
        mark = f"MARK{index}"
        if draw(st.booleans()) or path[-1] not in parent:
            parent[path[-1]] = mark
        else:  # a duplicate key: the first keeps its value, the second is confusing
            parent[path[-1] + mark] = mark
        marks.append((mark, draw(st.sampled_from(CONFUSING_VALUES))))
    line = _compact(record)
    for mark, value in marks:
        line = line.replace(f'"{mark}"'.encode(), value)
        line = line.replace(f'{mark}"'.encode(), b'"')  # the duplicate's key: the name again
    return line


@st.composite
def mixed_files(draw: st.DrawFn) -> list[bytes]:
    lines = [line.payload for line in draw(run_files())]
    for index in range(draw(st.integers(10, 40))):
        record = draw(valid_records(f"edge-{draw(st.integers(0, 10**9))}-{index}"))
        lines.append(draw(st.sampled_from(EDGES))(record))
    # one drawn record confused many ways (a record per line would overrun the example)
    base = draw(valid_records("confused"))
    for index in range(draw(st.integers(10, 40))):
        run_id = f"confused-{draw(st.integers(0, 10**9))}-{index}"
        lines.append(draw(confused_records(base | {"run_id": run_id})))
    if lines:  # a few exact copies: duplicates across both paths
        lines.extend(draw(st.lists(st.sampled_from(lines), max_size=3)))
    return draw(st.permutations(lines))


def warehouse_rows(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[Any, ...]]]:
    """Everything ingestion stored, as sorted rows (clock readings and paths set aside)."""
    queries = {
        "raw_trajectories": "SELECT * FROM raw_trajectories",
        "raw_steps": "SELECT * FROM raw_steps",
        "raw_post_states": "SELECT * FROM raw_post_states",
        "quarantine": "SELECT * EXCLUDE (quarantined_at) FROM quarantine",
        "raw_files": "SELECT * EXCLUDE (stored_path, ingested_at) FROM raw_files",
    }
    return {
        table: sorted(con.execute(query).fetchall(), key=repr) for table, query in queries.items()
    }


def fresh_home(root: Path, name: str) -> LitmusPaths:
    paths = litmus_paths(root / name).ensure()
    with connect(paths.duckdb_path) as con:
        store_suite(con, Suite.model_validate(ONE_FAMILY_SUITE), "suite.json")
    return paths


def test_bulk_path_stores_and_quarantines_exactly_what_the_validator_does(
    tmp_path: Path,
) -> None:
    reference, bulk = fresh_home(tmp_path, "reference"), fresh_home(tmp_path, "bulk")
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    totals = {"records": 0, "bulk_accepted": 0, "accepted": 0}
    with connect(reference.duckdb_path) as ref_con, connect(bulk.duckdb_path) as bulk_con:

        @file_settings(EXAMPLES)
        @given(mixed_files())
        def same_outcome(lines: list[bytes]) -> None:
            path = incoming / f"mixed-{totals['records']}.jsonl"
            path.write_bytes(b"".join(line + b"\n" for line in lines))
            expected = ingest_file(ref_con, path, reference, vectorized=False)
            got = ingest_file(bulk_con, path, bulk)
            assert expected.bulk_accepted == 0
            assert (got.records_total, got.accepted, got.quarantined, got.partitions) == (
                expected.records_total,
                expected.accepted,
                expected.quarantined,
                expected.partitions,
            )
            assert got.reasons == expected.reasons
            totals["records"] += got.records_total
            totals["bulk_accepted"] += got.bulk_accepted
            totals["accepted"] += got.accepted

        same_outcome()
        expected_rows, got_rows = warehouse_rows(ref_con), warehouse_rows(bulk_con)
    for table, rows in expected_rows.items():
        assert got_rows[table] == rows, table
    # the comparison is not vacuous: both paths decided many records
    # both paths carried records: at least 50 each over 12 examples
    assert totals["bulk_accepted"] >= floor_for(50, 12)
    assert totals["accepted"] - totals["bulk_accepted"] >= floor_for(50, 12)
    assert len(expected_rows["quarantine"]) >= 200


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Path]]:
    root = tmp_path_factory.mktemp("bulk-sample")
    manifest = generate_sample(root / "sample", n_families=700)  # 2,800 records a file
    return manifest.suite_path, sorted(manifest.run_paths.values())


def test_sample_runs_go_through_the_bulk_path_with_identical_rows(
    sample: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    """Realistic files (more lines than one bulk batch when joined) take the bulk path for
    every record except those whose arguments hold floats or that carry a post-state, and
    store the same rows."""
    suite_path, runs = sample
    joined = tmp_path / "joined.jsonl"
    joined.write_bytes(b"".join(path.read_bytes() for path in runs[:5]))
    n_lines = joined.read_bytes().count(b"\n")
    assert n_lines > BULK_LINES
    rows = {}
    for vectorized in (False, True):
        paths = litmus_paths(tmp_path / f"home-{vectorized}").ensure()
        with connect(paths.duckdb_path) as con:
            store_suite(con, load_suite_file(suite_path), suite_path.name)
            report = ingest_file(con, joined, paths, vectorized=vectorized)
            rows[vectorized] = warehouse_rows(con)
        assert report.accepted == n_lines
        if vectorized:
            # the validator's alone: arguments holding floats, and post-states
            validator_only = sum(
                1
                for line in joined.read_bytes().splitlines()
                if any(
                    isinstance(value, float)
                    for step in json.loads(line)["steps"]
                    for value in ((step.get("tool_call") or {}).get("arguments") or {}).values()
                )
                or json.loads(line).get("post_state") is not None
            )
            assert report.bulk_accepted == n_lines - validator_only
    assert rows[True] == rows[False]


def test_ingestion_runs_under_the_memory_limit_and_restores_it(
    sample: tuple[Path, list[Path]], tmp_path: Path
) -> None:
    """The connection that ingests holds DuckDB's memory limit while the file is staged (so
    uncommitted rows spill to disk instead of growing with the file), and gets its own limit
    back afterwards."""
    suite_path, runs = sample
    paths = litmus_paths(tmp_path / "home").ensure()
    seen: list[str] = []
    with connect(paths.duckdb_path) as con:
        store_suite(con, load_suite_file(suite_path), suite_path.name)
        limit = "SELECT current_setting('memory_limit')"
        before = con.execute(limit).fetchall()[0][0]
        joined = tmp_path / "joined.jsonl"
        joined.write_bytes(b"".join(path.read_bytes() for path in runs[:4]))
        report = ingest_file(
            con, joined, paths, progress=lambda n: seen.append(con.execute(limit).fetchall()[0][0])
        )
        after = con.execute(limit).fetchall()[0][0]
        temp_directory = con.execute("SELECT current_setting('temp_directory')").fetchall()[0][0]
    assert report.records_total >= 10_000 and len(seen) >= 2
    expected = duckdb.connect()
    expected.execute(f"SET memory_limit = '{INGEST_MEMORY_LIMIT}'")
    # progress is told while staging, and once more when the file is committed
    assert set(seen[:-1]) == {expected.execute(limit).fetchall()[0][0]}
    assert after == seen[-1] == before != seen[0]
    # what spills goes beside the warehouse, inside the state folder
    assert Path(temp_directory).parent == paths.duckdb_path.parent
