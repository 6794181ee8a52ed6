"""Watching the landing directory: files settle before they are considered, content hashes
identify them, and configurations are read from the records' ``config`` only."""

from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import dagster as dg
import pytest

import litmus.runs
from conftest import CONFIG, record, write_jsonl
from litmus.formats import RunConfig
from litmus.ingestion.run_files import file_sha256, store_raw_file
from litmus.keys import partition_key_for
from litmus.releases.landing import (
    LandingCursor,
    LandingCursorError,
    file_configurations,
    scan_landing,
)
from litmus.runs import SettlingClock, settled_files
from litmus.settings import LitmusPaths

OTHER = {**CONFIG, "model_release": "2026-12-01"}
HOSTILE = {**CONFIG, "model": "../../etc/passwd; DROP TABLE x", "plugin": "a/b"}


def land(paths: LitmusPaths, name: str, configs: list[dict]) -> Path:
    return write_jsonl(
        paths.landing / name,
        [record(f"fam/{i}", config=config, epoch=i) for i, config in enumerate(configs)],
    )


def test_a_file_is_considered_once_it_stopped_changing(litmus_home: LitmusPaths) -> None:
    path = land(litmus_home, "run.jsonl", [CONFIG])
    first = scan_landing(litmus_home, LandingCursor())
    assert first.new_files == [] and first.waiting == ["run.jsonl"]

    with path.open("a") as handle:  # still being written
        handle.write(json.dumps(record("fam/9", epoch=9)) + "\n")
    second = scan_landing(litmus_home, first.cursor)
    assert second.new_files == [] and second.waiting == ["run.jsonl"]

    third = scan_landing(litmus_home, LandingCursor.from_json(second.cursor.to_json()))
    assert [f.name for f in third.new_files] == ["run.jsonl"]
    assert third.new_files[0].sha256 == file_sha256(path)

    fourth = scan_landing(litmus_home, third.cursor)
    assert fourth.new_files == [] and fourth.waiting == [] and fourth.repeated == []


def test_a_re_copied_file_is_not_new(litmus_home: LitmusPaths) -> None:
    path = land(litmus_home, "run.jsonl", [CONFIG])
    cursor = scan_landing(litmus_home, LandingCursor()).cursor
    handled = scan_landing(litmus_home, cursor)
    assert len(handled.new_files) == 1

    (litmus_home.landing / "nested").mkdir()
    shutil.copyfile(path, litmus_home.landing / "nested" / "copy of run.jsonl")
    path.unlink()
    cursor = scan_landing(litmus_home, handled.cursor).cursor
    again = scan_landing(litmus_home, cursor)
    assert again.new_files == []
    assert again.repeated == ["nested/copy of run.jsonl"]
    assert set(again.cursor.files) == {"nested/copy of run.jsonl"}  # the deleted file is gone


def test_files_already_in_the_raw_store_are_not_new(litmus_home: LitmusPaths) -> None:
    path = land(litmus_home, "ingested.jsonl", [CONFIG])
    store_raw_file(path, litmus_home, file_sha256(path))  # what `litmus run` did before
    cursor = scan_landing(litmus_home, LandingCursor()).cursor
    scan = scan_landing(litmus_home, cursor)
    assert scan.new_files == [] and scan.already_stored == ["ingested.jsonl"]


def test_one_scan_hashes_a_bounded_amount_of_new_content(litmus_home: LitmusPaths) -> None:
    for release, name in enumerate(("a.jsonl", "b.jsonl", "c.jsonl"), start=1):
        land(litmus_home, name, [{**CONFIG, "model_release": f"2026-0{release}-01"}] * 3)
    size = (litmus_home.landing / "a.jsonl").stat().st_size
    cursor = scan_landing(litmus_home, LandingCursor()).cursor
    scan = scan_landing(litmus_home, cursor, byte_budget=size * 2)
    assert [f.name for f in scan.new_files] == ["a.jsonl", "b.jsonl"]
    assert scan.deferred == ["c.jsonl"]
    rest = scan_landing(litmus_home, scan.cursor, byte_budget=1)  # the first always fits
    assert [f.name for f in rest.new_files] == ["c.jsonl"]


def test_hidden_and_unknown_files_are_ignored(litmus_home: LitmusPaths) -> None:
    land(litmus_home, ".partial.jsonl", [CONFIG])
    (litmus_home.landing / "notes.txt").write_text("not a run file")
    cursor = scan_landing(litmus_home, LandingCursor()).cursor
    assert cursor.files == {}


def test_configurations_come_from_the_config_objects_only(litmus_home: LitmusPaths) -> None:
    path = land(litmus_home, "mixed.jsonl", [CONFIG, OTHER, CONFIG, HOSTILE])
    with path.open("a") as handle:
        handle.write("{not json\n")
        handle.write(json.dumps({"config": {"model": "x"}}) + "\n")  # incomplete config
        handle.write("[1, 2]\n")
        handle.write("\n")
    found = file_configurations(path, litmus_home)
    expected = {partition_key_for(RunConfig.model_validate(c)): c for c in (CONFIG, OTHER, HOSTILE)}
    assert set(found.configurations) == set(expected)
    assert found.records_read == 7 and found.records_without_config == 3
    for key in found.configurations:
        assert "/" not in key and ";" not in key and " " not in key
    assert found.configurations[partition_key_for(RunConfig.model_validate(HOSTILE))] == (
        "../../etc/passwd; DROP TABLE x@2026-11-01/react@2.3/a/b"
    )


