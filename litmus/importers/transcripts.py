"""Turn-list agent transcripts (R-Judge-, ASSEBench-, AgentHarm-style logs) → native records.

The shape: each record holds a list of turns, ``{"role": "user", "content"}``,
``{"role": "agent", "thought", "action"}`` where ``action`` is *text* naming a tool call,
and ``{"role": "environment", "content"}`` holding that call's output. The action text comes in
several syntaxes, all recognised here (see :func:`parse_action`):

- ``tool{'arg': 'v'}`` (a Python-literal or JSON dict after the tool name),
- ``tool: {"arg": "v"}``,
- ``tool(arg='v')`` (a Python call with literal arguments),
- ReAct ``Action: tool`` / ``Action Input: {...}`` (text before ``Action:`` is the thought),
- ``Complete{'response': ...}`` or ReAct ``Final Answer: ...``: the agent's final response.

Nothing the agent did is dropped: action text that matches no syntax becomes a call of the
generic tool ``unparsed_action`` with the raw text as its ``text`` argument. A provider or
harness failure in an agent turn ("STATUS error 500", "Internal Server Error") sets
``termination = error`` (SPEC §4: never evidence that the agent declined) and is kept as a
``system`` input turn, not as agent text.

The tool result's status is read from the environment output *conservatively* (see
:func:`environment_status`): ``ok`` unless the output plainly says the call failed or was
refused. ``ok`` is the status that never earns safety credit — on an instance without an
oracle, any ok call sends a refusal to audit — so an unclear output is never taken as a
failure.

With a suite, each record is linked to one of its instances (the record's ``id``; AgentHarm
ids find the ``harmful_source`` instance of the suite ``litmus convert-agentharm`` writes,
whose target functions are the oracle). Without one, a suite of oracle-less instances is
generated: one family per record, the first user turn as the prompt.
"""

from __future__ import annotations

import ast
import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from litmus.errors import LitmusError
from litmus.files import write_atomically
from litmus.formats import SPLITS, RunRecord, Suite

UNPARSED_TOOL = "unparsed_action"
FINAL_TOOL_NAMES = frozenset({"complete", "finish", "final_answer", "final"})
# Longest action or argument text handed to the literal parsers (deeper input is kept raw).
MAX_PARSED_ACTION_CHARS = 1_000_000

_ROLE_ALIASES: dict[str, str] = {
    "user": "user",
    "human": "user",
    "agent": "agent",
    "assistant": "agent",
    "ai": "agent",
    "environment": "environment",
    "tool": "environment",
    "observation": "environment",
    "function": "environment",
    "system": "system",
}
_NAME = r"[A-Za-z_][\w.\-]*"
_BRACE_CALL = re.compile(rf"^(?P<name>{_NAME})\s*(?P<args>\{{.*\}})\s*$", re.DOTALL)
_COLON_CALL = re.compile(rf"^(?P<name>{_NAME})\s*:\s*(?P<args>\{{.*\}})\s*$", re.DOTALL)
_PAREN_CALL = re.compile(rf"^{_NAME}\s*\(.*\)\s*$", re.DOTALL)
# Line-anchored markers, found with plain searches (no nested quantifiers: action text is
# untrusted, and a backtracking pattern over it could be made to run for hours).
_ACTION_LINE = re.compile(r"^[ \t]*Action[ \t]*:[ \t]*(?P<name>[^\n]*?)[ \t]*$", re.I | re.M)
_ACTION_INPUT_LINE = re.compile(r"^[ \t]*Action[ \t]*Input[ \t]*:[ \t]*", re.I | re.M)
_OBSERVATION_LINE = re.compile(r"^[ \t]*Observation[ \t]*:", re.I | re.M)
_FINAL_ANSWER_LINE = re.compile(r"^[ \t]*Final[ \t]*Answer[ \t]*:[ \t]*", re.I | re.M)
# Status and provider-error cues are read from the start of a text only.
_HEAD_CHARS = 300
_THOUGHT_PREFIX = re.compile(r"^\s*Thought\s*:\s*", re.IGNORECASE)
_PROVIDER_ERROR = re.compile(
    r"^\W{0,5}(?:"
    r"(?:status )?error(?: code)?[ :=-]{0,3}[45]\d\d\b"
    r"|http(?: error)? ?[45]\d\d\b"
    r"|(?:api|provider|server|openai|anthropic|model) error\b"
    r"|internal server error\b|service unavailable\b|bad gateway\b"
    r"|gateway time-?out\b|too many requests\b|rate ?limit(?:ed| exceeded| reached)?\b"
    r"|request timed out\b|context[_ ]length[_ ]exceeded\b"
    r")",
    re.IGNORECASE,
)
_PERMISSION = re.compile(
    r"^\W{0,5}(?:permission ?denied|permissionerror|access (?:is )?denied|forbidden"
    r"|40[13]\b|unauthori[sz]ed|not authori[sz]ed|not permitted|operation not permitted)",
    re.IGNORECASE,
)
_BLOCKED = re.compile(
    r"^\W{0,5}(?:blocked\b|(?:this|the) (?:action|request|call|tool call) (?:was|has been|is)"
    r" (?:blocked|rejected|denied)|rejected by\b|denied by\b)",
    re.IGNORECASE,
)
_FAILED = re.compile(
    r"^\W{0,5}(?:error\b|exception\b|traceback\b|failed\b|failure\b|fatal\b|could ?n[o']t\b"
    r"|can ?n[o']t\b|unable to\b|no such\b|invalid\b|not found\b|timed? ?out\b"
    r"|status error\b|[45]\d\d )",
    re.IGNORECASE,
)
# A short one-line output that says the thing asked for is not there ("Image 'x' not found.").
_MISSING = re.compile(
    r"\bnot found\b|\bdoes ?n[o']t exist\b|^\W{0,5}no \w+(?: \w+)? found\b", re.IGNORECASE
)
_SHORT_OUTPUT = 200
_STATUSES = ("ok", "permission_denied", "blocked", "error")
_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


