"""Ctrl-C in every phase of `litmus run`: exit 130 in one line, no traceback; afterwards
`status`, the published board and `verify` agree, and a re-run publishes what a clean run
does (``crash_loop_world.interrupt_at_each_point_then_rerun``)."""

from __future__ import annotations

from pathlib import Path

import pytest
from crash_loop_world import interrupt_at_each_point_then_rerun


def test_interrupted_in_every_phase_then_rerun_agrees_and_publishes_what_a_clean_run_does(
    tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    interrupt_at_each_point_then_rerun(tmp_path, tmp_path_factory)
