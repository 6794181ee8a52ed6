"""Hostile input at ingestion (SPEC §10), driven by hypothesis.

Every example is one run file of many records, each either a valid record whose every string
field carries hostile text (SQL, paths, control characters, huge strings, deep-but-legal
nesting) or a record broken in one known way (broken JSON, wrong types, missing or unknown
fields, duplicate keys, nesting too deep, raw control characters, invalid UTF-8, lone
surrogates, NaN, out-of-range values, unknown instances, duplicates). Ingestion must never
crash; every valid record is stored verbatim, every broken one is quarantined with a reason,
and records in = accepted + quarantined. More than 1,000 records go through in a few dozen
transactions.
"""

from __future__ import annotations

import functools
import itertools
import json
import re
import unicodedata
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from property_examples import examples, floor_for

from conftest import ONE_FAMILY_SUITE
from litmus.formats import Suite
from litmus.ingestion.run_files import ingest_file
from litmus.ingestion.suites import store_suite
from litmus.metrics.plots import boundary_plot_png
from litmus.neutralize import (
    display_names,
    for_csv_cell,
    for_markdown,
    for_matplotlib,
    for_terminal,
    safe_file_name,
    terminal_name,
)
from litmus.settings import LitmusPaths, litmus_paths
from litmus.warehouse import connect
from litmus_dagster.cli import main

EXAMPLES = examples(30)
MIN_RECORDS = floor_for(1_000, 30)  # what 30 examples exercise at least


# Room for one example that is a whole run file: Hypothesis stops drawing an example after
# 8 * 1024 choices (its engine's BUFFER_SIZE) and throws the part-drawn example away. A file of
# 30-60 records (hostile texts, nested steps) often needs more, so at the default about 97% of
# the drawn files were discarded after being generated (about 45 draws for every example
# tested; test_ingest_bulk's 12 examples cost ~120 s of CPU, all but ~10 s in generating
# files nobody ingested). With room for eight times as many choices nearly every drawn file is
# tested: the same strategies, no file too large to be tried.
WHOLE_FILE_CHOICES = 64 * 1024


@contextmanager
def room_for_whole_files() -> Iterator[None]:
    from hypothesis.internal.conjecture import engine  # read each time an example is drawn

    previous = engine.BUFFER_SIZE
    engine.BUFFER_SIZE = max(previous, WHOLE_FILE_CHOICES)
    try:
        yield
    finally:
        engine.BUFFER_SIZE = previous


def file_settings(max_examples: int) -> Callable[[Callable[..., None]], Callable[..., None]]:
    """Hypothesis settings for tests whose example is a whole run file: reproducible, not
    shrunk (shrinking a file of dozens of records takes many minutes, and the assertions
    already name the line and its reason), and with room for a whole file in one example
    (:data:`WHOLE_FILE_CHOICES`)."""
    chosen = settings(
        max_examples=max_examples,
        deadline=None,
        derandomize=True,
        phases=[Phase.explicit, Phase.generate],
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.large_base_example,
        ],
    )

    def apply(test: Callable[..., None]) -> Callable[..., None]:
        configured = chosen(test)

        @functools.wraps(configured)
        def with_room_for_whole_files(*args: Any, **kwargs: Any) -> None:
            with room_for_whole_files():
                configured(*args, **kwargs)

        return with_room_for_whole_files

    return apply