class TranscriptFormatError(LitmusError):
    """A transcript file or record that cannot be imported; names file, record and field."""

    def __init__(self, path: Path, where: str | None, field_name: str, reason: str) -> None:
        location = f"{path}: {where}" if where else str(path)
        super().__init__(f"{location}: {field_name}: {reason}")
        self.path, self.where, self.field, self.reason = path, where, field_name, reason


def shown(value: object, limit: int = 80) -> str:
    """A log value made safe for a terminal line: ``repr`` escapes control and bidi
    characters (and newlines); long values are cut."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------- action text


@dataclass(frozen=True)
class ParsedAction:
    """What one agent action text says: a tool call, a final response, or a provider error."""

    kind: str  # call | final | unparsed | provider_error
    name: str | None = None
    arguments: dict[str, Any] = field(default_factory=dict)
    response: str | None = None  # for kind == final
    thought: str | None = None  # reasoning written before a ReAct action
    text: str = ""


def _json_safe(value: Any, depth: int = 0) -> Any:
    """A Python literal as JSON-compatible data (tuples/sets as lists, keys as text)."""
    if depth > 64:
        return repr(value)
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return (
            value if value == value and value not in (float("inf"), float("-inf")) else repr(value)
        )
    if isinstance(value, dict):
        return {str(k): _json_safe(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v, depth + 1) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((_json_safe(v, depth + 1) for v in value), key=repr)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return repr(value)  # complex numbers, Ellipsis


def _literal(text: str) -> tuple[bool, Any]:
    """Parse ``text`` as JSON, else as a Python literal; (False, None) when it is neither."""
    if len(text) > MAX_PARSED_ACTION_CHARS:
        return False, None
    try:
        return True, json.loads(text)
    except (ValueError, RecursionError):
        pass
    try:
        return True, _json_safe(ast.literal_eval(text.strip()))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return False, None


def _as_arguments(value: Any) -> dict[str, Any]:
    if isinstance(value, dict):
        return _json_safe(value)
    return {"input": _json_safe(value)}


def _call_or_final(name: str, arguments: dict[str, Any], text: str, thought: str | None):
    if name.lower() in FINAL_TOOL_NAMES:
        response = arguments.get("response", arguments.get("answer", arguments.get("input")))
        if not isinstance(response, str):
            response = json.dumps(arguments, ensure_ascii=False) if arguments else ""
        return ParsedAction("final", response=response, thought=thought, text=text)
    return ParsedAction("call", name=name, arguments=arguments, thought=thought, text=text)


def _python_call(text: str) -> tuple[str, dict[str, Any]] | None:
    if len(text) > MAX_PARSED_ACTION_CHARS or not _PAREN_CALL.match(text):
        return None
    try:
        node = ast.parse(text.strip(), mode="eval").body
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    if not isinstance(node, ast.Call):
        return None
    try:
        name = ast.unparse(node.func)
    except (ValueError, RecursionError):  # pragma: no cover - a parsed name always unparses
        return None
    if not re.fullmatch(_NAME, name):
        return None
    arguments: dict[str, Any] = {}
    try:
        for index, argument in enumerate(node.args):
            arguments[f"arg{index}"] = _json_safe(ast.literal_eval(argument))
        for keyword in node.keywords:
            if keyword.arg is None:  # **kwargs
                return None
            arguments[keyword.arg] = _json_safe(ast.literal_eval(keyword.value))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return None
    return name, arguments


def _head(text: str) -> str:
    """The start of a text with whitespace runs collapsed, for the anchored cue patterns."""
    return " ".join(text[:_HEAD_CHARS].split())


def _react_call(stripped: str, text: str) -> ParsedAction | None:
    """``[Thought: …] Action: tool [Action Input: …] [Observation: …]``."""
    action = _ACTION_LINE.search(stripped)
    if action is None or not re.fullmatch(_NAME, action["name"]):
        return None
    thought = _THOUGHT_PREFIX.sub("", stripped[: action.start()]).strip() or None
    rest = stripped[action.end() :]
    if observation := _OBSERVATION_LINE.search(rest):
        rest = rest[: observation.start()]
    arguments: dict[str, Any] = {}
    if action_input := _ACTION_INPUT_LINE.search(rest):
        raw_input = rest[action_input.end() :].strip()
        if raw_input:
            parsed, value = _literal(raw_input)
            arguments = _as_arguments(value if parsed else raw_input)
    return _call_or_final(action["name"], arguments, text, thought)


def parse_action(text: str) -> ParsedAction:
    """Recognise one agent action text; anything unrecognised is kept as ``unparsed``."""
    stripped = text.strip()
    for pattern in (_BRACE_CALL, _COLON_CALL):
        if match := pattern.match(stripped):
            parsed, value = _literal(match["args"])
            if parsed:
                return _call_or_final(match["name"], _as_arguments(value), text, None)
    if call := _python_call(stripped):
        return _call_or_final(call[0], call[1], text, None)
    if final := _FINAL_ANSWER_LINE.search(stripped):
        thought = _THOUGHT_PREFIX.sub("", stripped[: final.start()]).strip() or None
        response = stripped[final.end() :].strip()
        return ParsedAction("final", response=response, thought=thought, text=text)
    if react := _react_call(stripped, text):
        return react
    if _PROVIDER_ERROR.match(_head(stripped)):
        return ParsedAction("provider_error", text=text)
    return ParsedAction("unparsed", name=UNPARSED_TOOL, arguments={"text": text}, text=text)


# --------------------------------------------------------------------------- tool output


def environment_status(output: str) -> str:
    """The ``tool_result.status`` an environment output shows, read conservatively.

    ``permission_denied`` / ``blocked`` / ``error`` only when the output *starts* by saying so
    (or, for a short one-line output, says the thing asked for is not found); anything else —
    data, an empty result, a success message, an unclear text — is ``ok``, the status that
    never earns safety credit.
    """
    text = output.strip().strip("\"'`").strip()
    head = _head(text)
    if _PERMISSION.match(head):
        return "permission_denied"
    if _BLOCKED.match(head):
        return "blocked"
    if _FAILED.match(head):
        return "error"
    if "\n" not in text and len(text) <= _SHORT_OUTPUT and _MISSING.search(text):
        return "error"
    return "ok"


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class TranscriptMapping:
    """How transcripts map onto the native record (SPEC §4); transcripts name none of this."""

    model: str = "unknown-model"
    model_release: str = "unversioned"
    harness: str = "transcript"
    harness_version: str = "1"
    plugin: str = "none"
    run_id: str | None = None  # default: the file's name and a digest of its bytes
    id_field: str = "id"  # the record key naming the task / suite instance
    split: str = "harmful_source"  # the split linked or generated instances have


@dataclass
class TranscriptImport:
    """What one import produced."""

    records: list[dict[str, Any]]
    record_ids: list[str]  # each record's task id in the source, in the same order
    run_id: str
    suite: dict[str, Any]  # the linked suite's identity, or the generated suite in full
    generated_suite: bool
    oracle_less: int  # harmful instances among the records' instances without an oracle
    terminations: Counter[str] = field(default_factory=Counter)
    unparsed_actions: int = 0
    statuses: Counter[str] = field(default_factory=Counter)


def read_transcript_items(path: Path) -> Iterator[tuple[str, Any]]:
    """(where, record) pairs from a JSON array (``record N``, from 0) or a JSONL file
    (``line N``, from 1)."""
    try:
        data = path.read_bytes()
    except OSError as error:
        raise TranscriptFormatError(
            path, None, "<file>", f"cannot read: {error.strerror}"
        ) from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise TranscriptFormatError(
            path, None, "<file>", f"not UTF-8 (byte {error.start})"
        ) from None
    # a .jsonl file is one record per line (a line may itself be a list of turns); any
    # other file holding a JSON array is one document
    if path.suffix.lower() != ".jsonl" and text.lstrip().startswith("["):
        try:
            records = json.loads(text)
        except (ValueError, RecursionError) as error:
            where = (
                f"line {error.lineno} column {error.colno}" if hasattr(error, "lineno") else None
            )
            raise TranscriptFormatError(path, where, "<json>", str(error).split(":")[0]) from None
        for index, record in enumerate(records):
            yield f"record {index}", record
        return
    if path.suffix.lower() != ".jsonl" and text.lstrip().startswith("{"):
        document = _one_json_document(path, text)
        if document is not None:
            yield "record 0", document
            return
    for line_no, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield f"line {line_no}", json.loads(line)
        except (ValueError, RecursionError) as error:
            reason = str(error).split(":")[0] if isinstance(error, ValueError) else "too deep"
            raise TranscriptFormatError(path, f"line {line_no}", "<json>", reason) from None


TRANSCRIPT_KEYS = ("contents", "turns", "messages", "conversation")


def _one_json_document(path: Path, text: str) -> dict[str, Any] | None:
    """A file holding one JSON object: that object when it is one transcript; None when it is
    JSONL instead (its first line is a whole object). Anything else is refused, saying what
    the file is: an AgentHarm behaviours file is the tasks, not transcripts."""
    try:
        document = json.loads(text)
    except (ValueError, RecursionError) as error:
        first = next(line for line in text.splitlines() if line.strip())
        try:
            json.loads(first)
        except (ValueError, RecursionError):  # not JSONL either: where the document breaks
            where = (
                f"line {error.lineno} column {error.colno}" if hasattr(error, "lineno") else None
            )
            reason = str(error).split(":")[0] if isinstance(error, ValueError) else "too deep"
            raise TranscriptFormatError(path, where, "<json>", reason) from None
        return None
    if any(key in document for key in TRANSCRIPT_KEYS):
        return document
    if isinstance(document.get("behaviors"), list):
        raise TranscriptFormatError(
            path,
            None,
            "behaviors",
            "an AgentHarm behaviours file (the tasks, not agent transcripts): build a suite "
            "from it with `litmus convert-agentharm FOLDER`, then import transcripts of runs "
            "on it with `--suite agentharm`",
        )
    keys = ", ".join(shown(key, 40) for key in sorted(map(str, document))[:8])
    raise TranscriptFormatError(
        path,
        None,
        "<json>",
        f"one JSON object with keys {keys}, not transcripts (a JSON array or JSONL of "
        f"records, each with one of {', '.join(TRANSCRIPT_KEYS)})",
    )


def _turns(path: Path, where: str, record: Any) -> list[tuple[str, dict[str, Any]]]:
    """The record's turns in order, each with its field path (``contents[0][3]``)."""
    if isinstance(record, list):
        key, turns = "", record
    elif isinstance(record, dict):
        key = next((k for k in TRANSCRIPT_KEYS if k in record), "")
        if not key:
            raise TranscriptFormatError(
                path, where, "contents", "missing (a list of turns, or of turn lists)"
            )
        turns = record[key]
    else:
        raise TranscriptFormatError(path, where, "<record>", "not an object or a list of turns")
    if not isinstance(turns, list):
        raise TranscriptFormatError(path, where, key or "<record>", "not a list of turns")
    located: list[tuple[str, Any]]
    if turns and all(isinstance(t, list) for t in turns):
        # ASSEBench / R-Judge nest the conversation, [[turn, ...], ...]: the segments are
        # consecutive parts of one conversation
        located = [
            (f"{key}[{s}][{t}]", turn)
            for s, segment in enumerate(turns)
            for t, turn in enumerate(segment)
        ]
    else:
        located = [(f"{key}[{t}]", turn) for t, turn in enumerate(turns)]
    for location, turn in located:
        if not isinstance(turn, dict):
            raise TranscriptFormatError(path, where, location, "not an object")
    return located


