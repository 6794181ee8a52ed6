"""The reference reading of an Inspect log: Inspect's own reader and models (the oracle).

The fast reader in ``litmus.importers.inspect_log`` reads sample members as plain JSON; this
module maps the same samples as Inspect's pydantic models give them (read with
``read_eval_log_samples_by_id``, attachment references resolved by Inspect's own
``resolve_attachment_fn``), so that tests/test_inspect_reader_equivalence.py can show both
give identical records and problems. Readable, not fast; never a product path.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from inspect_ai.log import read_eval_log, read_eval_log_samples_by_id

# Private to Inspect: how it swaps `attachment://` (and legacy `tc://`) references for their
# content. The import fails on an Inspect upgrade that moves it, and the test with it.
from inspect_ai.log._condense import resolve_attachment_fn
from pydantic import ValidationError

from litmus.formats import RUN_SCHEMA_VERSION, SPLITS, RunRecord
from litmus.importers.inspect_log import (
    ATTACHMENT_PROTOCOL,
    BUDGET_LIMITS,
    LEGACY_ATTACHMENT_PROTOCOL,
    UNVERSIONED_RELEASE,
    ImportMapping,
    ImportProblem,
    _check_instance_id_format,
    _completion_verdict,
    _placeholders,
    _post_state,
    _refusal_verdict,
    _RunFacts,
    _sample_keys,
    _Unmappable,
)


def reference_items(
    log_path: Path, mapping: ImportMapping
) -> Iterator[dict[str, Any] | ImportProblem]:
    """Records and problems of a log, in the importer's order, through Inspect's models."""
    _check_instance_id_format(mapping.instance_id_format)
    header = read_eval_log(str(log_path), header_only=True)
    run = _RunFacts.from_header(header, mapping, log_path)
    if log_path.suffix == ".json":
        samples = read_eval_log(str(log_path)).samples or []
    else:
        samples = read_eval_log_samples_by_id(str(log_path), _sample_keys(log_path, header))
    for sample in samples:
        try:
            yield _map_sample(sample, run, mapping)
        except _Unmappable as problem:
            yield ImportProblem(
                source=str(log_path),
                sample=str(sample.id),
                epoch=sample.epoch - 1,
                field=problem.field,
                reason=problem.reason,
            )


def _map_sample(sample: Any, run: _RunFacts, mapping: ImportMapping) -> dict[str, Any]:
    attachments: Mapping[str, str] = sample.attachments or {}
    if run.model_release is None:
        # The served model id (e.g. "gpt-4o-2024-08-06") is the release; it is fixed for the
        # whole log from its first sample, so one log is always one configuration.
        run.model_release = (sample.output.model if sample.output else "") or UNVERSIONED_RELEASE

    steps = _steps(sample, attachments)
    final_response = _final_response(sample, attachments)
    if steps and final_response is not None and _is_final_answer_step(steps[-1], final_response):
        # The last assistant turn *is* the final response; keeping its text as a step as well
        # would show it twice (and place a refusal one step early). Its reasoning stays.
        del steps[-1]["message"]
        if not steps[-1]:
            steps.pop()

    record: dict[str, Any] = {
        "schema_version": RUN_SCHEMA_VERSION,
        "run_id": run.run_id,
        "config": {
            "model": run.model,
            "model_release": run.model_release,
            "harness": run.harness,
            "harness_version": run.harness_version,
            "plugin": mapping.plugin,
            "policy_version": mapping.policy_version,
        },
        "suite": run.suite,
        "suite_version": run.suite_version,
        "instance_id": _instance_id(sample, run, mapping),
        "epoch": sample.epoch - 1,
        "steps": steps,
        "termination": _termination(sample),
        "final_response": final_response,
        "unguarded_effect": None,
        "harm_prevented_by": None,
        "judgments": _judgments(sample, mapping),
    }
    # the post-state rule reads only the store and metadata dicts, the same in both readers
    if (post_state := _post_state(sample, mapping)) is not None:
        record["post_state"] = post_state
    try:
        RunRecord.model_validate(record)
    except ValidationError as error:
        first = error.errors()[0]
        location = ".".join(str(part) for part in first["loc"]) or "record"
        raise _Unmappable(location, first["msg"]) from error
    return record


def _instance_id(sample: Any, run: _RunFacts, mapping: ImportMapping) -> str:
    metadata: Mapping[str, Any] = sample.metadata or {}
    value = metadata.get(mapping.instance_id_field)
    if value is None:
        if not mapping.instance_id_fallback:
            raise _Unmappable(
                "instance_id", f"sample metadata has no {mapping.instance_id_field!r} key"
            )
        value = sample.id
    if not isinstance(value, str | int) or isinstance(value, bool) or str(value) == "":
        raise _Unmappable(
            "instance_id",
            f"sample metadata {mapping.instance_id_field!r} is {value!r}, not a non-empty id",
        )
    fields = {"instance_id": str(value), "sample_id": str(sample.id), "task": run.task}
    if "split" in _placeholders(mapping.instance_id_format):
        split = mapping.split if mapping.split is not None else metadata.get(mapping.split_field)
        if split not in SPLITS:
            raise _Unmappable(
                "instance_id",
                f"split {split!r} (sample metadata {mapping.split_field!r}) is not one of "
                f"{list(SPLITS)}",
            )
        fields["split"] = split
    return mapping.instance_id_format.format(**fields)


def _termination(sample: Any) -> str:
    if sample.error is not None:
        return "error"
    if sample.limit is not None:
        return "max_steps" if sample.limit.type in BUDGET_LIMITS else "aborted"
    if sample.output.choices and sample.output.stop_reason == "content_filter":
        # The provider's safety filter stopped the answer: a refusal, not a completion.
        return "refused"
    return "completed"


def _final_response(sample: Any, attachments: Mapping[str, str]) -> str | None:
    output = sample.output
    if output is None or not output.choices:
        return None
    if output.message.tool_calls:
        # The sample stopped inside the tool loop (limit, error, approver stop): this text
        # introduced a tool call and is already the last step, not a final answer.
        return None
    text = _resolve(output.completion, attachments, "final_response")
    return text or None


def _is_final_answer_step(step: dict[str, Any], final_response: str) -> bool:
    return "tool_call" not in step and step.get("message") == final_response


# --------------------------------------------------------------------------- steps


def _steps(sample: Any, attachments: Mapping[str, str]) -> list[dict[str, Any]]:
    results_by_call: dict[str, Any] = {}
    for index, message in enumerate(sample.messages):
        if message.role != "tool":
            continue
        if not message.tool_call_id:
            raise _Unmappable(f"messages[{index}]", "tool message without a tool_call_id")
        results_by_call[message.tool_call_id] = message
    approvals = _approval_decisions(sample)

    steps: list[dict[str, Any]] = []
    answered: set[str] = set()
    for message in sample.messages:
        if message.role != "assistant":
            continue
        where = f"steps[{len(steps)}]"
        thought, text = _assistant_text(message, attachments, where)
        calls = message.tool_calls or []
        if not calls:
            if thought is not None or text is not None:
                steps.append(_without_none({"thought": thought, "message": text}))
            continue
        for position, call in enumerate(calls):
            step: dict[str, Any] = {}
            if position == 0:
                step = _without_none({"thought": thought, "message": text})
            where = f"steps[{len(steps)}]"
            step["tool_call"] = {
                "name": call.function,
                "arguments": _resolve_json(call.arguments or {}, attachments, f"{where}.tool_call"),
            }
            result = _tool_result(
                results_by_call.get(call.id), approvals.get(call.id), attachments, where
            )
            if result is not None:
                step["tool_result"] = result
            answered.add(call.id)
            steps.append(step)

    orphans = sorted(set(results_by_call) - answered)
    if orphans:
        raise _Unmappable("steps", f"tool results answer no tool call: {orphans}")
    return steps


def _approval_decisions(sample: Any) -> dict[str, tuple[str, str | None]]:
    """Tool call id → (decision, explanation) of the approver's final word on that call."""
    decisions: dict[str, tuple[str, str | None]] = {}
    for event in sample.events or []:
        if getattr(event, "event", None) == "approval" and event.call.id:
            decisions[event.call.id] = (event.decision, event.explanation)
    return decisions


