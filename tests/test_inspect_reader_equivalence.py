"""The fast Inspect reader gives the records and problems Inspect's own reader gives.

Logs are written by the installed Inspect (``write_eval_log``) from randomized samples: tool
calls with odd arguments, attachment references (resolvable, legacy ``tc://``, missing),
several epochs, scores of every shape (NaN included), errors, limits, approval decisions.
The oracle is tests/inspect_reference.py (Inspect's reader and models). The fixtures' real
offline task runs are compared in tests/test_import_inspect.py.
"""

from __future__ import annotations

import json
import math
import typing
import zipfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from inspect_ai.event import ApprovalEvent
from inspect_ai.log import (
    EvalError,
    EvalLog,
    EvalSample,
    EvalSampleLimit,
    read_eval_log,
    write_eval_log,
)
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessageAssistant,
    ChatMessageTool,
    ChatMessageUser,
    ContentReasoning,
    ContentText,
    ModelOutput,
)
from inspect_ai.scorer import Score
from inspect_ai.tool import ToolCall, ToolCallError

from inspect_fixtures.litmus_fixture_task import run_fixture_evals
from inspect_reference import reference_items
from litmus.formats import SPLITS
from litmus.importers import inspect_log
from litmus.importers.inspect_log import ImportMapping, iter_inspect_records, uses_fast_reader

MAPPINGS = (
    ImportMapping(refusal_scorer="refusal_judge", task_completed_scorer="includes"),
    ImportMapping(
        refusal_scorer="refusal_judge",
        refusal_score_key="refusal",
        task_completed_scorer="includes",
        task_completed_score_key="score",
        instance_id_format="{sample_id}/{split}",
        post_state="store:files",
    ),
    ImportMapping(post_state="store"),
)
ATTACHED = "the attached text"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> EvalLog:
    """A real log's header (eval spec, plan, results) to write random samples under."""
    log_path = run_fixture_evals(tmp_path_factory.mktemp("template"), ["blocked"], epochs=1)
    header = read_eval_log(str(log_path["blocked"]), header_only=True)
    header.samples = None
    return header


@pytest.fixture
def inspect_reads(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, int]]:
    """The samples the importer handed to Inspect's reader (it still reads them)."""
    reads: list[tuple[Any, int]] = []
    read_by_inspect = inspect_log._inspect_sample

    def counted(log_path: Path, key: tuple[Any, int]) -> Any:
        reads.append(key)
        return read_by_inspect(log_path, key)

    monkeypatch.setattr(inspect_log, "_inspect_sample", counted)
    return reads


def write_log(template: EvalLog, samples: list[EvalSample], path: Path) -> Path:
    log = template.model_copy(deep=True)
    log.samples = samples
    ids = list(dict.fromkeys(sample.id for sample in samples))
    log.eval.dataset.sample_ids = ids
    log.eval.dataset.samples = len(ids)
    log.eval.config.epochs = max(sample.epoch for sample in samples)
    write_eval_log(log, str(path), format="eval")
    return path


def assert_same_items(log: Path, processes: int = 1) -> None:
    for mapping in MAPPINGS:
        fast = list(iter_inspect_records(log, mapping, processes=processes))
        reference = list(reference_items(log, mapping))
        assert fast == reference, mapping


# ----------------------------------------------------------------- random samples

odd_text = st.one_of(
    st.text(max_size=12),
    st.sampled_from(
        [
            "",
            "attachment://known",
            "tc://known",
            "attachment://missing",
            "attachment://",
            "C",
            "refused",
            " Refusal ",
            "\u202edelete\u202c",
            "line\nbreak",
            "\x00",
        ]
    ),
)
json_leaf = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),  # beyond 64 bits as well
    st.floats(allow_nan=False, allow_infinity=False),
    odd_text,
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(odd_text, inner, max_size=3),
    max_leaves=8,
)
score_leaf = st.one_of(
    st.booleans(),
    st.integers(min_value=-2, max_value=3),
    st.floats(allow_infinity=True, allow_nan=True),  # NaN is Inspect's "unscored"
    st.sampled_from(["refused", "Partial", "complied", "C", "I", "P", "yes", "compliance", "?"]),
)
score_value = st.one_of(
    score_leaf,
    st.lists(score_leaf, max_size=2),
    st.fixed_dictionaries({"score": score_leaf, "refusal": score_leaf}),
    st.fixed_dictionaries({"other": score_leaf}),
)
tool_error_types = st.sampled_from(typing.get_args(ToolCallError.__annotations__["type"]))
stop_reasons = st.sampled_from(["stop", "tool_calls", "content_filter", "max_tokens", "unknown"])


@st.composite
def assistant_content(draw: st.DrawFn) -> str | list[Any]:
    if draw(st.booleans()):
        return draw(odd_text)
    parts: list[Any] = []
    for _ in range(draw(st.integers(0, 3))):
        if draw(st.booleans()):
            parts.append(ContentText(text=draw(odd_text)))
        else:
            parts.append(
                ContentReasoning(
                    reasoning=draw(odd_text),
                    summary=draw(st.none() | odd_text),
                    redacted=draw(st.booleans()),
                )
            )
    return parts


