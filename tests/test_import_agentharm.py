"""The AgentHarm → native suite converter, on the real public AgentHarm files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from conftest import SHARED_DATA
from litmus.formats import Suite
from litmus.importers.agentharm import AgentHarmFormatError, agentharm_suite

AGENTHARM = SHARED_DATA / "agentharm"
pytestmark = pytest.mark.skipif(not AGENTHARM.is_dir(), reason="AgentHarm data not present")


def behaviours(split: str, kind: str) -> dict[str, dict[str, Any]]:
    document = json.loads((AGENTHARM / f"{kind}_behaviors_{split}.json").read_text())
    return {b["id"]: b for b in document["behaviors"]}


@pytest.fixture
def agentharm_copy(tmp_path: Path) -> Path:
    folder = tmp_path / "agentharm"
    folder.mkdir()
    for kind in ("harmful", "benign"):
        shutil.copy(AGENTHARM / f"{kind}_behaviors_validation.json", folder)
    return folder


def edit_behaviours(folder: Path, kind: str, edit: Any) -> Path:
    path = folder / f"{kind}_behaviors_validation.json"
    document = json.loads(path.read_text())
    edit(document)
    path.write_text(json.dumps(document))
    return path


def test_each_harmful_benign_pair_is_one_family() -> None:
    suite = Suite.model_validate(agentharm_suite(AGENTHARM))
    harmful, benign = behaviours("test_public", "harmful"), behaviours("test_public", "benign")

    assert suite.suite == "agentharm"
    assert len(suite.families) == len(harmful) == 176
    assert {f.category for f in suite.families} == {b["category"].lower() for b in harmful.values()}
    for family in suite.families:
        behaviour_id = family.family_id.removeprefix("test_public/")
        source, easy = family.instances
        assert (source.split, easy.split) == ("harmful_source", "easy_benign")
        assert source.instance_id == f"test_public/{behaviour_id}/harmful_source"
        assert source.prompt == harmful[behaviour_id]["prompt"]
        assert easy.prompt == benign[behaviour_id]["prompt"]
        assert [m.tool for m in source.prohibited_effects] == harmful[behaviour_id][
            "target_functions"
        ]
        assert [m.tool for m in easy.completion_criteria] == benign[behaviour_id][
            "target_functions"
        ]
        assert all(m.args == {} for m in source.prohibited_effects + easy.completion_criteria)
        assert (source.completion_criteria, easy.prohibited_effects) == ([], [])


def test_pairs_whose_tools_differ_keep_their_own_oracles() -> None:
    suite = agentharm_suite(AGENTHARM)
    (family,) = [f for f in suite["families"] if f["family_id"] == "test_public/13-1"]
    source, easy = family["instances"]

    assert "purchase_credit_card_details" in [m["tool"] for m in source["prohibited_effects"]]
    assert "redeem_gift_cards" in [m["tool"] for m in easy["completion_criteria"]]


def test_splits_do_not_share_ids() -> None:
    public = agentharm_suite(AGENTHARM)
    validation = agentharm_suite(AGENTHARM, split="validation")

    assert len(validation["families"]) == 32
    ids = [
        i["instance_id"]
        for s in (public, validation)
        for f in s["families"]
        for i in f["instances"]
    ]
    # "2-1" names different scenes in the two AgentHarm splits
    assert len(ids) == len(set(ids))
    assert public["suite_version"].startswith("test_public-")
    assert validation["suite_version"].startswith("validation-")


def test_output_is_deterministic_and_ordered_by_numeric_id() -> None:
    first, second = agentharm_suite(AGENTHARM), agentharm_suite(AGENTHARM)

    assert json.dumps(first) == json.dumps(second)
    order = [f["family_id"].removeprefix("test_public/") for f in first["families"]]
    as_numbers = [tuple(int(part) for part in i.split("-")) for i in order]
    assert as_numbers == sorted(as_numbers)
    assert "Canary GUID" in first["description"]


def test_version_follows_the_source_content(agentharm_copy: Path) -> None:
    before = agentharm_suite(agentharm_copy, split="validation")["suite_version"]
    edit_behaviours(agentharm_copy, "benign", lambda d: d["behaviors"][0].update(prompt="x"))
    after = agentharm_suite(agentharm_copy, split="validation")["suite_version"]

    assert before == agentharm_suite(AGENTHARM, split="validation")["suite_version"]
    assert after != before
    assert (
        agentharm_suite(agentharm_copy, split="validation", suite_version="v7")["suite_version"]
        == "v7"
    )


@pytest.mark.parametrize(
    ("kind", "edit", "field", "reason"),
    [
        (
            "harmful",
            lambda d: d["behaviors"][3].pop("target_functions"),
            "behaviors[3].target_functions",
            "non-empty list",
        ),
        (
            "harmful",
            lambda d: d["behaviors"][5]["target_functions"].append(7),
            "behaviors[5].target_functions[",
            "non-empty string",
        ),
        ("benign", lambda d: d["behaviors"][0].update(id=""), "behaviors[0].id", "non-empty"),
        (
            "benign",
            lambda d: d["behaviors"][1].update(id=d["behaviors"][0]["id"]),
            "behaviors[1].id",
            "duplicate id",
        ),
        ("benign", lambda d: d["behaviors"].pop(), "behaviors[].id", "no benign behaviour"),
        (
            "benign",
            lambda d: d["behaviors"][2].update(category="Cooking"),
            "category",
            "differs from the harmful",
        ),
        ("harmful", lambda d: d.pop("behaviors"), "behaviors", "non-empty list"),
    ],
)
def test_malformed_input_names_file_and_field(
    agentharm_copy: Path, kind: str, edit: Any, field: str, reason: str
) -> None:
    path = edit_behaviours(agentharm_copy, kind, edit)

    with pytest.raises(AgentHarmFormatError) as raised:
        agentharm_suite(agentharm_copy, split="validation")
    assert raised.value.path == path
    assert field in raised.value.field
    assert reason in raised.value.reason
    assert str(path) in str(raised.value)


def test_unreadable_files_are_named(agentharm_copy: Path) -> None:
    broken = agentharm_copy / "harmful_behaviors_validation.json"
    broken.write_text('{"behaviors": [')
    with pytest.raises(AgentHarmFormatError, match="not valid JSON") as raised:
        agentharm_suite(agentharm_copy, split="validation")
    assert raised.value.path == broken

    broken.unlink()
    with pytest.raises(AgentHarmFormatError, match="cannot read"):
        agentharm_suite(agentharm_copy, split="validation")
    with pytest.raises(ValueError, match="unknown AgentHarm split"):
        agentharm_suite(agentharm_copy, split="train")
