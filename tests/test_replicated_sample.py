"""benchmarks/replicated_sample.py: the benchmark's copies of a generated sample ingest with
nothing quarantined and label exactly as the generator's own records do."""

from __future__ import annotations

import re
import sys
from collections import Counter
from pathlib import Path

from litmus.formats import Suite
from litmus.ingestion.run_files import ingest_file
from litmus.ingestion.suites import load_suite_file, store_suite
from litmus.labeling.sql import label_partition
from litmus.sample import generate_sample
from litmus.settings import LitmusPaths
from litmus.warehouse import connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
from replicated_sample import write_replicated_sample

BASE_FAMILIES = 3
REPLICA = re.compile(r"-r(\d+)(?=/|$)")


def _base_id(value: str) -> str:
    return REPLICA.sub("", value)


def _replica(value: str) -> int:
    match = REPLICA.search(value)
    return int(match.group(1)) if match else 0


def test_replicas_ingest_whole_and_label_as_the_base(
    litmus_home: LitmusPaths, tmp_path: Path
) -> None:
    base = generate_sample(tmp_path / "generator", n_families=BASE_FAMILIES)
    sample = write_replicated_sample(
        litmus_home.suites,
        litmus_home.landing,
        2 * base.n_trajectories + 1,
        base_families=BASE_FAMILIES,
        work=tmp_path / "replicas",
    )
    assert (sample.replicas, sample.n_trajectories) == (3, 3 * base.n_trajectories)
    # replica 0 is the generator's own records, byte for byte
    generated = {path.name: path.read_bytes() for path in base.run_paths.values()}
    assert sorted(generated) == sorted(path.name for path in sample.run_paths)
    for path in sample.run_paths:
        assert path.read_bytes()[: len(generated[path.name])] == generated[path.name]
    suite = load_suite_file(sample.suite_path)
    base_suite = Suite.model_validate_json(base.suite_path.read_text("utf-8"))
    assert len(suite.families) == 3 * len(base_suite.families)
    # every replica is the base's suite with its own ids, register pairs kept within it
    for replica in range(3):
        copies = [f for f in suite.families if _replica(f.family_id) == replica]
        renamed = [
            f.model_copy(
                update={
                    "family_id": _base_id(f.family_id),
                    "instances": [
                        i.model_copy(
                            update={
                                "instance_id": _base_id(i.instance_id),
                                "pair_id": i.pair_id and _base_id(i.pair_id),
                            }
                        )
                        for i in f.instances
                    ],
                }
            )
            for f in copies
        ]
        assert renamed == base_suite.families
        assert {_replica(i.pair_id) for f in copies for i in f.instances if i.pair_id} <= {replica}

    with connect(litmus_home.duckdb_path) as con:
        store_suite(con, suite, sample.suite_path.name)
        for path in sample.run_paths:
            report = ingest_file(con, path, litmus_home)
            assert (report.accepted, report.quarantined) == (report.records_total, 0)
            for partition in report.partitions:
                label_partition(con, partition)
        assert con.execute("SELECT count(*) FROM quarantine").fetchone() == (0,)
        rows = con.execute(
            "SELECT run_id, instance_id, family_id, label, outcome, refusal, attempted, "
            "completed FROM labeled_trajectories"
        ).fetchall()
    assert len(rows) == sample.n_trajectories
    by_replica: dict[int, Counter] = {r: Counter() for r in range(3)}
    for run_id, instance_id, family_id, *decision in rows:
        assert _replica(family_id) == _replica(instance_id)
        by_replica[_replica(instance_id)][(run_id, _base_id(instance_id), *decision)] += 1
    # each replica's records are decided exactly as the generator's own (replica 0)
    assert by_replica[1] == by_replica[0] == by_replica[2]
    assert sum(by_replica[0].values()) == base.n_trajectories
