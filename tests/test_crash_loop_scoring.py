"""`litmus run` killed once every configuration is scored, after the intervals, with the
board staged and with the receipt staged, then re-run, publishes what a clean run does
(``crash_loop_world``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from crash_loop_world import assert_is_a_real_call_site, kill_at_each_point_then_rerun, points_of


def test_killed_between_scoring_and_the_staged_receipt_then_rerun_publishes_what_a_clean_run_does(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    kill_at_each_point_then_rerun("score_to_receipt", tmp_path, tmp_path_factory)


@pytest.mark.parametrize("point", points_of("score_to_receipt"))
def test_every_crash_point_is_a_real_call_site(point: str) -> None:
    assert_is_a_real_call_site(point)
