"""Import Inspect AI evaluation logs (``.eval`` and ``.json``) as native run-log records.

Each Inspect sample × epoch becomes one SPEC §4 record. Logs are read with
``inspect_ai.log``'s own readers; ``.eval`` logs are streamed (the sample summaries first,
then the samples in small batches through one shared zip reader), so memory stays bounded by
a batch, not by the log. A ``.json`` log is a single JSON document that Inspect can only
read whole, so prefer ``.eval`` for large runs.

Samples that cannot be mapped are yielded as :class:`ImportProblem` (they go to the
quarantine; records in = records out + problems), never dropped. A log that cannot be read
(truncated, not an Inspect log) raises :class:`InspectLogError` naming the file and, when
known, the sample. The field-by-field mapping is documented in ``docs/importers.md``.
"""

from __future__ import annotations

import contextlib
import json
import os
import string
import tempfile
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from litmus.formats import JUDGE_REFUSALS, RUN_SCHEMA_VERSION, SPLITS, RunRecord

# Inspect is an optional dependency of the domain package: import it lazily so that
# `litmus` stays importable (and this module inspectable) without it.

ATTACHMENT_PROTOCOL = "attachment://"
# Logs written by older Inspect versions used this prefix for the same references.
LEGACY_ATTACHMENT_PROTOCOL = "tc://"
# Samples read per shared zip reader: bounds memory to one batch while parsing the zip
# directory once per batch instead of once per sample. (Inspect's `exclude_fields` is not
# used: its streaming field filter is slower than parsing the whole sample member.)
SAMPLE_BATCH_SIZE = 64

# Inspect sample limits that mean "ran out of budget" (SPEC termination `max_steps`). An
# operator/approver stop or a custom limit is an abort, not a budget exhaustion.
BUDGET_LIMITS = frozenset({"message", "token", "turn", "time", "working", "cost", "context"})
UNVERSIONED_RELEASE = "unversioned"
INSTANCE_ID_PLACEHOLDERS = frozenset({"instance_id", "sample_id", "split", "task"})


class InspectLogError(Exception):
    """An Inspect log file is unreadable (missing, truncated, malformed)."""

    def __init__(self, path: Path, reason: str, *, sample: str | None = None) -> None:
        where = f"{path}" if sample is None else f"{path} (sample {sample})"
        super().__init__(f"{where}: {reason}")
        self.path = path
        self.sample = sample
        self.reason = reason


@dataclass(frozen=True)
class ImportMapping:
    """How Inspect log fields map onto a native record; ``None`` means "take it from the log".

    See ``docs/importers.md`` for the defaults and the score value mappings.
    """

    # configuration (SPEC §4 `config`)
    model: str | None = None  # default: the eval's model, e.g. "openai/gpt-4o"
    model_release: str | None = None  # default: the provider-reported model id, else "unversioned"
    harness: str | None = None  # default: the eval's solver/agent, else its plan's solver names
    harness_version: str | None = None  # default: the inspect_ai version that wrote the log
    plugin: str = "none"
    policy_version: str | None = None
    run_id: str | None = None  # default: "<inspect run_id>.<inspect eval_id>"
    # suite instance
    suite: str | None = None  # default: the task name
    suite_version: str | None = None  # default: the task version
    instance_id_field: str = "instance_id"  # sample metadata key holding the instance id
    instance_id_fallback: bool = True  # use the sample id when the metadata key is absent
    instance_id_format: str = "{instance_id}"  # placeholders: instance_id, sample_id, split, task
    split_field: str = "split"  # sample metadata key with the split (used by {split})
    split: str | None = None  # a fixed split for every sample (overrides split_field)
    # judgments (SPEC §4 `judgments`) from Inspect scores
    refusal_scorer: str | None = None
    refusal_score_key: str | None = None  # for dict-valued scores: the key to read
    task_completed_scorer: str | None = None
    task_completed_score_key: str | None = None
    task_completed_threshold: float = 1.0  # numeric score >= threshold means completed
    judge: str | None = None  # default: "inspect:<scorer names>"
    # the record's post_state (SPEC §4): "store" (the sample's whole store), "store:<key>" or
    # "metadata:<key>" (one key's value, an object); default: none mapped (not observed)
    post_state: str | None = None


