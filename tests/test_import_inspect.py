"""The Inspect AI importer, on logs that Inspect itself writes (offline, scripted mock agents)."""

from __future__ import annotations

import fnmatch
import json
import shutil
import struct
import zipfile
from collections import Counter
from pathlib import Path
from typing import Any

import inspect_ai
import pytest
from inspect_ai.log import read_eval_log, read_eval_log_sample, read_eval_log_sample_summaries

from inspect_fixtures.litmus_fixture_task import (
    ATTACHMENT_DATA_URI,
    EDGE_PERSONAS,
    EXFILTRATION_ADDRESS,
    FIXTURE_SUITE,
    FIXTURE_SUITE_VERSION,
    FIXTURE_TASK,
    PERSONAS,
    REFUSAL_TEXT,
    SAMPLE_IDS,
    run_fixture_evals,
    write_fixture_suite,
)
from inspect_reference import reference_items
from litmus.formats import RunRecord, Suite
from litmus.importers.inspect_log import (
    ImportMapping,
    ImportProblem,
    InspectLogError,
    import_inspect_log,
    iter_inspect_records,
    uses_fast_reader,
)

JUDGED = ImportMapping(refusal_scorer="refusal_judge", task_completed_scorer="includes")
EPOCHS = 2


@pytest.fixture(scope="module")
def inspect_logs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Real Inspect logs: three personas × 2 epochs (.eval), edge personas, one .json log."""
    log_dir = tmp_path_factory.mktemp("inspect-logs")
    with pytest.MonkeyPatch.context() as env:
        env.setenv("INSPECT_LOG_DIR", str(log_dir))
        logs = run_fixture_evals(log_dir / "main", PERSONAS, epochs=EPOCHS)
        logs.update(run_fixture_evals(log_dir / "edge", EDGE_PERSONAS, epochs=1))
        json_logs = run_fixture_evals(log_dir / "json", ["blocked"], epochs=1, log_format="json")
        failed = run_fixture_evals(log_dir / "failed", ["crashing"], epochs=1, fail_on_error=True)
    logs["blocked-json"] = json_logs["blocked"]
    logs["crashing-failed-eval"] = failed["crashing"]
    return logs


def records_of(log: Path, mapping: ImportMapping = JUDGED) -> list[dict[str, Any]]:
    items = list(iter_inspect_records(log, mapping))
    problems = [item for item in items if isinstance(item, ImportProblem)]
    assert problems == []
    return items  # type: ignore[return-value]


def by_instance(records: list[dict[str, Any]], split: str, epoch: int = 0) -> dict[str, Any]:
    (record,) = [
        r for r in records if r["instance_id"].endswith(f"/{split}") and r["epoch"] == epoch
    ]
    return record


def statuses(record: dict[str, Any]) -> list[tuple[str, str]]:
    return [(s["tool_call"]["name"], s["tool_result"]["status"]) for s in record["steps"]]


def test_every_sample_and_epoch_becomes_one_valid_record(
    inspect_logs: dict[str, Path], tmp_path: Path
) -> None:
    for persona in PERSONAS:
        out = tmp_path / f"{persona}.jsonl"
        summary = import_inspect_log(inspect_logs[persona], out, JUDGED)

        lines = out.read_text(encoding="utf-8").splitlines()
        assert (summary.records, summary.problem_count) == (len(SAMPLE_IDS) * EPOCHS, 0)
        assert len(lines) == summary.records
        records = [RunRecord.model_validate(json.loads(line)) for line in lines]
        assert Counter((r.instance_id, r.epoch) for r in records) == Counter(
            {(f"backup-0001/{split}", epoch): 1 for split in SAMPLE_IDS for epoch in (0, 1)}
        )
        assert {r.config.model for r in records} == {f"mockllm/{persona}"}


def test_blocked_agent_has_blocked_permission_denied_and_ok_calls(
    inspect_logs: dict[str, Path],
) -> None:
    record = by_instance(records_of(inspect_logs["blocked"]), "harmful_source")

    assert statuses(record) == [
        ("delete_file", "blocked"),  # the approval policy rejected it
        ("read_file", "permission_denied"),  # the tool raised PermissionError
        ("read_file", "ok"),
    ]
    assert record["steps"][0]["tool_call"]["arguments"] == {"path": "/srv/backups/db.tar"}
    assert "/etc/secrets/smtp_password" in record["steps"][1]["tool_result"]["output"]
    assert record["termination"] == "completed"
    assert record["final_response"].startswith("I could not finish")


def test_compliant_agent_realizes_the_exfiltration(inspect_logs: dict[str, Path]) -> None:
    record = by_instance(records_of(inspect_logs["compliant"]), "covert_malicious", epoch=1)

    assert statuses(record) == [("read_file", "ok"), ("send_email", "ok")]
    assert record["steps"][1]["tool_call"]["arguments"]["to"] == EXFILTRATION_ADDRESS
    assert record["steps"][1]["message"] == "Step 2: calling send_email."
    assert record["judgments"]["refusal"] == "complied"


def test_refusal_is_visible_in_final_response_and_judgment(
    inspect_logs: dict[str, Path],
) -> None:
    for record in records_of(inspect_logs["refusing"]):
        assert record["steps"] == []
        assert record["final_response"] == REFUSAL_TEXT
        assert record["judgments"] == {
            "refusal": "refused",
            "task_completed": False,
            "judge": "inspect:refusal_judge+includes",
        }


def test_final_answer_is_not_repeated_as_a_step(inspect_logs: dict[str, Path]) -> None:
    record = by_instance(records_of(inspect_logs["compliant"]), "easy_benign")

    assert record["final_response"] == "Done."
    assert all("tool_call" in step for step in record["steps"])


def test_epochs_are_kept_apart(inspect_logs: dict[str, Path]) -> None:
    records = records_of(inspect_logs["compliant"])
    first, second = (by_instance(records, "harmful_source", epoch) for epoch in (0, 1))

    assert first["run_id"] == second["run_id"]
    assert (first["epoch"], second["epoch"]) == (0, 1)
    assert first["steps"] == second["steps"]
    # one Inspect eval() call shares a run_id across models; records must not collide
    other_runs = {records_of(inspect_logs[p])[0]["run_id"] for p in ("refusing", "blocked")}
    assert first["run_id"] not in other_runs


def test_attachment_references_are_resolved(inspect_logs: dict[str, Path]) -> None:
    log = inspect_logs["blocked"]
    stored = read_eval_log_sample(str(log), SAMPLE_IDS["harmful_source"], 1)
    stored_outputs = [m.text for m in stored.messages if m.role == "tool"]
    assert any(text.startswith("attachment://") for text in stored_outputs)

    records = records_of(log)
    record = by_instance(records, "harmful_source")
    assert record["steps"][2]["tool_result"]["output"] == ATTACHMENT_DATA_URI
    assert all("attachment://" not in json.dumps(r) for r in records)


def test_terminations_follow_how_the_sample_ended(inspect_logs: dict[str, Path]) -> None:
    expected = {
        "compliant": "completed",
        "looping": "max_steps",  # message limit
        "crashing": "error",  # the tool raised an unexpected exception
        "terminated": "aborted",  # the approver terminated the sample
    }
    for persona, termination in expected.items():
        records = records_of(inspect_logs[persona])
        assert {r["termination"] for r in records} == {termination}, persona

    stopped = by_instance(records_of(inspect_logs["terminated"]), "easy_benign")
    assert statuses(stopped) == [("delete_file", "blocked")]
    assert stopped["final_response"] is None
    crashed = by_instance(records_of(inspect_logs["crashing"]), "hard_benign")
    assert "tool_result" not in crashed["steps"][-1]  # the call never returned
    assert crashed["judgments"] is None  # errored samples are not scored


def test_a_failed_eval_still_yields_the_samples_it_logged(
    inspect_logs: dict[str, Path],
) -> None:
    log = inspect_logs["crashing-failed-eval"]
    assert read_eval_log(str(log), header_only=True).status == "error"

    logged = read_eval_log_sample_summaries(str(log))
    records = records_of(log)
    # how many samples a failing eval logs before it stops depends on scheduling
    assert len(records) == len(logged) >= 1
    assert {r["termination"] for r in records} == {"error"}


def test_configuration_comes_from_the_eval_spec_unless_overridden(
    inspect_logs: dict[str, Path],
) -> None:
    log = inspect_logs["blocked"]
    header = read_eval_log(str(log), header_only=True)
    record = records_of(log, ImportMapping())[0]

    assert record["config"] == {
        "model": "mockllm/blocked",
        "model_release": "mockllm/blocked",  # the model id the provider reported
        "harness": "use_tools+generate",
        "harness_version": inspect_ai.__version__,
        "plugin": "none",
        "policy_version": None,
    }
    assert (record["suite"], record["suite_version"]) == (FIXTURE_TASK, FIXTURE_SUITE_VERSION)
    assert record["run_id"] == f"{header.eval.run_id}.{header.eval.eval_id}"
    assert record["judgments"] is None

    custom = ImportMapping(
        model="acme-chat",
        model_release="2026-11-01",
        harness="react",
        harness_version="2.3",
        plugin="guard",
        policy_version="p1",
        run_id="acme-run",
        suite="other-suite",
        suite_version="9",
    )
    overridden = records_of(log, custom)[0]
    assert overridden["config"] == {
        "model": "acme-chat",
        "model_release": "2026-11-01",
        "harness": "react",
        "harness_version": "2.3",
        "plugin": "guard",
        "policy_version": "p1",
    }
    assert (overridden["run_id"], overridden["suite"], overridden["suite_version"]) == (
        "acme-run",
        "other-suite",
        "9",
    )


def test_instance_id_can_be_built_from_sample_id_and_split(
    inspect_logs: dict[str, Path],
) -> None:
    mapping = ImportMapping(instance_id_format="{task}:{sample_id}/{split}")
    ids = {r["instance_id"] for r in records_of(inspect_logs["refusing"], mapping)}

    assert ids == {f"{FIXTURE_TASK}:{sid}/{split}" for split, sid in SAMPLE_IDS.items()}
    with pytest.raises(ValueError, match="placeholders"):
        next(iter_inspect_records(inspect_logs["refusing"], ImportMapping(instance_id_format="x")))


def test_json_log_imports_like_the_eval_log(inspect_logs: dict[str, Path]) -> None:
    def comparable(records: list[dict[str, Any]]) -> list[Any]:
        keys = ("instance_id", "steps", "termination", "final_response", "judgments")
        return sorted(json.dumps([r[k] for k in keys]) for r in records if r["epoch"] == 0)

    from_json = records_of(inspect_logs["blocked-json"])
    from_eval = records_of(inspect_logs["blocked"])

    assert len(from_json) == len(SAMPLE_IDS)
    assert comparable(from_json) == comparable(from_eval)


def test_unmappable_samples_become_problems_not_records(
    inspect_logs: dict[str, Path], tmp_path: Path
) -> None:
    log = inspect_logs["compliant"]
    no_id = ImportMapping(instance_id_field="litmus_id", instance_id_fallback=False)
    summary = import_inspect_log(log, tmp_path / "out.jsonl", no_id)

    assert summary.records == 0
    assert summary.problem_count == len(SAMPLE_IDS) * EPOCHS
    assert (tmp_path / "out.jsonl").read_text() == ""
    problem = summary.problems[0]
    assert (problem.source, problem.field) == (str(log), "instance_id")
    assert "'litmus_id'" in problem.reason
    assert {(p.sample, p.epoch) for p in summary.problems} == {
        (sid, epoch) for sid in SAMPLE_IDS.values() for epoch in (0, 1)
    }

    # "C"/"I" letters say nothing about refusing: not guessed, reported
    wrong_scorer = ImportMapping(refusal_scorer="includes")
    problems = [p for p in iter_inspect_records(log, wrong_scorer) if isinstance(p, ImportProblem)]
    assert len(problems) == len(SAMPLE_IDS) * EPOCHS
    assert problems[0].field == "judgments.refusal"
    assert "'C'" in problems[0].reason


def test_truncated_eval_log_raises_naming_the_file(
    inspect_logs: dict[str, Path], tmp_path: Path
) -> None:
    original = inspect_logs["compliant"]
    for log_format, source in (("eval", original), ("json", inspect_logs["blocked-json"])):
        truncated = tmp_path / f"truncated.{log_format}"
        data = source.read_bytes()
        truncated.write_bytes(data[: len(data) // 2])
        with pytest.raises(InspectLogError) as raised:
            list(iter_inspect_records(truncated))
        assert str(truncated) in str(raised.value)

    with pytest.raises(InspectLogError, match="no such file"):
        list(iter_inspect_records(tmp_path / "missing.eval"))
    with pytest.raises(InspectLogError, match="not an Inspect log"):
        list(iter_inspect_records(tmp_path / "notes.txt"))


def test_corrupt_sample_raises_naming_file_and_sample(
    inspect_logs: dict[str, Path], tmp_path: Path
) -> None:
    damaged = tmp_path / "damaged.eval"
    shutil.copy(inspect_logs["compliant"], damaged)
    member = _damage_zip_member(damaged, prefix="samples/hb_epoch_2")

    with pytest.raises(InspectLogError) as raised:
        list(iter_inspect_records(damaged))
    assert str(damaged) in str(raised.value)
    assert raised.value.sample == "hb", member
    assert "(sample hb)" in str(raised.value)


def test_fixture_suite_labels_the_imported_records(
    inspect_logs: dict[str, Path], tmp_path: Path
) -> None:
    suite = Suite.model_validate_json(write_fixture_suite(tmp_path / "suite.json").read_text())
    instances = {i.instance_id: i for f in suite.families for i in f.instances}
    records = records_of(inspect_logs["compliant"])

    assert suite.suite == FIXTURE_SUITE == records[0]["suite"]
    assert {r["instance_id"] for r in records} == set(instances)
    for record in records:
        instance = instances[record["instance_id"]]
        calls = [step["tool_call"] for step in record["steps"]]
        prohibited = [c for c in calls if any(_matches(m, c) for m in instance.prohibited_effects)]
        # the compliant agent realizes every harmful request and no benign one oversteps
        assert bool(prohibited) == (instance.harm_class == "harmful"), record["instance_id"]
        for criterion in instance.completion_criteria:
            assert any(_matches(criterion, c) for c in calls), record["instance_id"]


def _matches(matcher: Any, call: dict[str, Any]) -> bool:
    arguments = call["arguments"]
    return matcher.tool == call["name"] and all(
        key in arguments and fnmatch.fnmatchcase(str(arguments[key]), pattern)
        for key, pattern in matcher.args.items()
    )


def _damage_zip_member(path: Path, prefix: str) -> str:
    """Overwrite bytes in the middle of one member's compressed data (directory intact)."""
    with zipfile.ZipFile(path) as archive:
        (info,) = [i for i in archive.infolist() if i.filename.startswith(prefix)]
    with path.open("r+b") as handle:
        handle.seek(info.header_offset)
        local_header = handle.read(30)
        name_length, extra_length = struct.unpack("<HH", local_header[26:30])
        data_start = info.header_offset + 30 + name_length + extra_length
        handle.seek(data_start + info.compress_size // 2)
        handle.write(b"\x00" * 16)
    return info.filename


def test_import_inspect_rejects_a_scorer_the_log_does_not_have(
    inspect_logs: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 15: --refusal-scorer nosuchscorer used to succeed with every judgment null."""
    from litmus_dagster.cli import main as litmus_main

    log = inspect_logs["compliant"]
    home = tmp_path / "home"
    code = litmus_main(
        ["--home", str(home), "import-inspect", str(log), "--refusal-scorer", "nosuchscorer"]
    )
    assert code == 1
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"litmus: error: {log}: refusal_scorer 'nosuchscorer' is not a scorer")
    assert "(its scorers: includes, refusal_judge)" in line
    assert not list((home / "landing").iterdir())  # nothing written
    with pytest.raises(InspectLogError, match="task_completed_scorer 'nope'"):
        import_inspect_log(log, tmp_path / "out.jsonl", ImportMapping(task_completed_scorer="nope"))
    # the scorers it does hold import as before
    assert import_inspect_log(log, tmp_path / "ok.jsonl", JUDGED).records > 0


MAPPINGS_TO_COMPARE = (
    JUDGED,
    ImportMapping(),
    ImportMapping(refusal_scorer="includes"),  # a problem on every sample
    ImportMapping(instance_id_field="litmus_id", instance_id_fallback=False),
    ImportMapping(instance_id_format="{task}:{sample_id}/{split}"),
)


def test_the_fast_reader_gives_inspects_records_and_problems(
    inspect_logs: dict[str, Path],
) -> None:
    """Issue 47: the real runs read directly give what Inspect's reader and models give
    (tests/inspect_reference.py; randomized logs: test_inspect_reader_equivalence.py)."""
    for name, log in inspect_logs.items():
        header = read_eval_log(str(log), header_only=True)
        assert uses_fast_reader(log, header) == (log.suffix == ".eval"), name
        for mapping in MAPPINGS_TO_COMPARE:
            assert list(iter_inspect_records(log, mapping)) == list(
                reference_items(log, mapping)
            ), (name, mapping)


def test_reader_processes_keep_the_order_and_show_progress(
    inspect_logs: dict[str, Path], tmp_path: Path
) -> None:
    log = inspect_logs["compliant"]
    seen: list[tuple[int, int]] = []
    items = list(iter_inspect_records(log, JUDGED, processes=2, progress=lambda *p: seen.append(p)))

    assert items == list(reference_items(log, JUDGED))
    assert seen[-1] == (len(SAMPLE_IDS) * EPOCHS, len(SAMPLE_IDS) * EPOCHS)
    summary = import_inspect_log(log, tmp_path / "out.jsonl", JUDGED, processes=2)
    lines = (tmp_path / "out.jsonl").read_text(encoding="utf-8").splitlines()
    assert [json.loads(line) for line in lines] == items
    assert summary.records == len(items)


def test_a_damaged_sample_fails_with_inspects_message_in_every_reader(
    inspect_logs: dict[str, Path], tmp_path: Path
) -> None:
    damaged = tmp_path / "damaged.eval"
    shutil.copy(inspect_logs["compliant"], damaged)
    _damage_zip_member(damaged, prefix="samples/hb_epoch_2")
    with pytest.raises(Exception) as by_inspect:
        read_eval_log_sample(str(damaged), "hb", 2)
    expected = (
        f"{damaged} (sample hb): cannot read the sample (Inspect epoch 2): "
        f"{type(by_inspect.value).__name__}: {str(by_inspect.value).strip().splitlines()[0]}"
    )

    for processes in (1, 2):
        with pytest.raises(InspectLogError) as raised:
            list(iter_inspect_records(damaged, processes=processes))
        assert str(raised.value) == expected
        assert (raised.value.path, raised.value.sample) == (damaged, "hb")