def _tool_result(
    message: Any,
    approval: tuple[str, str | None] | None,
    attachments: Mapping[str, str],
    where: str,
) -> dict[str, Any] | None:
    decision, explanation = approval or (None, None)
    if message is None:
        if decision in ("reject", "terminate"):
            return {"status": "blocked", "output": explanation}
        return None  # the call never returned (the sample ended while it ran)
    output = _resolve(message.text, attachments, f"{where}.tool_result.output")
    if message.error is not None:
        error_type = message.error.type
        if error_type == "permission":
            status = "permission_denied"
        elif error_type == "approval" or decision in ("reject", "terminate"):
            status = "blocked"
        else:
            status = "error"
        detail = _resolve(message.error.message, attachments, f"{where}.tool_result.output")
        return {"status": status, "output": f"{output}\n{detail}" if output else detail}
    if decision == "modify":
        # The approver rewrote the call before it ran: what the agent asked for did not
        # happen as asked, so the proposed call is recorded as blocked (fail closed).
        return {"status": "blocked", "output": output}
    return {"status": "ok", "output": output}


def _assistant_text(
    message: Any, attachments: Mapping[str, str], where: str
) -> tuple[str | None, str | None]:
    content = message.content
    if isinstance(content, str):
        text = _resolve(content, attachments, f"{where}.message")
        return None, text or None
    thoughts: list[str] = []
    texts: list[str] = []
    for part in content:
        if part.type == "text":
            texts.append(_resolve(part.text, attachments, f"{where}.message"))
        elif part.type == "reasoning":
            # Redacted reasoning is provider-encrypted; only its summary is readable.
            reasoning = part.summary if part.redacted else part.reasoning
            if reasoning:
                thoughts.append(_resolve(reasoning, attachments, f"{where}.thought"))
    thought = "\n\n".join(t for t in thoughts if t)
    text = "\n".join(t for t in texts if t)
    return thought or None, text or None


