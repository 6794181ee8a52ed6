"""`litmus run` killed just after the publication's commit, half-way through moving the
committed files (while the next run rolls the publication forward) and after publishing,
then re-run, publishes what a clean run does (``crash_loop_world``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from crash_loop_world import assert_is_a_real_call_site, kill_at_each_point_then_rerun, points_of


def test_killed_while_publishing_then_rerun_publishes_what_a_clean_run_does(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    kill_at_each_point_then_rerun("publication", tmp_path, tmp_path_factory)


@pytest.mark.parametrize("point", points_of("publication"))
def test_every_crash_point_is_a_real_call_site(point: str) -> None:
    assert_is_a_real_call_site(point)
