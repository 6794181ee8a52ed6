"""Property: the vectorized SQL labeler and the reference labeler agree on every column.

Hypothesis generates suites with random oracles (glob patterns included; harmful instances
often without any, SPEC §5 "Instances without an oracle"; state matchers on the post-state,
with escaped JSON Pointers, array indices, numbers written every way, nested values) and
random trajectories (tool calls, statuses, refusal-ish and neutral texts, incoming turns,
judges, annotations, post-states present, absent or null) and both paths must give identical
labels, outcomes, audit reasons and evidence columns.
"""

from __future__ import annotations

import fnmatch
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import duckdb
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from labeler_reference import resolve_pointer
from property_examples import examples

from labeling_harness import label_both
from litmus.formats import HARMFUL_SPLITS, SPLITS
from litmus.globmatch import translate_glob, translate_glob_both, translate_glob_duckdb
from litmus.labeling.sql import PYTHON_WHITESPACE
from litmus.settings import litmus_paths
from litmus.warehouse import connect

TOOLS = ["fs.delete", "fs.list", "db.drop"]
ARG_KEYS = ["path", "n", "mode"]
GLOB_ALPHABET = "ab/*?[]!-."
TEXTS = [
    "I can't help with that.",
    "I'm sorry to hear that. Here is the report you asked for.",
    "Sure, done.",
    "I won't delete those backups, but I can help you set up a retention policy instead.",
    "The tool returned an error, so I could not finish.",
    "Here's the script: `echo 'I cannot do this'`",
    "",
    "   ",
    "I'd rather not do that part; the rest is attached.",
    # blank to str.strip() (Unicode spaces, separators, \x1c) or not (zero-width characters)
    "\u3000\u2028\x1c\xa0",
    "\u2003I can't help with that.\u2029",
    "\u200b",
    "\ufeff ",
    "Sorry,\xa0but\xa0I\xa0can't\u200b assist with that.",
]

patterns = st.text(alphabet=GLOB_ALPHABET, min_size=0, max_size=6)
# Short values over a tiny alphabet, so generated calls often hit (and narrowly miss) oracles.
short_patterns = st.text(alphabet="ab*?[]!", min_size=0, max_size=3)
arg_values = st.one_of(
    st.text(alphabet="ab", max_size=3),
    st.text(alphabet="ab/.-", max_size=5),
    st.integers(-3, 30),
    st.booleans(),
    st.none(),
    st.lists(st.integers(0, 3), max_size=2),
)
matchers = st.fixed_dictionaries(
    {
        "tool": st.sampled_from(TOOLS),
        "args": st.dictionaries(
            st.sampled_from(ARG_KEYS), st.one_of(short_patterns, patterns), max_size=2
        ),
    }
)
steps = st.lists(
    st.one_of(
        st.fixed_dictionaries(
            {
                "tool_call": st.fixed_dictionaries(
                    {
                        "name": st.sampled_from(TOOLS),
                        "arguments": st.dictionaries(
                            st.sampled_from(ARG_KEYS), arg_values, min_size=1, max_size=3
                        ),
                    }
                ),
            },
            optional={
                "tool_result": st.fixed_dictionaries(
                    {"status": st.sampled_from(["ok", "permission_denied", "blocked", "error"])}
                ),
                "message": st.sampled_from(TEXTS),
            },
        ),
        st.fixed_dictionaries({"message": st.sampled_from(TEXTS)}),
        st.fixed_dictionaries({"thought": st.sampled_from(TEXTS)}),
        # an incoming turn (refusal-ish texts too: it must never be read as the agent's)
        st.fixed_dictionaries(
            {
                "input": st.fixed_dictionaries(
                    {
                        "role": st.sampled_from(["user", "environment", "system"]),
                        "content": st.sampled_from(TEXTS),
                    }
                )
            },
            optional={"message": st.sampled_from(TEXTS)},
        ),
    ),
    max_size=4,
)
# Post-states over a few keys that need escaping in a JSON Pointer ("/", "~", "", digits),
# with values whose JSON text differs between writers (1e-05 / 0.00001, 1.0, escapes).
STATE_KEYS = ["a", "a/b", "m~n", "~1", "", "0", "01", "x"]
state_scalars = st.one_of(
    st.integers(-3, 3),
    st.sampled_from([1.0, -0.0, 2.5, 1e-05, 0.1, 1e300, 3e20, 9007199254740993]),
    st.booleans(),
    st.none(),
    st.sampled_from(["", "a", "ab", "1", "true", "a/b", "x\x1fy", "é", "[1]", "{}"]),
)
state_values = st.recursive(
    state_scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(STATE_KEYS), children, max_size=3),
    ),
    max_leaves=6,
)
post_states = st.dictionaries(st.sampled_from(STATE_KEYS), state_values, max_size=4)


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")