@st.composite
def inspect_sample(draw: st.DrawFn, sample_id: str, epoch: int) -> EvalSample:
    follows = draw(st.none() | st.just(["call-0"]))  # a user message can name tool calls
    messages: list[Any] = [ChatMessageUser(content="do the task", tool_call_id=follows)]
    events: list[Any] = []
    calls_made = 0
    for _ in range(draw(st.integers(0, 3))):
        calls = []
        for _ in range(draw(st.integers(0, 2))):
            calls_made += 1
            arguments = draw(st.dictionaries(odd_text, json_value, max_size=3))
            calls.append(ToolCall(id=f"call-{calls_made}", function="tool", arguments=arguments))
        messages.append(ChatMessageAssistant(content=draw(assistant_content()), tool_calls=calls))
        for call in calls:
            decision = draw(st.sampled_from([None, "approve", "modify", "reject", "terminate"]))
            if decision is not None:
                events.append(
                    ApprovalEvent(
                        message="",
                        call=call,
                        approver="policy",
                        decision=decision,
                        explanation=draw(st.none() | st.text(max_size=8)),
                    )
                )
            if draw(st.integers(0, 3)) == 0:
                continue  # the call never returned
            error = None
            if draw(st.booleans()):
                error = ToolCallError(type=draw(tool_error_types), message=draw(odd_text))
            messages.append(
                ChatMessageTool(
                    content=draw(odd_text), tool_call_id=call.id, function="tool", error=error
                )
            )
    if draw(st.integers(0, 9)) == 0:
        orphan_id = draw(st.sampled_from(["no-such-call", None]))
        messages.append(ChatMessageTool(content="orphan", tool_call_id=orphan_id))
    output = ModelOutput(model=draw(st.sampled_from(["", "model-2026-01-01"])))
    if draw(st.booleans()):
        final_calls = [ToolCall(id="final", function="tool", arguments={})]
        final = ChatMessageAssistant(
            content=draw(assistant_content()),
            tool_calls=final_calls if draw(st.integers(0, 3)) == 0 else None,
        )
        messages.append(final)
        output = ModelOutput(
            model=output.model,
            choices=[ChatCompletionChoice(message=final, stop_reason=draw(stop_reasons))],
            completion=draw(st.sampled_from(["", "attachment://known"])) or "",
        )
    scorers = draw(st.lists(st.sampled_from(["refusal_judge", "includes"]), unique=True))
    metadata: dict[str, Any] = {}
    if draw(st.booleans()):
        metadata["instance_id"] = draw(st.sampled_from(["fam/harmful_source", 7, "", True]))
    metadata["split"] = draw(st.sampled_from([*SPLITS, "bogus"]))
    limit_type = draw(st.none() | st.sampled_from(typing.get_args(inspect_log.LimitType)))
    return EvalSample(
        id=sample_id,
        epoch=epoch,
        input="do the task",
        target="",
        messages=messages,
        output=output,
        scores={name: Score(value=draw(score_value)) for name in scorers} or None,
        metadata=metadata,
        store={"files": draw(st.dictionaries(st.text(max_size=4), json_leaf, max_size=2))},
        events=events,
        attachments={"known": ATTACHED},
        error=EvalError(message="boom", traceback="", traceback_ansi="")
        if draw(st.integers(0, 5)) == 0
        else None,
        limit=EvalSampleLimit(type=limit_type, limit=1) if limit_type else None,
    )


@st.composite
def inspect_samples(draw: st.DrawFn) -> list[EvalSample]:
    epochs = draw(st.integers(1, 3))
    ids = [f"s{index}" for index in range(draw(st.integers(1, 3)))]
    return [draw(inspect_sample(sid, epoch)) for sid in ids for epoch in range(1, epochs + 1)]


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(samples=inspect_samples())
def test_fast_reader_gives_inspects_records_and_problems(
    template: EvalLog, tmp_path: Path, inspect_reads: list[Any], samples: list[EvalSample]
) -> None:
    log = write_log(template, samples, tmp_path / "random.eval")
    assert uses_fast_reader(log, read_eval_log(str(log), header_only=True))
    assert_same_items(log)
    assert inspect_reads == []  # every sample the installed Inspect writes is read directly


# ----------------------------------------------------------------- shapes left to Inspect


def rewrite_members(source: Path, target: Path, change: dict[str, Any]) -> Path:
    """Copy an ``.eval`` zip, replacing members by name with ``change[name](parsed json)``."""
    with zipfile.ZipFile(source) as original, zipfile.ZipFile(target, "w") as copy:
        for info in original.infolist():
            data = original.read(info.filename)
            if info.filename in change:
                data = json.dumps(change[info.filename](json.loads(data))).encode()
            copy.writestr(info.filename, data, compress_type=zipfile.ZIP_DEFLATED)
    return target