INSTANCE_IDS = ("fam-1/hs", "fam-1/cm", "fam-1/eb", "fam-1/hb")
HOSTILE = (
    "'; DROP TABLE raw_trajectories; --",
    '" OR "1"="1',
    "1); DELETE FROM quarantine WHERE (1=1",
    "x' UNION SELECT file_hash FROM raw_files --",
    "$1",
    "?",
    ":partition_key",
    "../../../../etc/passwd",
    "..\\..\\Windows\\System32\\config",
    "/dev/null",
    "~/.ssh/id_ed25519",
    "%2e%2e%2f%2e%2e%2f",
    "file:///etc/shadow",
    "CON",
    "$(rm -rf /)",
    "`reboot`",
    "{{7*7}}${jndi:ldap://x}",
    "nul\x00byte",
    "bell\x07tab\tcr\rvt\x0b",
    "\u202eevil\u202c",
    "\ufeffbom",
    "emoji 🧨 and CJK 漢字",
    "a" * 5_000,
    # issue 14: mathtext (item 3), terminal escapes and look-alikes (item 11), formulas (item 9)
    r"$\foo$",
    "$x^{$",
    "\x1b]0;pwned\x07",
    "\x1b[2J\x1b[H",
    "\u0430urora",
    "aur\u200bora",
    '=HYPERLINK("http://x","y")',
    "@SUM(A1)",
)
text = st.one_of(
    st.sampled_from(HOSTILE),
    st.text(st.characters(exclude_categories=("Cs",)), max_size=30),
    st.text(st.characters(max_codepoint=0x1F), min_size=1, max_size=10),
)
non_empty = text.map(lambda value: value or "·")
huge = st.integers(20_000, 200_000).map(lambda n: "Ω" * n)
json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-(2**53), 2**53), text)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(non_empty, inner, max_size=3)
    ),
    max_leaves=12,
)


def nested(depth: int) -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = {"k": [value]}
    return value


# Too deep for any JSON parser to recurse into; written as text, since json.dumps cannot.
TOO_DEEP = b'{"k":[' * 50_000 + b'"bottom"' + b"]}" * 50_000


@st.composite
def valid_records(draw: st.DrawFn, run_id: str) -> dict[str, Any]:
    steps = []
    for _ in range(draw(st.integers(0, 3))):
        step: dict[str, Any] = {
            "thought": draw(st.none() | text),
            "message": draw(st.none() | text),
        }
        if draw(st.booleans()):
            step["tool_call"] = {
                "name": draw(non_empty),
                "arguments": draw(
                    st.dictionaries(non_empty, json_value | st.just(nested(60)), max_size=3)
                ),
            }
            if draw(st.booleans()):
                step["tool_result"] = {
                    "status": draw(
                        st.sampled_from(("ok", "permission_denied", "blocked", "error"))
                    ),
                    "output": draw(st.none() | text),
                }
        steps.append(step)
    return {
        "schema_version": 1,
        "run_id": run_id,
        "config": {
            key: draw(non_empty)
            for key in ("model", "model_release", "harness", "harness_version", "plugin")
        }
        | {"policy_version": draw(st.none() | text)},
        "suite": "t-suite",
        "suite_version": "1",
        "instance_id": draw(st.sampled_from(INSTANCE_IDS)),
        "epoch": draw(st.integers(0, 2**31 - 1)),
        "steps": steps,
        "termination": draw(
            st.sampled_from(("completed", "refused", "aborted", "max_steps", "error"))
        ),
        "final_response": draw(st.none() | text | huge),
        "unguarded_effect": draw(
            st.none() | st.fixed_dictionaries({"description": text, "prohibited": st.booleans()})
        ),
        "harm_prevented_by": draw(st.none() | text),
        "judgments": draw(
            st.none()
            | st.fixed_dictionaries(
                {},
                optional={
                    "refusal": st.sampled_from(("refused", "partial", "complied", "none")),
                    "task_completed": st.booleans(),
                    "helpfulness": st.integers(0, 3),
                    "engagement": st.none() | st.integers(0, 3),
                    "judge": text,
                },
            )
        ),
    }