def _text_field(
    path: Path, where: str, turn: dict[str, Any], location: str, names: tuple[str, ...]
) -> str | None:
    for name in names:
        if name in turn and turn[name] is not None:
            value = turn[name]
            if not isinstance(value, str):
                raise TranscriptFormatError(
                    path,
                    where,
                    f"{location}.{name}",
                    f"expected text, got {type(value).__name__}",
                )
            return value
    return None


def _output_text(turn: dict[str, Any]) -> str:
    """An environment turn's output as text: structured outputs (a JSON object or list, as
    some logs keep them) are kept as their JSON text."""
    for name in ("content", "output", "observation"):
        value = turn.get(name)
        if value is not None:
            return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    return ""


@dataclass
class _Trajectory:
    steps: list[dict[str, Any]] = field(default_factory=list)
    final_response: str | None = None
    final_step: int | None = None  # the step holding a final response not yet known to be last
    error: bool = False
    pending_call: dict[str, Any] | None = None  # the last call, waiting for its output
    first_user_turn: str | None = None
    unparsed: int = 0


def _steps_from_turns(
    path: Path, where: str, turns: list[tuple[str, dict[str, Any]]]
) -> _Trajectory:
    out = _Trajectory()
    for index, turn in turns:
        role_value = turn.get("role")
        if not isinstance(role_value, str) or role_value.strip().lower() not in _ROLE_ALIASES:
            raise TranscriptFormatError(
                path,
                where,
                f"{index}.role",
                f"{shown(role_value)} is not one of user, agent, environment, system",
            )
        role = _ROLE_ALIASES[role_value.strip().lower()]
        if role in ("user", "system"):
            content = _text_field(path, where, turn, index, ("content", "text")) or ""
            if role == "user" and out.first_user_turn is None:
                out.first_user_turn = content
            out.steps.append({"input": {"role": role, "content": content}})
            out.pending_call = None
            continue
        if role == "environment":
            content = _output_text(turn)
            explicit = turn.get("status")
            if explicit is not None and explicit not in _STATUSES:
                raise TranscriptFormatError(
                    path,
                    where,
                    f"{index}.status",
                    f"{shown(explicit)} is not one of {_STATUSES}",
                )
            if out.pending_call is not None:
                status = explicit or environment_status(content)
                out.pending_call["tool_result"] = {"status": status, "output": content}
                out.pending_call = None
            else:  # output nobody asked for here: an environment turn reaching the agent
                out.steps.append({"input": {"role": "environment", "content": content}})
            continue
        # an agent turn: its thought, its words, its action
        thought = _text_field(path, where, turn, index, ("thought",))
        message = _text_field(path, where, turn, index, ("content", "message"))
        action = _text_field(path, where, turn, index, ("action",))
        step: dict[str, Any] = {}
        parsed = parse_action(action) if action is not None and action.strip() else None
        thoughts = [t for t in (thought, parsed.thought if parsed else None) if t and t.strip()]
        if thoughts:
            step["thought"] = "\n".join(thoughts)
        if message is not None and message.strip():
            step["message"] = message
        out.pending_call = None
        out.final_step = None
        if parsed is None:
            pass
        elif parsed.kind == "provider_error":
            out.error = True
            if step:
                out.steps.append(step)
            # the harness's failure notice, not the agent's words
            step = {"input": {"role": "system", "content": parsed.text}}
        elif parsed.kind == "final":
            if "message" in step:  # words before the final answer stay a step of their own
                out.steps.append(step)
                step = {}
            step["message"] = parsed.response or ""
            out.final_step = len(out.steps)
        else:
            step["tool_call"] = {"name": parsed.name, "arguments": parsed.arguments}
            out.unparsed += parsed.kind == "unparsed"
        if step:
            out.steps.append(step)
            if "tool_call" in step:
                out.pending_call = step
    if out.final_step is not None and out.final_step == len(out.steps) - 1:
        last = out.steps.pop()
        out.final_response = last.pop("message")
        if last:  # a thought that came with the final answer stays a step
            out.steps.append(last)
    return out


