"""The crash loop's baseline: one ``litmus run`` of the chains' files that is never killed
publishes a complete board with its receipt (``crash_loop_world``).

Every chain compares its recovered publication with this one. It is built here, first in the
run (rank 0) and on its own, rather than by the first chain to finish: then it is ready by
the time any chain needs it, and no worker sits waiting on its lock while another one builds
it (each chain asks for it only at its end).
"""

from __future__ import annotations

import json

import pytest
from crash_loop_world import RUN_FILES, clean_publication

from litmus.trust import publication


def test_a_run_that_is_never_killed_publishes_every_board_file_and_its_receipt(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    baseline = clean_publication(tmp_path_factory)
    assert set(baseline["files"]) == set(publication.BOARD_FILES)
    assert all(baseline["files"].values())  # no board file is empty
    receipt = baseline["receipt"]
    assert len(receipt["raw_files"]) == RUN_FILES, json.dumps(receipt)[:2000]
    assert len(receipt["configurations"]) == RUN_FILES  # one configuration per run file
    assert set(receipt["published_files"]) == set(publication.BOARD_FILES) - {"leaderboard.html"}
