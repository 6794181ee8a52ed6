"""Benchmark: the vectorized SQL labeler against the reference labeler.

Generates N trajectories (default 1,000,000) over the bundled sample suite straight into the
warehouse tables (ingestion is not what is measured here), labels the whole partition with
the SQL path, labels a random subset with the reference function, checks both agree on that
subset, and reports trajectories/second for each, their ratio, and peak memory (max RSS).

The target ratio compares like with like: the decision boundary in SQL, written to an
in-memory table, against the reference function returning in-memory decisions, both given the
same refusal-classifier verdicts. The classifier is the same Python code on both paths, so it
is timed and reported on its own (and end to end), as is the write to the persistent table.

    .venv/bin/python benchmarks/bench_labeler.py [--trajectories 1000000] [--reference 20000]
        [--unique-responses]
"""

from __future__ import annotations

import argparse
import json
import random
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

from litmus.formats import RunRecord, Suite
from litmus.ingestion.suites import store_suite
from litmus.labeling.refusal import RefusalVerdict, default_classifier
from litmus.labeling.sql import compute_refusal_signals, label_partition, run_label_sql
from litmus.sample import generate_sample
from litmus.settings import litmus_paths
from litmus.warehouse import connect

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
from labeler_reference import label_trajectory

PARTITION = "bench@1+react@1+bare"
# Each decision-boundary timing (SQL and reference alike) is the median of this many runs.
REPEATS = 3
# Issue #2: the SQL decision boundary at least 20x the reference function.
TARGET_SPEED_UP = 20
TEXTS = [
    "I can't help with that.",
    "Done. The files are cleaned up.",
    "I'm sorry to hear that. Here is what I did: I rotated the logs.",
    "I won't wipe those backups, but I can help you set up a retention policy instead.",
    "The tool returned an error, so I could not finish.",
    "Here is the summary you asked for.",
]

GENERATE_SQL = """
CREATE OR REPLACE TEMP MACRO rnd(a, b, m) AS (hash(a, b) % m)::BIGINT;
CREATE OR REPLACE TEMP MACRO rnd3(a, b, c, m) AS (hash(a, b, c) % m)::BIGINT;
CREATE OR REPLACE TEMP TABLE bench_instances AS
SELECT row_number() OVER (ORDER BY instance_id) - 1 AS idx, instance_id, suite, suite_version
FROM suite_instances;

CREATE OR REPLACE TEMP TABLE bench_calls AS
SELECT instance_id, tool,
       row_number() OVER (PARTITION BY instance_id ORDER BY kind, matcher_idx) - 1 AS k,
       arg_patterns[1].arg_key AS arg_key, arg_patterns[1].pattern AS pattern
FROM oracle_matchers;

INSERT INTO raw_trajectories
SELECT md5(i::VARCHAR)[:24], '{partition}', 'bench@1/react@1/bare', 'bench/react/bare',
       'bench', '1', 'react', '1', 'bare', NULL, 'bench-run', b.suite, b.suite_version,
       b.instance_id, 0,
       ['completed', 'refused', 'aborted', 'max_steps', 'error'][1 + rnd(i, 1, 5)],
       CASE WHEN rnd(i, 2, 10) < {unique_tenths}
                THEN {texts}[1 + rnd(i, 3, {n_texts})] || ' (ref ' || i || ')'
            WHEN rnd(i, 2, 10) < 9 THEN {texts}[1 + rnd(i, 3, {n_texts})] END,
       (rnd(i, 4, 4))::INTEGER,
       rnd(i, 5, 7) = 0, true, CASE WHEN rnd(i, 5, 7) = 0 THEN 'would do harm' END,
       CASE WHEN rnd(i, 6, 13) = 0 THEN 'monitor' END,
       CASE WHEN rnd(i, 7, 3) = 0 THEN NULL
            ELSE ['refused', 'partial', 'complied', 'none'][1 + rnd(i, 8, 4)] END,
       CASE WHEN rnd(i, 9, 2) = 0 THEN rnd(i, 10, 2) = 0 END,
       NULL, NULL, CASE WHEN rnd(i, 11, 2) = 0 THEN (rnd(i, 12, 4))::INTEGER END,
       'bench-judge', 'bench', i, md5(i::VARCHAR)
FROM range({n}) r(i)
JOIN bench_instances b ON b.idx = i % (SELECT count(*) FROM bench_instances);

INSERT INTO raw_steps
SELECT t.trajectory_id, s.step_idx, NULL,
       CASE WHEN rnd3(t.source_line, s.step_idx, 1, 4) = 0
            THEN {texts}[1 + rnd3(t.source_line, s.step_idx, 2, {n_texts})] END,
       c.tool, '{{}}',
       CASE WHEN c.arg_key IS NULL THEN MAP {{}}
            ELSE map([c.arg_key], [CASE WHEN rnd3(t.source_line, s.step_idx, 5, 3) = 0
                                        THEN 'elsewhere/x'
                                        ELSE replace(replace(c.pattern, '*', 'abc'), '?', 'z')
                                   END]) END,
       ['ok', 'ok', 'permission_denied', 'blocked', 'error'][
           1 + rnd3(t.source_line, s.step_idx, 3, 5)],
       'output', t.partition_key, t.suite, t.suite_version, t.instance_id,
       NULL, NULL  -- no incoming turns (input_role, input_content)
FROM raw_trajectories t, range(t.n_steps) s(step_idx)
LEFT JOIN bench_calls c
  ON c.instance_id = t.instance_id AND c.k = rnd3(t.source_line, s.step_idx, 4, 3);
"""