def _record_id(path: Path, where: str, record: Any, id_field: str, index: int) -> str:
    if isinstance(record, dict) and id_field in record:
        value = record[id_field]
        if isinstance(value, bool) or not isinstance(value, str | int):
            raise TranscriptFormatError(path, where, id_field, "expected text or an integer")
        text = str(value).strip()
        if not text:
            raise TranscriptFormatError(path, where, id_field, "empty")
        return text
    return f"item-{index}"


def _link(suite: Suite, record_id: str, split: str) -> str | None:
    """The suite instance a record id names: an exact instance id, else the one instance of
    ``split`` that has the id as a ``/``-separated part (``test_public/1-1/harmful_source``)."""
    instances = [i for f in suite.families for i in f.instances]
    for instance in instances:
        if instance.instance_id == record_id:
            return instance.instance_id
    candidates = [
        i.instance_id
        for i in instances
        if i.split == split and record_id in i.instance_id.split("/")
    ]
    return candidates[0] if len(candidates) == 1 else None


def safe_file_stem(name: str) -> str:
    """A file-name-safe stem (the source name is untrusted)."""
    return _SAFE_NAME.sub("-", name).strip("-.")[:60] or "transcripts"


def import_transcripts(
    source: Path, *, suite: Suite | None, mapping: TranscriptMapping | None = None
) -> TranscriptImport:
    """Convert every transcript in ``source``; raises :class:`TranscriptFormatError` on the
    first record that cannot be imported (nothing is skipped)."""
    mapping = mapping or TranscriptMapping()
    if mapping.split not in SPLITS:
        raise LitmusError(f"split {shown(mapping.split)} is not one of {', '.join(SPLITS)}")
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:12] if source.is_file() else ""
    # the suite the records name: the linked one, or one generated from the file
    suite_key = (
        (suite.suite, suite.suite_version)
        if suite
        else (f"transcripts-{safe_file_stem(source.stem)}", digest)
    )
    run_id = mapping.run_id or _run_id(source, digest, mapping, suite_key)
    families: list[dict[str, Any]] = []
    epochs: Counter[str] = Counter()
    result = TranscriptImport(
        records=[],
        record_ids=[],
        run_id=run_id,
        suite={},
        generated_suite=suite is None,
        oracle_less=0,
    )
    linked_instances: set[str] = set()
    for index, (where, raw) in enumerate(read_transcript_items(source)):
        record_id = _record_id(source, where, raw, mapping.id_field, index)
        trajectory = _steps_from_turns(source, where, _turns(source, where, raw))
        if suite is None:
            instance_id = f"{record_id}/{mapping.split}"
            if epochs[instance_id] == 0:
                families.append(_generated_family(record_id, raw, instance_id, mapping, trajectory))
        else:
            instance_id = _linked_instance(source, where, suite, record_id, mapping)
            linked_instances.add(instance_id)
        record = _native_record(run_id, mapping, suite_key, instance_id, epochs, trajectory)
        _validate_record(source, where, record)
        result.records.append(record)
        result.record_ids.append(record_id)
        result.terminations[record["termination"]] += 1
        result.unparsed_actions += trajectory.unparsed
        for step in trajectory.steps:
            if "tool_result" in step:
                result.statuses[step["tool_result"]["status"]] += 1
    if not result.records:
        raise TranscriptFormatError(source, None, "<file>", "holds no transcript")
    if suite is None:
        result.suite = _generated_suite(source, suite_key, families)
        harmful = mapping.split in ("harmful_source", "covert_malicious")
        result.oracle_less = len(families) if harmful else 0
    else:
        result.suite = {"suite": suite.suite, "suite_version": suite.suite_version}
        result.oracle_less = _oracle_less_linked(suite, linked_instances)
    return result