def dumps(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


# A breakage: (what the quarantine reason must contain, how to break a valid record's line).
Breakage = tuple[str, Callable[[dict[str, Any], st.DrawFn], bytes]]


def _wrong_type(record: dict[str, Any], draw: st.DrawFn) -> bytes:
    field, wrong = draw(
        st.sampled_from(
            (
                ("run_id", 42),
                ("epoch", "0"),
                ("epoch", 1.5),
                ("epoch", True),
                ("steps", {"0": {}}),
                ("config", ["model"]),
                ("final_response", 3),
                ("schema_version", "1"),
                ("unguarded_effect", "yes"),
                ("judgments", []),
            )
        )
    )
    return dumps(record | {field: wrong})


def _truncated(record: dict[str, Any], draw: st.DrawFn) -> bytes:
    line = dumps(record).decode("utf-8")  # cut between characters, not inside one
    return line[: draw(st.integers(1, len(line) - 1))].encode("utf-8")


def _garbage(record: dict[str, Any], draw: st.DrawFn) -> bytes:
    noise = draw(st.binary(min_size=1, max_size=200)).replace(b"\n", b"#").replace(b"\r", b"#")
    return b"\x01" + noise  # never blank, never a JSON object


def _raw_control_character(record: dict[str, Any], draw: st.DrawFn) -> bytes:
    # LF and CR end a line (a CR-only file is many records), so they cannot sit in one
    char = draw(st.sampled_from([bytes([c]) for c in range(0x20) if c not in (0x0A, 0x0D)]))
    return dumps(record | {"run_id": "marker"}).replace(b'"marker"', b'"mark' + char + b'er"')


def _with_bytes(
    needle: bytes, *, in_argument: bool = False
) -> Callable[[dict[str, Any], st.DrawFn], bytes]:
    """Put raw bytes where the run_id (or, free-typed, a tool argument) would be."""

    def build(record: dict[str, Any], draw: st.DrawFn) -> bytes:
        if in_argument:
            call = {"tool_call": {"name": "fs.list", "arguments": {"path": "marker"}}}
            marked = record | {"steps": [call]}
        else:
            marked = record | {"run_id": "marker"}
        return dumps(marked).replace(b'"marker"', needle)

    return build


EPOCH_TOO_BIG = st.integers(2**31, 2**63 - 1)  # fits 64 bits, not the INTEGER column
BEYOND_INT64 = st.integers(2**63, 2**80)
NOT_QUITE_1 = st.sampled_from([True, 1.0])  # equal to 1 in Python, not the integer 1

BREAKAGES: tuple[Breakage, ...] = (
    ("malformed JSON", _truncated),
    ("", _garbage),  # malformed JSON, not an object or not UTF-8: any reason will do
    ("Input should be", _wrong_type),
    ("Field required", lambda r, d: dumps({k: v for k, v in r.items() if k != "termination"})),
    ("Field required", lambda r, d: dumps(r | {"config": {"model": "m"}})),
    ("Extra inputs are not permitted", lambda r, d: dumps(r | {d(non_empty) + "_x": 1})),
    (
        "Extra inputs are not permitted",
        lambda r, d: dumps(r | {"config": r["config"] | {"temperature": 0.2}}),
    ),
    ("duplicate key 'run_id'", lambda r, d: b'{"run_id": "first", ' + dumps(r)[1:]),
    ("nested deeper than the limit", _with_bytes(TOO_DEEP)),
    ("malformed JSON", _raw_control_character),
    ("not valid UTF-8", _with_bytes(b'"caf\xe9 \xff"')),
    ("unpaired UTF-16 surrogate", _with_bytes(b'"lone \\ud800 half"', in_argument=True)),
    ("unable to parse raw data as a unicode string", _with_bytes(b'"lone \\udc00 half"')),
    ("non-standard JSON constant", _with_bytes(b"NaN")),
    ("a record must be a JSON object", lambda r, d: dumps([r])),
    ("a record must be a JSON object", lambda r, d: d(st.sampled_from([b"null", b"7", b'"x"']))),
    ("Input should be 'completed'", lambda r, d: dumps(r | {"termination": "exploded"})),
    ("greater than or equal to 0", lambda r, d: dumps(r | {"epoch": -1})),
    ("unknown instance_id", lambda r, d: dumps(r | {"instance_id": "nope-" + d(text)})),
    ("suite/version mismatch", lambda r, d: dumps(r | {"suite_version": "0.0-" + d(text)})),
    ("unknown suite", lambda r, d: dumps(r | {"suite": "other-" + d(text)})),
    # issue 14, item 2: values that cannot be stored, named by field
    (
        "less than or equal to 2147483647",
        lambda r, d: dumps(r | {"epoch": d(st.integers(2**31, 2**63 - 1))}),
    ),
    ("outside the 64-bit range", lambda r, d: dumps(r | {"epoch": d(st.integers(2**63, 2**80))})),
    # issue 44: an argument is free-form JSON, its integers kept exactly up to a limit
    ("digits a tool call argument may hold", _with_bytes(b"9" * 5_000, in_argument=True)),
    # issue 14, item 10: as strict as documented
    ("too large (it would be infinite)", _with_bytes(b"1e400", in_argument=True)),
    (
        "Input should be the integer 1",
        lambda r, d: dumps(r | {"schema_version": d(st.sampled_from([True, 1.0]))}),
    ),
    # issue 14, item 12: a whitespace-only line is counted, never dropped
    ("blank line", lambda r, d: d(st.sampled_from([b" ", b"\t \t", b"\x0c", b" \x0b "]))),
)


@dataclass(frozen=True)
class Line:
    payload: bytes
    record: dict[str, Any] | None  # the valid record, when the line must be accepted
    reason: str | None = None  # what the quarantine reason must contain, when it must not


file_numbers = itertools.count()
TABLES = "SELECT table_name FROM information_schema.tables WHERE table_catalog <> 'temp'"


@st.composite
def run_files(draw: st.DrawFn) -> list[Line]:
    file_no = next(file_numbers)  # outside hypothesis: every example is a new file
    lines: list[Line] = []
    for index in range(draw(st.integers(30, 60))):
        record = draw(valid_records(f"{draw(non_empty)}#{file_no}.{index}"))
        if draw(st.integers(0, 2)) == 0:
            lines.append(Line(dumps(record), record))
        else:
            reason, breakage = draw(st.sampled_from(BREAKAGES))
            lines.append(Line(breakage(record, draw), None, reason))
    accepted = [line for line in lines if line.record is not None]
    if accepted:
        original = draw(st.sampled_from(accepted))
        lines.append(Line(original.payload, None, "duplicate (run_id, instance_id, epoch)"))
    return draw(st.permutations(lines))


def check_file(
    con: duckdb.DuckDBPyConnection, paths: LitmusPaths, path: Path, lines: list[Line]
) -> int:
    report = ingest_file(con, path, paths)
    assert not report.skipped
    assert report.records_total == len(lines)
    assert report.accepted + report.quarantined == report.records_total

    quarantined = {
        line_no: (field, reason)
        for line_no, field, reason in con.execute(
            "SELECT line_no, field, reason FROM quarantine WHERE source_file_hash = ?",
            [report.file_hash],
        ).fetchall()
    }
    stored = {
        row[0]: row[1:]
        for row in con.execute(
            "SELECT source_line, run_id, model, instance_id, epoch, final_response, judge_name, "
            "n_steps FROM raw_trajectories WHERE source_file_hash = ?",
            [report.file_hash],
        ).fetchall()
    }
    # of a duplicated record, whichever copy comes first in the file is the one accepted
    valid = {line.payload: line.record for line in lines if line.record is not None}
    first_seen: set[bytes] = set()
    for line_no, line in enumerate(lines, start=1):
        record = valid.get(line.payload)
        if record is not None and line.payload not in first_seen:
            first_seen.add(line.payload)
            judge = (record["judgments"] or {}).get("judge")
            assert stored.get(line_no) == (
                record["run_id"],
                record["config"]["model"],
                record["instance_id"],
                record["epoch"],
                record["final_response"],
                judge,
                len(record["steps"]),
            ), f"line {line_no} not stored verbatim"
            assert line_no not in quarantined
        else:
            assert line_no not in stored, f"line {line_no} should have been quarantined"
            field, reason = quarantined[line_no]
            assert field and reason, f"line {line_no} quarantined without field or reason"
            expected = (
                "duplicate (run_id, instance_id, epoch)" if line.reason is None else line.reason
            )
            assert expected in reason, f"line {line_no}: {reason!r} lacks {expected!r}"
    steps = con.execute(
        "SELECT count(*) FROM raw_steps WHERE trajectory_id IN "
        "(SELECT trajectory_id FROM raw_trajectories WHERE source_file_hash = ?)",
        [report.file_hash],
    ).fetchall()[0][0]
    assert steps == sum(stored_row[-1] for stored_row in stored.values())
    return report.records_total


def test_hostile_records_are_stored_verbatim_or_quarantined_never_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = litmus_paths(tmp_path / "home").ensure()
    incoming = tmp_path / "incoming"
    incoming.mkdir()
    seen = [0]
    with connect(paths.duckdb_path) as con:
        store_suite(con, Suite.model_validate(ONE_FAMILY_SUITE), "suite.json")
        tables_before = con.execute(TABLES).fetchall()

        @file_settings(EXAMPLES)
        @given(run_files())
        def ingest_hostile_file(lines: list[Line]) -> None:
            path = incoming / f"fuzz-{next(file_numbers)}.jsonl"
            path.write_bytes(b"".join(line.payload + b"\n" for line in lines))
            seen[0] += check_file(con, paths, path, lines)

        ingest_hostile_file()
        tables_after = con.execute(TABLES).fetchall()
        totals = con.execute(
            "SELECT sum(records_total), sum(records_accepted), sum(records_quarantined) "
            "FROM raw_files"
        ).fetchall()[0]
        accepted = con.execute("SELECT count(*) FROM raw_trajectories").fetchall()[0][0]
        quarantined = con.execute("SELECT count(*) FROM quarantine").fetchall()[0][0]
    print(f"{seen[0]} records: {accepted} accepted, {quarantined} quarantined")
    assert seen[0] >= MIN_RECORDS
    assert sorted(tables_after) == sorted(tables_before)  # nothing dropped or created
    assert totals == (seen[0], accepted, quarantined)
    assert accepted + quarantined == seen[0]
    # nothing from a record or a file name became a path: the raw store holds hash names only
    stored = [p.relative_to(paths.raw_store).as_posix() for p in paths.raw_store.rglob("*")]
    assert stored and all(
        re.fullmatch(r"[0-9a-f]{2}(/[0-9a-f]{64}\.jsonl)?", name) for name in stored
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "incoming"]

    # the stored hostile names reach a terminal and matplotlib neutralized (items 3 and 11)
    capsys.readouterr()
    assert main(["--home", str(paths.home), "status"]) == 0
    printed = capsys.readouterr().out
    assert not any(_invisible(char) for char in printed.replace("\n", ""))
    with connect(paths.duckdb_path) as con:
        names = [row[0] for row in con.execute(
            "SELECT DISTINCT config_key FROM raw_trajectories ORDER BY 1 LIMIT 60"
        ).fetchall()]  # fmt: skip
    points = pd.DataFrame({"name": names}).assign(
        hb_utility=0.5, cm_safety=0.5, hb_utility_ci_low=0.4, hb_utility_ci_high=0.6,
        cm_safety_ci_low=0.4, cm_safety_ci_high=0.6, naive_safe_rate=0.6,
        safety=0.5,
    )  # fmt: skip
    assert boundary_plot_png(points).startswith(b"\x89PNG")


def _invisible(char: str) -> bool:
    return unicodedata.category(char) in {"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"}


FIGURE = Figure(figsize=(2, 1))
FigureCanvasAgg(FIGURE)


@pytest.mark.filterwarnings("ignore:Glyph")  # a character the font lacks is drawn as a box
@settings(max_examples=examples(100), deadline=None, derandomize=True)
@given(text, text)
def test_hostile_text_is_neutralized_at_every_boundary(value: str, other: str) -> None:
    """One helper per boundary (litmus/neutralize.py), for any text a record can carry."""
    assert not any(_invisible(char) for char in for_terminal(value))
    name = terminal_name(value)
    assert all(" " <= char <= "~" for char in name)
    assert (terminal_name(other) == name) == (other == value)  # look-alikes print differently
    cell = for_csv_cell(value)
    assert not str(cell).startswith(("=", "+", "@", "\t", "\r"))
    assert not str(cell).startswith("-") or re.fullmatch(r"-[\d.eE+-]+", str(cell))
    file_name = safe_file_name(value, ".json")
    assert "/" not in file_name and "\\" not in file_name and not file_name.startswith(".")
    shown = display_names([value, other])  # the rule for names at every boundary (issue 44)
    assert not any(_invisible(char) for text in shown.values() for char in text)
    assert (shown[other] == shown[value]) == (other == value)
    markdown = for_markdown(value)
    assert not any(_invisible(char) for char in markdown)
    assert not set(markdown) & set("<>[]!`|") and "://" not in markdown
    assert "www." not in markdown.lower()
    label = FIGURE.text(0, 0, for_matplotlib(value))
    try:
        FIGURE.canvas.draw()  # mathtext would raise here
    finally:
        label.remove()