def _without_none(values: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in values.items() if value is not None}


def _judgments(sample: Any, mapping: ImportMapping) -> dict[str, Any] | None:
    scores: Mapping[str, Any] = sample.scores or {}
    judgments: dict[str, Any] = {}
    used: list[str] = []
    if mapping.refusal_scorer is not None and mapping.refusal_scorer in scores:
        value = _score_value(scores[mapping.refusal_scorer], mapping.refusal_score_key)
        judgments["refusal"] = _refusal_verdict(value)
        used.append(mapping.refusal_scorer)
    if mapping.task_completed_scorer is not None and mapping.task_completed_scorer in scores:
        value = _score_value(
            scores[mapping.task_completed_scorer], mapping.task_completed_score_key
        )
        judgments["task_completed"] = _completion_verdict(value, mapping.task_completed_threshold)
        used.append(mapping.task_completed_scorer)
    if not judgments:
        return None
    judgments["judge"] = mapping.judge or "inspect:" + "+".join(dict.fromkeys(used))
    return judgments


def _score_value(score: Any, key: str | None) -> Any:
    value = score.value
    if key is None:
        return value
    if not isinstance(value, dict) or key not in value:
        raise _Unmappable("judgments", f"score value {value!r} has no key {key!r}")
    return value[key]


def _resolve(text: str, attachments: Mapping[str, str], where: str) -> str:
    resolved = resolve_attachment_fn(attachments)(text)
    if text.startswith(LEGACY_ATTACHMENT_PROTOCOL):
        text_as_reference = ATTACHMENT_PROTOCOL + text[len(LEGACY_ATTACHMENT_PROTOCOL) :]
    else:
        text_as_reference = text
    if text_as_reference.startswith(ATTACHMENT_PROTOCOL) and resolved == text_as_reference:
        raise _Unmappable(where, f"unresolvable attachment reference {text!r}")
    return resolved


def _resolve_json(value: Any, attachments: Mapping[str, str], where: str) -> Any:
    if isinstance(value, str):
        return _resolve(value, attachments, where)
    if isinstance(value, dict):
        return {k: _resolve_json(v, attachments, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve_json(v, attachments, f"{where}[{i}]") for i, v in enumerate(value)]
    return value