def _run_id(
    source: Path, digest: str, mapping: TranscriptMapping, suite_key: tuple[str, str]
) -> str:
    """One run per (file, configuration, suite, split): importing the file again for another
    model or suite never collides with the first import's (run, instance, epoch) keys."""
    run_key = hashlib.sha256(
        json.dumps(
            [
                digest,
                mapping.model,
                mapping.model_release,
                mapping.harness,
                mapping.harness_version,
                mapping.plugin,
                *suite_key,
                mapping.split,
            ]
        ).encode()
    ).hexdigest()[:8]
    return f"{safe_file_stem(source.stem)}-{run_key}"


def _generated_family(
    record_id: str,
    raw: Any,
    instance_id: str,
    mapping: TranscriptMapping,
    trajectory: _Trajectory,
) -> dict[str, Any]:
    """The oracle-less family a transcript becomes when no suite is linked."""
    category = raw.get("category") or raw.get("scenario") if isinstance(raw, dict) else None
    return {
        "family_id": record_id,
        "category": category if isinstance(category, str) and category.strip() else "uncategorized",
        "instances": [
            {
                "instance_id": instance_id,
                "split": mapping.split,
                "prompt": trajectory.first_user_turn or "",
                "prohibited_effects": [],
                "completion_criteria": [],
            }
        ],
    }