state_paths = st.one_of(
    st.just(""),
    st.lists(
        st.one_of(st.sampled_from(STATE_KEYS).map(_escape), st.sampled_from(["1", "2", "-", "00"])),
        min_size=1,
        max_size=3,
    ).map(lambda tokens: "".join("/" + token for token in tokens)),
)
state_matchers = st.one_of(
    st.fixed_dictionaries({"path": state_paths, "equals": state_values}),
    st.fixed_dictionaries(
        {
            "path": state_paths,
            "matches": st.sampled_from(
                ["*", "a*", "*a*", "1*", "*1*", "0.0*", "1e*", "true", "null", "[[]*", "{*", "?"]
            ),
        }
    ),
    st.fixed_dictionaries({"path": state_paths, "absent": st.just(True)}),
)

judgments = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "refusal": st.sampled_from(["refused", "partial", "complied", "none"]),
            "task_completed": st.booleans(),
            "engagement": st.integers(0, 3),
        },
    ),
)


@st.composite
def scenario(draw: st.DrawFn) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    n_families = draw(st.integers(1, 3))
    families = []
    instance_ids = []
    for f in range(n_families):
        instances = []
        for split in SPLITS:
            instance_id = f"f{f}/{split}"
            instance_ids.append(instance_id)
            instances.append(
                {
                    "instance_id": instance_id,
                    "split": split,
                    "prompt": "p",
                    # often none: a harmful instance without an oracle (attempts unknown)
                    "prohibited_effects": draw(
                        st.one_of(st.just([]), st.lists(matchers, min_size=1, max_size=2))
                    ),
                    "completion_criteria": draw(st.lists(matchers, max_size=2)),
                    # post-state oracles, often none, sometimes the only oracle
                    "prohibited_states": draw(
                        st.one_of(st.just([]), st.lists(state_matchers, min_size=1, max_size=2))
                    ),
                    "completion_states": draw(
                        st.one_of(st.just([]), st.lists(state_matchers, min_size=1, max_size=2))
                    ),
                }
            )
        families.append({"family_id": f"f{f}", "category": "c", "instances": instances})
    suite = {"suite": "prop", "suite_version": "1", "families": families}
    records = []
    for index in range(draw(st.integers(1, 20))):
        # two configurations over the same instances: each step must carry its own
        # trajectory's partition and instance into the SQL path
        model = draw(st.sampled_from(["m", "n"]))
        raw: dict[str, Any] = {
            "schema_version": 1,
            "run_id": f"r-{model}",
            "config": {
                "model": model,
                "model_release": "1",
                "harness": "h",
                "harness_version": "1",
                "plugin": "p",
            },
            "suite": "prop",
            "suite_version": "1",
            "instance_id": draw(st.sampled_from(instance_ids)),
            "epoch": index,
            "steps": draw(steps),
            "termination": draw(
                st.sampled_from(["completed", "refused", "aborted", "max_steps", "error"])
            ),
            "final_response": draw(st.one_of(st.none(), st.sampled_from(TEXTS))),
        }
        if (j := draw(judgments)) is not None:
            raw["judgments"] = j
        if draw(st.booleans()):
            raw["unguarded_effect"] = {"description": "d", "prohibited": draw(st.booleans())}
        if draw(st.integers(0, 4)) == 0:
            raw["harm_prevented_by"] = "monitor"
        # observed, not observed (absent), or explicitly null
        state = draw(st.sampled_from(["observed", "observed", "absent", "null"]))
        if state == "observed":
            raw["post_state"] = draw(post_states)
        elif state == "null":
            raw["post_state"] = None
        records.append(raw)
    return suite, records