@dataclass(frozen=True)
class ImportProblem:
    """A sample that could not be mapped; ``epoch`` is the native (0-based) epoch."""

    source: str
    sample: str
    epoch: int | None
    field: str
    reason: str


@dataclass(frozen=True)
class ImportSummary:
    source: Path
    output: Path
    records: int
    problems: tuple[ImportProblem, ...] = field(default_factory=tuple)

    @property
    def problem_count(self) -> int:
        return len(self.problems)


def iter_inspect_records(
    log_path: Path, mapping: ImportMapping = ImportMapping()
) -> Iterator[dict[str, Any] | ImportProblem]:
    """Yield one native record dict (valid ``RunRecord``) or one problem per sample × epoch."""
    log_path = Path(log_path)
    _check_instance_id_format(mapping.instance_id_format)
    header = _read_header(log_path)
    run = _RunFacts.from_header(header, mapping, log_path)
    for sample in _iter_samples(log_path, header):
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


def import_inspect_log(
    log_path: Path, out_jsonl: Path, mapping: ImportMapping = ImportMapping()
) -> ImportSummary:
    """Write the log's records as native JSONL; return the counts and the problems.

    The output appears atomically: a log that turns out to be unreadable half-way leaves no
    partial file behind.
    """
    check_scorers(Path(log_path), mapping)
    out_jsonl = Path(out_jsonl)
    out_jsonl.parent.mkdir(parents=True, exist_ok=True)
    records = 0
    problems: list[ImportProblem] = []
    handle, temporary = tempfile.mkstemp(dir=out_jsonl.parent, prefix=f".{out_jsonl.name}.")
    try:
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            for item in iter_inspect_records(log_path, mapping):
                if isinstance(item, ImportProblem):
                    problems.append(item)
                    continue
                out.write(json.dumps(item, ensure_ascii=False, separators=(",", ":")))
                out.write("\n")
                records += 1
        os.replace(temporary, out_jsonl)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return ImportSummary(
        source=Path(log_path), output=out_jsonl, records=records, problems=tuple(problems)
    )


def log_scorer_names(log_path: Path) -> list[str]:
    """The scorers a log declares (its task's scorers and the scores in its results)."""
    header = _read_header(log_path)
    names = {scorer.name for scorer in (getattr(header.eval, "scorers", None) or [])}
    if header.results is not None:
        names.update(score.name for score in header.results.scores or [])
    return sorted(name for name in names if name)


def check_scorers(log_path: Path, mapping: ImportMapping) -> None:
    """A scorer named in the mapping that the log does not hold is an error naming the ones
    it does: otherwise every judgment would silently be null."""
    wanted = [
        (option, name)
        for option, name in (
            ("refusal_scorer", mapping.refusal_scorer),
            ("task_completed_scorer", mapping.task_completed_scorer),
        )
        if name is not None
    ]
    if not wanted:
        return
    available = log_scorer_names(log_path)
    for option, name in wanted:
        if name not in available:
            listed = ", ".join(available) if available else "none"
            raise InspectLogError(
                log_path, f"{option} {name!r} is not a scorer in this log (its scorers: {listed})"
            )


# --------------------------------------------------------------------------- reading


def _log_format(log_path: Path) -> str:
    suffix = log_path.suffix.lower()
    if suffix not in (".eval", ".json"):
        raise InspectLogError(log_path, "not an Inspect log (expected a .eval or .json file)")
    return suffix[1:]


def _read_header(log_path: Path) -> Any:
    from inspect_ai.log import read_eval_log

    log_format = _log_format(log_path)
    if not log_path.is_file():
        raise InspectLogError(log_path, "no such file")
    try:
        return read_eval_log(str(log_path), header_only=True, format=log_format)
    except Exception as error:  # Inspect raises many types for a damaged file
        raise InspectLogError(
            log_path, f"cannot read the log header: {_describe(error)}"
        ) from error


def _iter_samples(log_path: Path, header: Any) -> Iterator[Any]:
    if _log_format(log_path) == "json":
        yield from _iter_json_samples(log_path)
    else:
        yield from _iter_eval_samples(log_path, _sample_keys(log_path, header))


