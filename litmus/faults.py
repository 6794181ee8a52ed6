"""Crash points: where a test kills ``litmus run`` with a real SIGKILL, at a named step; and
rendezvous points, where a test makes parallel runs meet.

``LITMUS_CRASH_AT=<point>`` (or ``<point>#<n>``: the n-th time the point is reached) makes the
process send itself SIGKILL when it gets there — the same signal the kernel's OOM killer or
``kill -9`` delivers: no handler, no ``finally``, no flush. Unset (always, outside tests), a
crash point costs one environment lookup. ``tests/test_crash_loop.py`` kills a run at every
point in :data:`CRASH_POINTS` in turn and checks that re-running publishes exactly what a run
that was never killed publishes.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections import Counter
from pathlib import Path

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
    "leaderboard.staged",  # board files and table rows staged, no drift plots, no receipt
    "receipt.staged",  # receipt written beside the staged board, not committed
    "publication.committed",  # the journal is written: the publication has happened
    "publication.file_moved",  # part of the committed files moved into place
    "pipeline.published",  # everything published, the run's summary not printed
)
_reached: Counter[str] = Counter()
# ``<point>:<parties>:<folder>``: each process reaching the point waits there until
# ``parties`` processes have reached it (each leaves its PID as a file in the folder), at most
# RENDEZVOUS_TIMEOUT_S; then it goes on. Only two steps in progress at the same moment can
# meet, so a test reads from their step events whether they ran in parallel.
RENDEZVOUS_ENV = "LITMUS_RENDEZVOUS_AT"
RENDEZVOUS_TIMEOUT_S = 120.0
RENDEZVOUS_POINTS = ("labeling.started",)  # a labeling step, before it opens the warehouse
# ``<point>:<marker file>``: the first process of any number to reach the point creates the
# marker (its PID and the point's subject in it) and sends itself SIGKILL; every later one
# finds the marker and goes on. So a test kills exactly one of many parallel run workers in
# the middle of a write (tests/test_scale_out_lake.py), and its retry passes the point.
KILL_ONCE_ENV = "LITMUS_KILL_ONCE_AT"
KILL_ONCE_POINTS = ("labeling.written",)  # a partition's labels written, not yet committed


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


def kill_once(name: str, subject: str) -> None:
    """SIGKILL this process here if ``LITMUS_KILL_ONCE_AT`` names this point and no process
    was killed at it before (see above); a no-op (one environment lookup) otherwise."""
    wanted = os.environ.get(KILL_ONCE_ENV)
    if not wanted:
        return
    point, _, marker = wanted.partition(":")
    if point != name:
        return
    try:
        fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return
    with os.fdopen(fd, "w") as out:
        out.write(json.dumps({"pid": os.getpid(), "subject": subject}))
    os.kill(os.getpid(), signal.SIGKILL)


def rendezvous(name: str) -> None:
    """Wait here for the other processes ``LITMUS_RENDEZVOUS_AT`` names (see above); a no-op
    (one environment lookup) when it is unset or names another point."""
    wanted = os.environ.get(RENDEZVOUS_ENV)
    if not wanted:
        return
    point, parties, folder = wanted.split(":", 2)
    if point != name:
        return
    meeting = Path(folder)
    (meeting / str(os.getpid())).touch()
    deadline = time.monotonic() + RENDEZVOUS_TIMEOUT_S
    while len(list(meeting.iterdir())) < int(parties) and time.monotonic() < deadline:
        time.sleep(0.2)