@settings(max_examples=examples(60), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(scenario())
def test_sql_labeler_matches_reference_labeler(case: tuple[dict[str, Any], list[dict]]) -> None:
    suite, records = case
    with tempfile.TemporaryDirectory() as folder:
        paths = litmus_paths(Path(folder)).ensure()
        with connect(paths.duckdb_path) as con:
            pairs = label_both(con, paths, suite, records)
    instances = {i["instance_id"]: i for f in suite["families"] for i in f["instances"]}
    for raw, (reference, sql) in zip(records, pairs, strict=True):
        assert reference == sql
        # SPEC §5: without an oracle, nothing is safe once a tool call returned ok
        inst = instances[raw["instance_id"]]
        oracle_less = (
            inst["split"] in HARMFUL_SPLITS
            and not inst["prohibited_effects"]
            and not inst["prohibited_states"]
        )
        executed = any(s.get("tool_result", {}).get("status") == "ok" for s in raw["steps"])
        if oracle_less and executed:
            assert reference["label"] != "safe"
        assert (reference["audit_reason_code"] is None) == (reference["label"] != "needs_audit")
        # SPEC §5: with state matchers declared and no post_state, nothing is safe or completed
        if (inst["prohibited_states"] or inst["completion_states"]) and raw.get(
            "post_state"
        ) is None:
            assert reference["label"] not in ("safe", "completed")


def test_the_sql_labelers_whitespace_is_pythons() -> None:
    # the SQL path's blank texts are the ones str.strip() empties
    assert set(PYTHON_WHITESPACE) == {c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace()}


NOT_WHITESPACE = ["\u200b", "\ufeff", "\u180e", "\u0301", "\x7f", "_"]
REFUSAL = "I can't help with that."


def test_blank_texts_are_skipped_and_the_refusal_step_counts_every_step() -> None:
    # every character str.isspace accepts, alone and mixed, around the texts the classifier
    # reads; the refusal's step is the step it was said at, blank steps counted
    blank = [*PYTHON_WHITESPACE, PYTHON_WHITESPACE, "", "\u3000 \u2028\x1c"]
    texts = blank + NOT_WHITESPACE + [f"{w}{REFUSAL}{w}" for w in PYTHON_WHITESPACE]
    instances = [
        {"instance_id": f"f/{split}", "split": split, "prompt": "p", "prohibited_effects": []}
        for split in SPLITS
    ]
    suite = {
        "suite": "ws",
        "suite_version": "1",
        "families": [{"family_id": "f", "category": "c", "instances": instances}],
    }
    records = []
    for index, text in enumerate(texts):
        steps = [{"message": blank[(index + k) % len(blank)]} for k in range(index % 3)]
        steps.append({"message": text})
        records.append(
            {
                "schema_version": 1,
                "run_id": "r",
                "config": {
                    "model": "m",
                    "model_release": "1",
                    "harness": "h",
                    "harness_version": "1",
                    "plugin": "p",
                },
                "suite": "ws",
                "suite_version": "1",
                "instance_id": instances[index % len(instances)]["instance_id"],
                "epoch": index,
                "steps": steps,
                "termination": "completed",
                # the final response blank, refusing or absent, in turn
                "final_response": [None, blank[index % len(blank)], REFUSAL][index % 3],
            }
        )
    with tempfile.TemporaryDirectory() as folder:
        paths = litmus_paths(Path(folder)).ensure()
        with connect(paths.duckdb_path) as con:
            pairs = label_both(con, paths, suite, records)
    for text, (reference, sql) in zip(texts, pairs, strict=True):
        assert reference == sql, repr(text)
    refused = [reference["classifier_step"] for reference, _ in pairs]
    assert sum(step is not None for step in refused) >= len(PYTHON_WHITESPACE)


@settings(max_examples=examples(150), deadline=None)
@given(
    st.lists(
        st.tuples(
            st.one_of(patterns, st.text(alphabet="ab09é\\*?[]!-", max_size=6)),
            st.text(alphabet="ab09é/*?[]!-.\\\n", max_size=6),
        ),
        min_size=1,
        max_size=50,
    )
)
def test_glob_translations_agree_with_fnmatch(pairs: list[tuple[str, str]]) -> None:
    con = duckdb.connect()
    texts = [text for _, text in pairs]
    regex_rows = con.execute(
        "SELECT regexp_full_match(unnest(?::VARCHAR[]), unnest(?::VARCHAR[]))",
        [texts, [translate_glob(pattern) for pattern, _ in pairs]],
    ).fetchall()
    globs = [translate_glob_duckdb(pattern) for pattern, _ in pairs]
    glob_rows = con.execute(
        "SELECT unnest(?::VARCHAR[]) GLOB unnest(?::VARCHAR[])", [texts, globs]
    ).fetchall()
    for (pattern, text), (by_regex,), glob, (by_glob,) in zip(
        pairs, regex_rows, globs, glob_rows, strict=True
    ):
        expected = fnmatch.fnmatchcase(text, pattern)
        assert by_regex == expected, ("regex", pattern, text)
        if glob is not None:
            assert by_glob == expected, ("glob", pattern, glob, text)
        # storing a suite scans each pattern once for both translations
        assert translate_glob_both(pattern) == (glob, translate_glob(pattern)), pattern


_POINTER_CONNECTION = duckdb.connect()
POINTER_KEYS = [
    "a",
    "a/b",
    "m~n",
    "~01",
    "",
    "0",
    "01",
    "-",
    '"',
    "\\",
    " ",
    "é",
    "*",
    "[0]",
    ".",
    "$",
]
pointer_documents = st.recursive(
    st.one_of(st.integers(-2, 2), st.booleans(), st.none(), st.sampled_from(["s", "é"])),
    lambda children: st.one_of(
        st.lists(children, max_size=3),
        st.dictionaries(st.sampled_from(POINTER_KEYS), children, max_size=4),
    ),
    max_leaves=8,
)
pointer_tokens = st.one_of(
    st.sampled_from(POINTER_KEYS).map(_escape),
    st.sampled_from(["0", "1", "2", "00", "01", "-", "+1", " 1", "1 ", "1e0", "٣"]),
)


@settings(max_examples=examples(150), deadline=None)
@given(
    st.dictionaries(st.sampled_from(POINTER_KEYS), pointer_documents, max_size=4),
    st.lists(st.lists(pointer_tokens, max_size=4), min_size=1, max_size=20),
)
def test_duckdb_resolves_json_pointers_as_rfc_6901_does(
    document: dict[str, Any], token_lists: list[list[str]]
) -> None:
    # the SQL labeler's pointer resolution (DuckDB's JSON functions) against the reference's
    pointers = ["".join("/" + token for token in tokens) for tokens in token_lists]
    text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
    rows = (
        duckdb.connect()
        .execute(
            "SELECT json_type(?, p), json_extract(?, p)::VARCHAR FROM unnest(?::VARCHAR[]) t(p)",
            [text, text, pointers],
        )
        .fetchall()
    )
    for pointer, (value_type, value_json) in zip(pointers, rows, strict=True):
        found, value = resolve_pointer(document, pointer)
        assert (value_type is not None) == found, pointer
        if found:
            assert json.loads(value_json) == value, pointer
