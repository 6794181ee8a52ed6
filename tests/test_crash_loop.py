"""`litmus run` killed at every crash point, then re-run, publishes what a clean run does
(the chains and how they are compared: ``crash_loop_world``). This module holds the first
chain, ingestion and labeling, and the checks that the chains together cover every crash
point; ``test_crash_loop_scoring`` and ``test_crash_loop_publication`` hold the other two,
so that the test workers run the chains side by side."""

from __future__ import annotations

from pathlib import Path

import pytest
from crash_loop_world import (
    CHAINS,
    assert_is_a_real_call_site,
    kill_at_each_point_then_rerun,
    points_of,
)

from litmus.faults import CRASH_POINTS


def test_the_chains_cover_every_crash_point_once_in_pipeline_order() -> None:
    chained = [point for chain in CHAINS.values() for point, _ in chain]
    assert chained == list(CRASH_POINTS)
    assert len(chained) >= 10


def test_killed_during_ingestion_and_labeling_then_rerun_publishes_what_a_clean_run_does(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    kill_at_each_point_then_rerun("ingest_and_label", tmp_path, tmp_path_factory)


# after the chain in each module: a chain module never leaves its worker with only one test
# pending while the chain runs (see the scheduler in conftest)
@pytest.mark.parametrize("point", points_of("ingest_and_label"))
def test_every_crash_point_is_a_real_call_site(point: str) -> None:
    assert_is_a_real_call_site(point)