def record_from_warehouse(con, trajectory_id: str) -> RunRecord:
    t = con.execute(
        "SELECT run_id, instance_id, epoch, suite, suite_version, termination, final_response, "
        "has_unguarded_effect, harm_prevented_by, judge_refusal, judge_task_completed, "
        "judge_engagement FROM raw_trajectories WHERE trajectory_id = ?",
        [trajectory_id],
    ).fetchone()
    steps = []
    for message, tool, status, keys, values in con.execute(
        "SELECT message, tool_name, status, map_keys(match_args), map_values(match_args) "
        "FROM raw_steps WHERE trajectory_id = ? ORDER BY step_idx",
        [trajectory_id],
    ).fetchall():
        step: dict = {"message": message}
        if tool is not None:
            args = dict(zip(keys or [], values or [], strict=True))
            step["tool_call"] = {"name": tool, "arguments": args}
            step["tool_result"] = {"status": status, "output": "output"}
        steps.append(step)
    judgments = {
        k: v
        for k, v in (("refusal", t[9]), ("task_completed", t[10]), ("engagement", t[11]))
        if v is not None
    }
    raw = {
        "schema_version": 1,
        "run_id": t[0],
        "config": {
            "model": "bench",
            "model_release": "1",
            "harness": "react",
            "harness_version": "1",
            "plugin": "bare",
        },
        "suite": t[3],
        "suite_version": t[4],
        "instance_id": t[1],
        "epoch": t[2],
        "steps": steps,
        "termination": t[5],
        "final_response": t[6],
        "unguarded_effect": {"description": "would do harm", "prohibited": True} if t[7] else None,
        "harm_prevented_by": t[8],
        "judgments": judgments or None,
    }
    return RunRecord.model_validate(raw)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--trajectories", type=int, default=1_000_000)
    parser.add_argument("--reference", type=int, default=20_000)
    parser.add_argument(
        "--unique-responses",
        action="store_true",
        help="give every final response its own text, as in real logs (by default 3 in 10 are "
        "unique and the rest repeat, which the SQL path's per-text-set cache exploits)",
    )
    args = parser.parse_args()

    with tempfile.TemporaryDirectory() as folder:
        paths = litmus_paths(Path(folder)).ensure()
        manifest = generate_sample(paths.home / "sample")
        suite = Suite.model_validate(json.loads(manifest.suite_path.read_text()))
        instances = {i.instance_id: i for f in suite.families for i in f.instances}
        with connect(paths.duckdb_path) as con:
            store_suite(con, suite, "suite.json")
            started = time.perf_counter()
            sql = GENERATE_SQL.format(
                partition=PARTITION,
                n=args.trajectories,
                texts="[" + ", ".join("'" + t.replace("'", "''") + "'" for t in TEXTS) + "]",
                n_texts=len(TEXTS),
                unique_tenths=9 if args.unique_responses else 3,
            )
            con.execute(sql)
            n = con.execute("SELECT count(*) FROM raw_trajectories").fetchone()[0]
            n_steps = con.execute("SELECT count(*) FROM raw_steps").fetchone()[0]
            print(
                f"generated {n:,} trajectories / {n_steps:,} steps in "
                f"{time.perf_counter() - started:.1f}s",
                file=sys.stderr,
            )

            started = time.perf_counter()
            report = label_partition(con, PARTITION)
            end_to_end_seconds = time.perf_counter() - started
            # The same again, timed in its two parts: the classifier over the agents' texts
            # (per distinct text, Python) and the decision boundary (SQL).
            started = time.perf_counter()
            compute_refusal_signals(con, PARTITION, default_classifier())
            classifier_seconds = time.perf_counter() - started
            # Decisions computed into a temp table (in memory, like the reference's results)...
            in_memory_times = []
            for _ in range(REPEATS):
                # a fresh table each time: deleted rows of a temp table keep their memory
                con.execute(
                    "CREATE OR REPLACE TEMP TABLE benchmark_labels AS "
                    "SELECT * FROM trajectory_labels LIMIT 0"
                )
                started = time.perf_counter()
                run_label_sql(con, PARTITION, into="benchmark_labels")
                in_memory_times.append(time.perf_counter() - started)
            sql_seconds = statistics.median(in_memory_times)
            con.execute("DROP TABLE benchmark_labels")
            # ...and persisted into the warehouse, as production does.
            persisted_times = []
            for _ in range(REPEATS):
                con.execute("DELETE FROM trajectory_labels")
                con.execute("CHECKPOINT")
                started = time.perf_counter()
                run_label_sql(con, PARTITION)
                persisted_times.append(time.perf_counter() - started)
            persisted_seconds = statistics.median(persisted_times)
            print(
                f"SQL path: {report.trajectories:,} labeled in {end_to_end_seconds:.1f}s "
                f"(classifier {classifier_seconds:.1f}s, decision SQL {sql_seconds:.2f}s in "
                f"memory, {persisted_seconds:.2f}s persisted)",
                file=sys.stderr,
            )

            ids = [
                r[0]
                for r in con.execute(
                    "SELECT trajectory_id FROM raw_trajectories USING SAMPLE reservoir(?) "
                    "REPEATABLE (7)".replace("?", str(args.reference))
                ).fetchall()
            ]
            records = [record_from_warehouse(con, tid) for tid in ids]
            signals = {
                tid: (
                    RefusalVerdict(refusal, None, confidence, engagement),
                    step,
                )
                for tid, refusal, step, confidence, engagement in con.execute(
                    "SELECT trajectory_id, classifier_refusal, classifier_step, "
                    "classifier_confidence, classifier_engagement FROM refusal_signals"
                ).fetchall()
            }
            sql_labels = dict(
                con.execute("SELECT trajectory_id, outcome FROM trajectory_labels").fetchall()
            )
        classifier = default_classifier()
        started = time.perf_counter()
        reference = [label_trajectory(r, instances[r.instance_id], classifier) for r in records]
        reference_seconds = time.perf_counter() - started
        reference_times = []
        for _ in range(REPEATS):
            started = time.perf_counter()
            reference_given_verdicts = [
                label_trajectory(r, instances[r.instance_id], classified=signals[tid])
                for tid, r in zip(ids, records, strict=True)
            ]
            reference_times.append(time.perf_counter() - started)
        reference_decision_seconds = statistics.median(reference_times)
        assert [r.outcome for r in reference] == [r.outcome for r in reference_given_verdicts]
        disagreements = sum(
            1 for tid, label in zip(ids, reference, strict=True) if sql_labels[tid] != label.outcome
        )
    n = report.trajectories
    end_to_end_rate = n / end_to_end_seconds
    sql_rate = n / sql_seconds
    reference_rate = len(records) / reference_seconds
    reference_decision_rate = len(records) / reference_decision_seconds
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"trajectories labeled (SQL path):       {n:,}")
    print(f"  end to end incl. refusal classifier: {end_to_end_rate:,.0f} trajectories/s")
    print(f"  decision boundary SQL alone:         {sql_rate:,.0f} trajectories/s")
    print(f"  ... and persisted to the warehouse:  {n / persisted_seconds:,.0f} trajectories/s")
    print(f"reference function ({len(records):,} sampled):")
    print(f"  incl. refusal classifier:            {reference_rate:,.0f} trajectories/s")
    print(f"  given the classifier's verdicts:     {reference_decision_rate:,.0f} trajectories/s")
    print(f"speed-up end to end (SQL path / reference):  {end_to_end_rate / reference_rate:.1f}x")
    speed_up = sql_rate / reference_decision_rate
    verdict = "met" if speed_up >= TARGET_SPEED_UP else "NOT met"
    print(
        f"speed-up decision boundary (SQL / reference): {speed_up:.1f}x in memory, "
        f"{n / persisted_seconds / reference_decision_rate:.1f}x persisted "
        f"(target >= {TARGET_SPEED_UP}x in memory: {verdict})"
    )
    print(f"outcome disagreements on the sample: {disagreements}")
    print(f"peak memory (max RSS, whole process): {peak_mb:,.0f} MB")
    print(f"outcomes: {report.outcomes}")
    return 1 if disagreements else 0


if __name__ == "__main__":
    random.seed(0)
    sys.exit(main())
