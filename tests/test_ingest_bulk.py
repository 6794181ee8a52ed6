"""The vectorized accepted path (litmus/ingest_bulk.py) against the per-record reference.

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
from test_fuzz_ingest import dumps, file_settings, run_files, valid_records

from conftest import ONE_FAMILY_SUITE
from litmus.formats import Suite
from litmus.ingest import BULK_LINES, ingest_file
from litmus.sample import generate_sample
from litmus.settings import LitmusPaths, litmus_paths
from litmus.suite import load_suite_file, store_suite
from litmus.warehouse import INGEST_MEMORY_LIMIT, connect

pytestmark = pytest.mark.costly(rank=14)

EXAMPLES = 12


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
    lambda r: "\ufeff".encode() + _compact(r),
    lambda r: _compact(r)[:-1],
    lambda r: _compact([r]),
)


@st.composite
def mixed_files(draw: st.DrawFn) -> list[bytes]:
    lines = [line.payload for line in draw(run_files())]
    for index in range(draw(st.integers(10, 40))):
        record = draw(valid_records(f"edge-{draw(st.integers(0, 10**9))}-{index}"))
        lines.append(draw(st.sampled_from(EDGES))(record))
    if lines:  # a few exact copies: duplicates across both paths
        lines.extend(draw(st.lists(st.sampled_from(lines), max_size=3)))
    return draw(st.permutations(lines))


def warehouse_rows(con: duckdb.DuckDBPyConnection) -> dict[str, list[tuple[Any, ...]]]:
    """Everything ingestion stored, as sorted rows (clock readings and paths set aside)."""
    queries = {
        "raw_trajectories": "SELECT * FROM raw_trajectories",
        "raw_steps": "SELECT * FROM raw_steps",
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
    assert totals["bulk_accepted"] >= 50
    assert totals["accepted"] - totals["bulk_accepted"] >= 50
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
    every record except those whose arguments hold floats, and store the same rows."""
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
            floats = sum(
                1
                for line in joined.read_bytes().splitlines()
                if any(
                    isinstance(value, float)
                    for step in json.loads(line)["steps"]
                    for value in ((step.get("tool_call") or {}).get("arguments") or {}).values()
                )
            )
            assert report.bulk_accepted == n_lines - floats
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