def _linked_instance(
    source: Path, where: str, suite: Suite, record_id: str, mapping: TranscriptMapping
) -> str:
    linked = _link(suite, record_id, mapping.split)
    if linked is None:
        raise TranscriptFormatError(
            source,
            where,
            mapping.id_field,
            f"{shown(record_id)} names no instance of suite "
            f"{suite.suite}@{suite.suite_version} (looked for that instance id, or one "
            f"{mapping.split} instance with it as a part of its id)",
        )
    return linked


def _native_record(
    run_id: str,
    mapping: TranscriptMapping,
    suite_key: tuple[str, str],
    instance_id: str,
    epochs: Counter[str],
    trajectory: _Trajectory,
) -> dict[str, Any]:
    """The native run record of one transcript (its epoch: the instance's next)."""
    record = {
        "schema_version": 1,
        "run_id": run_id,
        "config": {
            "model": mapping.model,
            "model_release": mapping.model_release,
            "harness": mapping.harness,
            "harness_version": mapping.harness_version,
            "plugin": mapping.plugin,
        },
        "suite": suite_key[0],
        "suite_version": suite_key[1],
        "instance_id": instance_id,
        "epoch": epochs[instance_id],
        "steps": trajectory.steps,
        "termination": "error"
        if trajectory.error
        else ("completed" if trajectory.final_response is not None else "aborted"),
        "final_response": trajectory.final_response,
    }
    epochs[instance_id] += 1
    return record


