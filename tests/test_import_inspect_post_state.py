"""The Inspect importer maps a post-state only where the log holds one (SPEC §4 post_state).

A real log Inspect wrote, its samples given a store and metadata the way a harness that
observes the environment would, written back with Inspect's own writer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from inspect_ai.log import read_eval_log, write_eval_log

from inspect_fixtures.litmus_fixture_task import run_fixture_evals
from litmus.importers.inspect_log import ImportMapping, ImportProblem, iter_inspect_records

ENVIRONMENT = {"files": {"/srv/backups/db.tar": None}, "mail": [{"to": "a@b.example"}]}


@pytest.fixture(scope="module")
def observed_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One log whose first sample observed the environment (store and metadata), whose
    second stored a non-object, and whose others observed nothing."""
    log_dir = tmp_path_factory.mktemp("inspect-post-state")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("INSPECT_LOG_DIR", str(log_dir))
        (source,) = run_fixture_evals(log_dir, ["blocked"], epochs=1, log_format="json").values()
    log = read_eval_log(str(source))
    assert log.samples and len(log.samples) >= 3
    first, second = log.samples[0], log.samples[1]
    first.store = {"environment": ENVIRONMENT, "Other:counter": 3}
    first.metadata = {**(first.metadata or {}), "final_state": ENVIRONMENT}
    second.store = {"environment": ["not", "an", "object"]}
    target = log_dir / "observed.json"
    write_eval_log(log, str(target))
    return target


def _items(log: Path, mapping: ImportMapping) -> list[dict[str, Any] | ImportProblem]:
    return list(iter_inspect_records(log, mapping))


def test_no_post_state_is_mapped_unless_asked(observed_log: Path) -> None:
    records = _items(observed_log, ImportMapping())
    assert all(isinstance(r, dict) and "post_state" not in r for r in records)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("store:environment", ENVIRONMENT),
        ("metadata:final_state", ENVIRONMENT),
        ("store", {"environment": ENVIRONMENT, "Other:counter": 3}),
    ],
)
def test_a_post_state_comes_from_where_the_mapping_points(
    observed_log: Path, source: str, expected: dict[str, Any]
) -> None:
    first, second, *rest = _items(observed_log, ImportMapping(post_state=source))
    assert isinstance(first, dict) and first["post_state"] == expected
    # never invented: a sample without the key (or with an empty store) observed nothing
    assert all(isinstance(r, dict) and "post_state" not in r for r in rest)
    if source == "store:environment":
        assert isinstance(second, ImportProblem) and second.field == "post_state"
        assert "list, not an object" in second.reason


def test_an_unknown_post_state_source_is_a_problem_naming_the_option(observed_log: Path) -> None:
    items = _items(observed_log, ImportMapping(post_state="events:final"))
    assert items and all(isinstance(i, ImportProblem) and i.field == "post_state" for i in items)
    assert "store, store:<key> or metadata:<key>" in items[0].reason  # type: ignore[union-attr]