def test_a_broken_cursor_is_a_precise_error() -> None:
    with pytest.raises(LandingCursorError, match="unsupported cursor version 7"):
        LandingCursor.from_json('{"version": 7}')
    with pytest.raises(LandingCursorError, match="unreadable landing cursor"):
        LandingCursor.from_json('{"version": 1, "files": {"a": [1]}, "seen": []}')
    assert LandingCursor.from_json(None) == LandingCursor()


def test_modification_time_alone_restarts_settling(litmus_home: LitmusPaths) -> None:
    path = land(litmus_home, "run.jsonl", [CONFIG])
    cursor = scan_landing(litmus_home, LandingCursor()).cursor
    status = path.stat()
    os.utime(path, ns=(status.st_atime_ns, status.st_mtime_ns + 1_000_000_000))
    scan = scan_landing(litmus_home, cursor)
    assert scan.new_files == [] and scan.waiting == ["run.jsonl"]


class _CopyInProgress:
    """A settling clock whose every wait is the next write of a slow copy into ``path``: the
    file changes between any two looks for as long as records remain, however fast or slow
    the machine is. Time advances only by the waits."""

    def __init__(self, path: Path, records: int, run_id: str = "run-1") -> None:
        self.path, self.records, self.run_id = path, records, run_id
        self.written = 0
        self.now = 0.0
        self.write(1)  # the copy has begun

    @property
    def remaining(self) -> int:
        return self.records - self.written

    def write(self, count: int) -> None:
        with self.path.open("a") as handle:
            for _ in range(min(count, self.remaining)):
                i = self.written
                line = record(f"fam/{i % 20}", epoch=100 + i, run_id=self.run_id)
                handle.write(json.dumps(line) + "\n")
                self.written += 1

    def finish(self) -> None:
        self.write(self.remaining)

    def clock(self) -> SettlingClock:
        def sleep(seconds: float) -> None:
            self.now += seconds
            self.write(1)

        # "now", for file ages, is the copy's latest write: a copy in progress is never old
        return SettlingClock(
            monotonic=lambda: self.now,
            wall_ns=lambda: self.path.stat().st_mtime_ns,
            sleep=sleep,
        )


def test_a_file_still_being_written_is_not_settled(litmus_home: LitmusPaths) -> None:
    old = land(litmus_home, "old.jsonl", [CONFIG])
    an_hour_ago = time.time() - 3600
    os.utime(old, (an_hour_ago, an_hour_ago))
    finished = land(litmus_home, "finished.jsonl", [CONFIG])  # fresh, but complete
    writing = litmus_home.landing / "writing.jsonl"
    copy = _CopyInProgress(writing, records=20)
    gone = land(litmus_home, "gone.jsonl", [CONFIG])
    gone.unlink()

    settled, still_written = settled_files(
        [old, finished, writing, gone],
        quiet_seconds=0.5,
        max_wait_seconds=1.5,
        clock=copy.clock(),
    )
    assert copy.remaining > 0  # still copying when the wait ended
    assert settled == [finished, old]
    assert still_written == [gone, writing]
    copy.finish()
    assert settled_files([writing], quiet_seconds=0.5, clock=copy.clock()) == ([writing], [])
    assert copy.written == 20 and len(writing.read_text().splitlines()) == 20


def test_a_run_leaves_a_file_being_written_for_the_next_run(
    litmus_home: LitmusPaths, monkeypatch: pytest.MonkeyPatch
) -> None:
    from conftest import family, instance, suite_doc
    from litmus_dagster.ingestion.assets import raw_run_files, suite_catalog
    from litmus_dagster.resources import LitmusWarehouse

    splits = ("harmful_source", "covert_malicious", "easy_benign", "hard_benign")
    families = [
        family(f"fam{f}", [instance(f"fam/{4 * f + i}", split) for i, split in enumerate(splits)])
        for f in range(5)
    ]
    (litmus_home.suites / "suite.json").write_text(json.dumps(suite_doc(families)))
    # one copy is complete (and fresh), the other goes on through the whole of the run's wait
    short = _CopyInProgress(litmus_home.landing / "short.jsonl", records=10, run_id="short")
    short.finish()
    long = _CopyInProgress(litmus_home.landing / "long.jsonl", records=75, run_id="long")
    monkeypatch.setattr(litmus.runs, "settling_clock", long.clock())

    def materialize() -> dict:
        result = dg.materialize(
            [suite_catalog, raw_run_files],
            resources={"warehouse": LitmusWarehouse(home=str(litmus_home.home))},
            instance=dg.DagsterInstance.ephemeral(),
        )
        (event,) = [
            e
            for e in result.get_asset_materialization_events()
            if e.asset_key == dg.AssetKey("raw_run_files")
        ]
        return {k: v.value for k, v in event.materialization.metadata.items()}

    during = materialize()
    assert long.remaining > 0  # still copying when the run gave up waiting for it
    assert during["files_still_being_written"] == ["long.jsonl"]
    assert (during["files_ingested"], during["records_in"], during["records_accepted"]) == (
        1,
        10,
        10,
    )
    long.finish()
    after = materialize()
    assert after["files_still_being_written"] == []
    assert (after["records_in"], after["records_accepted"]) == (75, 75)