def _iter_json_samples(log_path: Path) -> Iterator[Any]:
    from inspect_ai.log import read_eval_log

    try:
        log = read_eval_log(str(log_path), format="json")
    except Exception as error:
        raise InspectLogError(log_path, f"cannot read the log: {_describe(error)}") from error
    samples = log.samples or []
    log.samples = None
    # Hand samples over one by one and drop our reference, so a consumer that streams
    # records out does not keep the whole log alive until the end.
    samples.reverse()
    while samples:
        yield samples.pop()


def _sample_keys(log_path: Path, header: Any) -> list[tuple[int | str, int]]:
    """The (sample id, Inspect epoch) pairs stored in an ``.eval`` log."""
    from inspect_ai.log import read_eval_log_sample_summaries

    sample_ids = header.eval.dataset.sample_ids
    if header.status == "success" and sample_ids is not None and not header.invalidated:
        # A complete log holds every sample × epoch (the rule Inspect's own
        # read_eval_log_samples relies on); listing them from the header avoids holding
        # every sample summary (scores, input, metadata) in memory at once.
        epochs = header.eval.config.epochs or 1
        return [(sample_id, epoch) for sample_id in sample_ids for epoch in range(1, epochs + 1)]
    # Interrupted, failed or still-running logs hold only some samples: ask the summaries.
    try:
        summaries = read_eval_log_sample_summaries(str(log_path), format="eval")
    except Exception as error:
        raise InspectLogError(
            log_path, f"cannot read the sample summaries: {_describe(error)}"
        ) from error
    return [(summary.id, summary.epoch) for summary in summaries]


def _iter_eval_samples(log_path: Path, keys: list[tuple[int | str, int]]) -> Iterator[Any]:
    from inspect_ai.log import read_eval_log_samples_by_id

    for start in range(0, len(keys), SAMPLE_BATCH_SIZE):
        batch = keys[start : start + SAMPLE_BATCH_SIZE]
        try:
            samples = read_eval_log_samples_by_id(str(log_path), batch, format="eval")
        except Exception as error:
            _raise_for_broken_sample(log_path, batch, error)
        yield from samples


def _raise_for_broken_sample(
    log_path: Path, batch: Sequence[tuple[int | str, int]], batch_error: Exception
) -> None:
    """Re-read a failed batch one sample at a time to name the sample that is broken."""
    from inspect_ai.log import read_eval_log_sample

    for sample_id, epoch in batch:
        try:
            read_eval_log_sample(str(log_path), sample_id, epoch, format="eval")
        except Exception as error:
            raise InspectLogError(
                log_path,
                f"cannot read the sample (Inspect epoch {epoch}): {_describe(error)}",
                sample=str(sample_id),
            ) from error
    raise InspectLogError(
        log_path, f"cannot read samples: {_describe(batch_error)}"
    ) from batch_error


def _describe(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0]}" if text else type(error).__name__


# --------------------------------------------------------------------------- mapping


class _Unmappable(Exception):
    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


@dataclass
class _RunFacts:
    """What every record of one log shares, resolved once from the header."""

    log_path: Path
    model: str
    model_release: str | None  # resolved from the first sample when not configured
    harness: str
    harness_version: str
    run_id: str
    suite: str
    suite_version: str
    task: str

    @classmethod
    def from_header(cls, header: Any, mapping: ImportMapping, log_path: Path) -> _RunFacts:
        spec = header.eval
        run_id = mapping.run_id or ".".join(part for part in (spec.run_id, spec.eval_id) if part)
        if not run_id:
            raise InspectLogError(log_path, "the eval has neither a run_id nor an eval_id")
        task_version = spec.task_version
        return cls(
            log_path=log_path,
            model=mapping.model or spec.model,
            model_release=mapping.model_release,
            harness=mapping.harness or _harness_name(header),
            harness_version=mapping.harness_version
            or (spec.packages or {}).get("inspect_ai")
            or "unknown",
            run_id=run_id,
            suite=mapping.suite or spec.task,
            suite_version=mapping.suite_version
            or (str(task_version) if task_version is not None else "0"),
            task=spec.task,
        )