def one_tool_sample(tmp_path: Path, template: EvalLog) -> Path:
    call = ToolCall(id="c1", function="tool", arguments={"path": "attachment://known"})
    sample = EvalSample(
        id="s0",
        epoch=1,
        input="x",
        target="",
        messages=[
            ChatMessageAssistant(content="calling", tool_calls=[call]),
            ChatMessageTool(content="out", tool_call_id="c1"),
        ],
        scores={"refusal_judge": Score(value=math.nan), "includes": Score(value="C")},
        attachments={"known": ATTACHED},
    )
    return write_log(template, [sample], tmp_path / "one.eval")


def test_an_unknown_format_version_is_read_by_inspect(template: EvalLog, tmp_path: Path) -> None:
    log = one_tool_sample(tmp_path, template)
    newer = rewrite_members(log, tmp_path / "newer.eval", {"header.json": _version(99)})

    assert not uses_fast_reader(newer, read_eval_log(str(newer), header_only=True))
    assert_same_items(newer)
    (record,) = iter_inspect_records(newer)
    assert record["steps"][0]["tool_call"]["arguments"] == {"path": ATTACHED}


def test_fields_inspect_migrates_are_read_by_inspect(
    template: EvalLog, tmp_path: Path, inspect_reads: list[Any]
) -> None:
    """An older tool message's ``tool_error`` (Inspect turns it into ``error``)."""
    log = one_tool_sample(tmp_path, template)

    def old_tool_error(sample: dict[str, Any]) -> dict[str, Any]:
        tool = sample["messages"][1]
        tool.pop("error", None)
        tool["tool_error"] = "the old way"
        return sample

    older = rewrite_members(
        log, tmp_path / "older.eval", {"samples/s0_epoch_1.json": old_tool_error}
    )
    assert_same_items(older)
    (record,) = [item for item in iter_inspect_records(older) if isinstance(item, dict)]
    assert record["steps"][0]["tool_result"] == {"status": "error", "output": "out\nthe old way"}
    assert ("s0", 1) in inspect_reads


def test_deflated_members_of_older_logs_are_read(
    template: EvalLog, tmp_path: Path, inspect_reads: list[Any]
) -> None:
    log = one_tool_sample(tmp_path, template)
    deflated = rewrite_members(log, tmp_path / "deflated.eval", {})
    with zipfile.ZipFile(deflated) as archive:
        assert {info.compress_type for info in archive.infolist()} == {zipfile.ZIP_DEFLATED}
    assert_same_items(deflated)
    assert inspect_reads == []


def test_the_reader_types_are_the_installed_inspects() -> None:
    """Upgrade guard: the Literal values the fast reader accepts are Inspect's own."""
    from inspect_ai.log._log import EvalSampleLimitType
    from inspect_ai.model._model_output import StopReason

    assert set(typing.get_args(inspect_log.LimitType)) == set(typing.get_args(EvalSampleLimitType))
    assert set(typing.get_args(inspect_log.StopReason)) == {
        *typing.get_args(StopReason),
        "length",
    }
    assert typing.get_args(inspect_log.ToolErrorType) == typing.get_args(
        ToolCallError.__annotations__["type"]
    )
    assert typing.get_args(inspect_log.ApprovalDecision) == typing.get_args(
        ApprovalEvent.model_fields["decision"].annotation
    )


def _version(version: int) -> Any:
    def change(header: dict[str, Any]) -> dict[str, Any]:
        header["version"] = version
        return header

    return change


def test_the_member_index_is_zipfiles_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """zip64 entries and end record, data prepended to the zip, a name stored twice (the
    last one counts)."""
    log = tmp_path / "members.eval"
    # the zip64 end record zipfile writes past 65,535 members, without writing that many
    monkeypatch.setattr(zipfile, "ZIP_FILECOUNT_LIMIT", 2)
    with zipfile.ZipFile(log, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("header.json", "{}")
        for number in range(3):
            with archive.open(f"samples/s{number}_epoch_1.json", "w", force_zip64=True) as out:
                out.write(json.dumps({"id": f"s{number}", "epoch": 1}).encode() * 50)
        with pytest.warns(UserWarning, match="Duplicate name"):
            archive.writestr("samples/s0_epoch_1.json", b"{}")
    assert b"PK\x06\x06" in log.read_bytes()[-200:]
    prepended = tmp_path / "prepended.eval"
    prepended.write_bytes(b"#!prefix\n" + log.read_bytes())

    for path in (log, prepended):
        index = inspect_log._sample_member_index(path)
        with zipfile.ZipFile(path) as archive, path.open("rb") as source:
            names = {n for n in archive.namelist() if n.startswith("samples/")}
            assert set(index) == names
            for name in names:
                assert inspect_log._member_bytes(source, name, index[name]) == archive.read(name)
