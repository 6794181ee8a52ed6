"""Crash points: where a test kills ``litmus run`` with a real SIGKILL, at a named step.

``LITMUS_CRASH_AT=<point>`` (or ``<point>#<n>``: the n-th time the point is reached) makes the
process send itself SIGKILL when it gets there — the same signal the kernel's OOM killer or
``kill -9`` delivers: no handler, no ``finally``, no flush. Unset (always, outside tests), a
crash point costs one environment lookup. ``tests/test_crash_loop.py`` kills a run at every
point in :data:`CRASH_POINTS` in turn and checks that re-running publishes exactly what a run
that was never killed publishes.
"""

from __future__ import annotations

import os
import signal
from collections import Counter

CRASH_ENV = "LITMUS_CRASH_AT"
# the signal sent at the crash point: KILL (default) or INT (Ctrl-C: the process must stop
# cleanly by itself, exit 130)
CRASH_SIGNAL_ENV = "LITMUS_CRASH_SIGNAL"
CRASH_POINTS = (
    "ingest.file_committed",  # a run file's rows are committed, its partitions not registered
    "ingest.files_done",  # every file ingested and registered, the asset not yet recorded
    "pipeline.ingested",  # ingestion recorded, nothing labeled
    "pipeline.configuration_scored",  # after one configuration's labeling/gates run
    "pipeline.scored",  # every configuration scored, nothing published
    "metrics.cis_computed",  # dbt built and CIs stored, no leaderboard yet
    "leaderboard.staged",  # board files staged and the table replaced, no receipt
    "receipt.staged",  # receipt written beside the staged board, not committed
    "publication.committed",  # the journal is written: the publication has happened
    "publication.file_moved",  # part of the committed files moved into place
    "pipeline.published",  # everything published, the run's summary not printed
)
_reached: Counter[str] = Counter()


def crash_point(name: str) -> None:
    """SIGKILL this process here if ``LITMUS_CRASH_AT`` names this point (see module doc);
    SIGINT instead with ``LITMUS_CRASH_SIGNAL=INT``."""
    wanted = os.environ.get(CRASH_ENV)
    if not wanted:
        return
    _reached[name] += 1
    point, _, nth = wanted.partition("#")
    if point == name and _reached[name] == int(nth or 1):
        os.kill(os.getpid(), signal.SIGINT if _interrupting() else signal.SIGKILL)


def _interrupting() -> bool:
    return os.environ.get(CRASH_SIGNAL_ENV, "KILL").upper() == "INT"