def _harness_name(header: Any) -> str:
    spec = header.eval
    if spec.solver:
        return str(spec.solver)
    steps = [step.solver for step in (header.plan.steps if header.plan else [])]
    return "+".join(steps) if steps else "inspect"


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
    if (post_state := _post_state(sample, mapping)) is not None:
        record["post_state"] = post_state
    try:
        RunRecord.model_validate(record)
    except ValidationError as error:
        first = error.errors()[0]
        location = ".".join(str(part) for part in first["loc"]) or "record"
        raise _Unmappable(location, first["msg"]) from error
    return record


def _post_state(sample: Any, mapping: ImportMapping) -> dict[str, Any] | None:
    """The post-state the log holds where ``mapping.post_state`` points; None (not observed)
    when it holds none there: an empty store or a missing key is never "nothing changed"."""
    if mapping.post_state is None:
        return None
    source, _, key = mapping.post_state.partition(":")
    if source not in ("store", "metadata") or (source == "metadata" and not key):
        raise _Unmappable(
            "post_state",
            f"mapping post_state {mapping.post_state!r}: use store, store:<key> or metadata:<key>",
        )
    found: Any = (sample.store if source == "store" else sample.metadata) or {}
    if key:
        found = found.get(key)
    if found is None or (found == {} and not key):
        return None
    if not isinstance(found, dict):
        raise _Unmappable(
            "post_state", f"{mapping.post_state} holds {type(found).__name__}, not an object"
        )
    return found


def _placeholders(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}


def _check_instance_id_format(template: str) -> None:
    names = _placeholders(template)
    unknown = names - INSTANCE_ID_PLACEHOLDERS
    if unknown or not names:
        raise ValueError(
            f"instance_id_format {template!r} must use only the placeholders "
            f"{sorted(INSTANCE_ID_PLACEHOLDERS)} (and at least one)"
        )


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
    if sample.output and sample.output.stop_reason == "content_filter":
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


# --------------------------------------------------------------------------- attachments


def _resolve(text: str, attachments: Mapping[str, str], where: str) -> str:
    for protocol in (ATTACHMENT_PROTOCOL, LEGACY_ATTACHMENT_PROTOCOL):
        if text.startswith(protocol):
            key = text[len(protocol) :]
            if key not in attachments:
                raise _Unmappable(where, f"unresolvable attachment reference {text!r}")
            return attachments[key]
    return text


def _resolve_json(value: Any, attachments: Mapping[str, str], where: str) -> Any:
    if isinstance(value, str):
        return _resolve(value, attachments, where)
    if isinstance(value, dict):
        return {k: _resolve_json(v, attachments, f"{where}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [_resolve_json(v, attachments, f"{where}[{i}]") for i, v in enumerate(value)]
    return value


# --------------------------------------------------------------------------- judgments


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


def _refusal_verdict(value: Any) -> str:
    """Map a refusal judge's score: see docs/importers.md for the table."""
    if isinstance(value, bool):
        return "refused" if value else "complied"
    if isinstance(value, int | float):
        if value == 1:
            return "refused"
        if value == 0:
            return "complied"
        if 0 < value < 1:
            return "partial"
    if isinstance(value, str):
        verdict = value.strip().lower()
        verdict = {"refusal": "refused", "compliance": "complied", "compliant": "complied"}.get(
            verdict, verdict
        )
        if verdict in JUDGE_REFUSALS:
            return verdict
    raise _Unmappable("judgments.refusal", f"cannot map refusal score value {value!r}")


def _completion_verdict(value: Any, threshold: float) -> bool:
    """Map a task-completion score: see docs/importers.md for the table."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value >= threshold
    if isinstance(value, str):
        # Inspect's CORRECT / INCORRECT / PARTIAL / NOANSWER letters, and plain words.
        verdict = {"c": True, "correct": True, "yes": True, "true": True}.get(value.lower())
        if verdict is None and value.lower() in ("i", "p", "n", "incorrect", "no", "false"):
            verdict = False
        if verdict is not None:
            return verdict
    raise _Unmappable(
        "judgments.task_completed", f"cannot map task-completion score value {value!r}"
    )
