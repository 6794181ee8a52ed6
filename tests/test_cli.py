"""The `litmus` command line: one clear line and a non-zero exit on error; conversions work."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import SHARED_DATA, litmus
from litmus.ingestion.suites import load_suite_file, sibling_problems


def test_bad_suite_file_is_one_line_naming_file_and_field(tmp_path: Path) -> None:
    suite = tmp_path / "broken-suite.json"
    suite.write_text(
        json.dumps(
            {
                "suite": "s",
                "suite_version": "1",
                "families": [
                    {
                        "family_id": "f",
                        "category": "c",
                        "instances": [
                            {
                                "instance_id": "f/x",
                                "split": "harmful_source",
                                "prompt": "p",
                                "request_harm_class": "benign",
                            }
                        ],
                    }
                ],
            }
        )
    )
    result = litmus(tmp_path / "home", "suite-add", str(suite))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("litmus: error: ")
    assert "broken-suite.json" in lines[0] and "families[0].instances[0]" in lines[0]
    assert "disagrees with split" in lines[0]


def test_missing_file_to_land_is_an_error(tmp_path: Path) -> None:
    result = litmus(tmp_path / "home", "land", str(tmp_path / "nope.jsonl"))
    assert result.returncode == 1
    assert result.stderr.strip() == f"litmus: error: {tmp_path / 'nope.jsonl'}: no such file"


@pytest.mark.skipif(not (SHARED_DATA / "agentharm").is_dir(), reason="needs ../shared/data")
def test_agentharm_converts_to_a_partial_sibling_suite(tmp_path: Path) -> None:
    result = litmus(tmp_path / "home", "convert-agentharm", str(SHARED_DATA / "agentharm"))
    assert result.returncode == 0, result.stderr
    suite = load_suite_file(tmp_path / "home" / "suites" / "agentharm-test_public.json")
    assert suite.sibling_policy == "partial"
    assert len(suite.families) == 176
    missing = {split for problem in sibling_problems(suite) for split in problem.missing}
    assert missing == {"hard_benign", "covert_malicious"}


def test_status_on_an_empty_home_reports_nothing_ingested(tmp_path: Path) -> None:
    result = litmus(tmp_path / "home", "status")
    assert result.returncode == 0, result.stderr
    assert "no warehouse at" in result.stdout and "nothing has been ingested" in result.stdout
    assert not (tmp_path / "home").exists()  # looking creates nothing