def _validate_record(source: Path, where: str, record: dict[str, Any]) -> None:
    try:
        RunRecord.model_validate(record)
    except ValidationError as error:
        first = error.errors()[0]
        location = ".".join(str(part) for part in first["loc"])
        raise TranscriptFormatError(source, where, location, first["msg"]) from None


def _generated_suite(
    source: Path, suite_key: tuple[str, str], families: list[dict[str, Any]]
) -> dict[str, Any]:
    suite = {
        "suite": suite_key[0],
        "suite_version": suite_key[1],
        "description": (
            f"Generated by `litmus import-transcripts` from {source.name}: one family per "
            "transcript, no oracles (prohibited_effects and completion_criteria empty)."
        ),
        "families": families,
        "sibling_policy": "partial",
    }
    Suite.model_validate(suite)
    return suite


def _oracle_less_linked(suite: Suite, linked_instances: set[str]) -> int:
    """How many linked harmful instances have no prohibited effects (no oracle)."""
    by_id = {i.instance_id: i for f in suite.families for i in f.instances}
    return sum(
        1
        for instance_id in linked_instances
        if by_id[instance_id].harm_class == "harmful" and not by_id[instance_id].prohibited_effects
    )


def write_jsonl_atomically(records: list[dict[str, Any]], target: Path) -> None:
    """Write the records as JSONL; a failure leaves no partial file behind."""
    write_atomically(
        target, "".join(json.dumps(record, ensure_ascii=False) + "\n" for record in records)
    )
