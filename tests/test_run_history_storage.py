"""The run history's storage (``litmus_dagster.adapters.dagster_storage``) under stop signals.

A stop signal raises ``KeyboardInterrupt`` wherever the main thread is. Landing inside the
storage's connection handling it used to leave a pooled connection checked out with its
transaction open: the next write of the same process (Dagster recording that the run stopped)
then waited on SQLite's lock, 30 s per event, and an interrupted ``litmus run`` did not end.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

# Writes through both storages while another thread sends the process SIGUSR1, handled as the
# CLI handles a stop (``stop.interrupt``), every few milliseconds; after each interrupt it
# looks whether a connection was left checked out or the event log's lock left taken.
SIGNAL_STORM = """
import json, os, random, signal, sys, threading, time
import sqlalchemy as db
from litmus_dagster import stop
from litmus_dagster.adapters.dagster_storage import LitmusSqliteStorage

base = sys.argv[1]
storage = LitmusSqliteStorage(base)
events, runs = storage.event_log_storage, storage.run_storage
signal.signal(signal.SIGUSR1, lambda signum, frame: stop.interrupt())
me = os.getpid()
fire, fired = threading.Event(), threading.Event()
random.seed(7)


def shooter():
    while True:
        fire.wait()
        fire.clear()
        time.sleep(random.random() * 0.003)
        os.kill(me, signal.SIGUSR1)
        fired.set()


threading.Thread(target=shooter, daemon=True).start()
report = {"interrupts": 0, "left_checked_out": 0, "lock_left_taken": 0}
for attempt in range(int(sys.argv[2])):
    fired.clear()
    fire.set()
    try:
        try:
            while not fired.is_set():
                with events.index_connection() as conn:
                    conn.execute(db.text("CREATE TABLE IF NOT EXISTS probe (x int)"))
                    conn.execute(db.text("INSERT INTO probe VALUES (1)"))
                with runs.connect() as conn:
                    conn.execute(db.text("CREATE TABLE IF NOT EXISTS probe (x int)"))
                    conn.execute(db.text("INSERT INTO probe VALUES (1)"))
            time.sleep(0.01)
        except KeyboardInterrupt:
            report["interrupts"] += 1
            fired.wait()
            time.sleep(0.01)
    except KeyboardInterrupt:
        report["interrupts"] += 1
    engines = [*events._engines.values(), runs._pooled]
    report["left_checked_out"] += sum(engine.pool.checkedout() for engine in engines)
    if events._db_lock.acquire(timeout=0.2):
        events._db_lock.release()
    else:
        report["lock_left_taken"] += 1
    if report["left_checked_out"] or report["lock_left_taken"]:
        break
print(json.dumps(report), flush=True)
os._exit(0)
"""


def test_stop_signals_never_leave_a_connection_or_lock_of_the_run_history_taken(
    tmp_path: Path,
) -> None:
    attempts = 200
    result = subprocess.run(
        [sys.executable, "-c", SIGNAL_STORM, str(tmp_path), str(attempts)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout.splitlines()[-1])
    assert report["interrupts"] == attempts  # every signal landed in the storage's writes
    assert report["left_checked_out"] == 0
    assert report["lock_left_taken"] == 0
