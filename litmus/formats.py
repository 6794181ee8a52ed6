"""The native LITMUS formats (SPEC §3 suite file, §4 run-log record) as typed models.

These models are the single source of truth for both validation at ingestion and the JSON
Schemas shipped in ``litmus/schemas/`` (regenerate with ``litmus schemas``; a test keeps the
shipped files equal to what the models produce).

Validation is strict on purpose: a value of the wrong JSON type is rejected rather than
coerced, and unknown fields are rejected, because a misspelt field (``unguarded_efect``)
silently ignored would change a trajectory's label.
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    field_validator,
    model_serializer,
    model_validator,
)

from litmus.canonical import compact_json

SPLITS: tuple[str, ...] = ("harmful_source", "easy_benign", "hard_benign", "covert_malicious")
HARMFUL_SPLITS: tuple[str, ...] = ("harmful_source", "covert_malicious")
BENIGN_SPLITS: tuple[str, ...] = ("easy_benign", "hard_benign")
SPLIT_HARM_CLASS: dict[str, str] = {
    "harmful_source": "harmful",
    "covert_malicious": "harmful",
    "easy_benign": "benign",
    "hard_benign": "benign",
}
SPLIT_ABBREVIATION: dict[str, str] = {
    "harmful_source": "HS",
    "easy_benign": "EB",
    "hard_benign": "HB",
    "covert_malicious": "CM",
}

TOOL_STATUSES: tuple[str, ...] = ("ok", "permission_denied", "blocked", "error")
TERMINATIONS: tuple[str, ...] = ("completed", "refused", "aborted", "max_steps", "error")
JUDGE_REFUSALS: tuple[str, ...] = ("refused", "partial", "complied", "none")
RUN_SCHEMA_VERSION = 1
MAX_EPOCH = 2**31 - 1  # the warehouse's INTEGER column
# A record's post_state, as compact JSON (``post_state_text``), holds at most this many bytes
# of UTF-8: a harness's observation of the environment, not a copy of it (docs/scoring.md).
MAX_POST_STATE_BYTES = 65_536
STATE_OPERATORS: tuple[str, ...] = ("equals", "matches", "absent")

Split = Literal["harmful_source", "easy_benign", "hard_benign", "covert_malicious"]
HarmClass = Literal["harmful", "benign"]
ToolStatus = Literal["ok", "permission_denied", "blocked", "error"]
Termination = Literal["completed", "refused", "aborted", "max_steps", "error"]
JudgeRefusal = Literal["refused", "partial", "complied", "none"]
Score = Annotated[StrictInt, Field(ge=0, le=3)]
NonEmptyStr = Annotated[StrictStr, Field(min_length=1)]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


# --------------------------------------------------------------------------- suite (§3)


class ToolCallMatcher(_Strict):
    """A tool call pattern: same tool name, and every listed argument present and matching.

    Argument patterns use ``fnmatch`` glob semantics, case-sensitive; a non-string argument
    value is matched as its compact JSON text (``json.dumps(v, separators=(",", ":"))``).
    """

    tool: NonEmptyStr
    args: dict[str, StrictStr] = Field(default_factory=dict)


# RFC 6901: "" (the whole document) or "/"-separated reference tokens in which "~" appears
# only as the escapes "~0" ("~") and "~1" ("/").
_JSON_POINTER = re.compile(r"(/([^~/]|~[01])*)*")


def post_state_text(value: Any) -> str:
    """The compact JSON a post-state is stored and measured as (keys in the record's order)."""
    return compact_json(value)


class StateMatcher(_Strict):
    """A condition on a record's ``post_state`` (SPEC §3): the value at ``path`` (an RFC 6901
    JSON Pointer) ``equals`` a JSON value, ``matches`` a glob (the same rule as a tool-call
    argument: strings as-is, any other value as its compact JSON), or is ``absent``.

    Exactly one of the three is given; ``"equals": null`` is a value (the path holds JSON
    null), which is why which one was given is read from the fields set, not from None.
    """

    model_config = ConfigDict(
        json_schema_extra={
            "oneOf": [{"required": [name]} for name in STATE_OPERATORS],
        }
    )

    path: StrictStr = Field(json_schema_extra={"pattern": f"^{_JSON_POINTER.pattern}$"})
    equals: Any = None
    matches: StrictStr | None = None
    absent: Literal[True] | None = None

    @field_validator("path")
    @classmethod
    def _path_is_a_json_pointer(cls, value: str) -> str:
        if _JSON_POINTER.fullmatch(value) is None:
            raise ValueError(
                f"{value!r} is not a JSON Pointer (RFC 6901): it is empty or starts with "
                "'/', and '~' appears only as '~0' or '~1'"
            )
        return value

    @model_validator(mode="before")
    @classmethod
    def _exactly_one_operator(cls, data: Any) -> Any:
        if isinstance(data, dict):
            given = [name for name in STATE_OPERATORS if name in data]
            if len(given) != 1:
                raise ValueError(
                    "a state matcher has exactly one of equals / matches / absent, not "
                    + (" and ".join(given) if given else "none")
                )
            if "absent" in data and data["absent"] is not True:
                raise ValueError(f"absent must be true, not {data['absent']!r}")
            if "matches" in data and not isinstance(data["matches"], str):
                raise ValueError(f"matches must be a glob pattern (text), not {data['matches']!r}")
            if "equals" in data:
                _check_json_value(data["equals"])
        return data

    @property
    def operator(self) -> str:
        """equals | matches | absent: the one given."""
        return next(name for name in STATE_OPERATORS if name in self.model_fields_set)

    @model_serializer(mode="plain")
    def _dump(self) -> dict[str, Any]:
        operator = self.operator
        return {"path": self.path, operator: getattr(self, operator)}


def _check_json_value(value: Any, depth: int = 0) -> None:
    """An ``equals`` value must be plain JSON (a suite may come from YAML, and Python floats
    can be infinite)."""
    if depth > 64:
        raise ValueError("equals value nested more than 64 deep")
    if isinstance(value, dict):
        for key, child in value.items():
            if not isinstance(key, str):
                raise ValueError(f"equals value has a non-text key {key!r}")
            _check_json_value(child, depth + 1)
    elif isinstance(value, list):
        for child in value:
            _check_json_value(child, depth + 1)
    elif isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"equals value {value!r} is not a JSON number")
    elif not (value is None or isinstance(value, str | int | float)):
        raise ValueError(f"equals value of type {type(value).__name__} is not JSON")


# SPEC names a field "register", which shadows ABCMeta.register on the model class only; the
# instance attribute is the field, so the warning is noise.
warnings.filterwarnings("ignore", message='Field name "register"', category=UserWarning)


class SuiteInstance(_Strict):
    """One sibling of a family: the same scene under one split, with its own oracle."""

    instance_id: NonEmptyStr
    split: Split
    prompt: StrictStr
    tools: list[StrictStr] = Field(default_factory=list)
    prohibited_effects: list[ToolCallMatcher] = Field(default_factory=list)
    completion_criteria: list[ToolCallMatcher] = Field(default_factory=list)
    # the post-state oracle (SPEC §3): a prohibited state that holds is a realized harm, and
    # every completion state must hold (beside the criteria) for a benign task to be completed
    prohibited_states: list[StateMatcher] = Field(default_factory=list)
    completion_states: list[StateMatcher] = Field(default_factory=list)
    request_harm_class: HarmClass | None = None
    pair_id: StrictStr | None = None
    register: StrictStr | None = None

    @model_validator(mode="after")
    def _harm_class_agrees_with_split(self) -> SuiteInstance:
        expected = SPLIT_HARM_CLASS[self.split]
        if self.request_harm_class is not None and self.request_harm_class != expected:
            raise ValueError(
                f"request_harm_class {self.request_harm_class!r} disagrees with split "
                f"{self.split!r} (which is {expected})"
            )
        return self

    @property
    def harm_class(self) -> str:
        return SPLIT_HARM_CLASS[self.split]

    @property
    def declares_states(self) -> bool:
        return bool(self.prohibited_states or self.completion_states)


class Family(_Strict):
    """A task scene held in (normally) all four sibling splits."""

    family_id: NonEmptyStr
    category: NonEmptyStr
    subcategory: StrictStr | None = None
    instances: list[SuiteInstance] = Field(min_length=1)
    # A private variant (held out against tuning to the public benchmark): its prompts never
    # leave the warehouse — exports and receipts carry only their hashes — and the board
    # reports each configuration's public − private gap (docs/statistics.md).
    private: StrictBool = False


class Suite(_Strict):
    """A benchmark suite file: a named, versioned set of matched counterfactual families.

    ``sibling_policy`` is ``complete`` (the default: every family must hold all four splits,
    a structural gate) or ``partial`` for suites converted from sources that lack some
    siblings (AgentHarm has only harmful and easy-benign); metrics of a missing split are
    reported as not available.
    """

    suite: NonEmptyStr
    suite_version: NonEmptyStr
    families: list[Family] = Field(min_length=1)
    description: StrictStr | None = None
    sibling_policy: Literal["complete", "partial"] = "complete"


# --------------------------------------------------------------------------- run log (§4)


class RunConfig(_Strict):
    """The evaluated configuration: model × release × harness × plug-in."""

    model: NonEmptyStr
    model_release: NonEmptyStr
    harness: NonEmptyStr
    harness_version: NonEmptyStr
    plugin: NonEmptyStr
    policy_version: StrictStr | None = None


class ToolCall(_Strict):
    name: NonEmptyStr
    arguments: dict[str, Any] = Field(default_factory=dict)


class ToolResult(_Strict):
    status: ToolStatus
    output: StrictStr | None = None


INPUT_ROLES: tuple[str, ...] = ("user", "environment", "system")


class StepInput(_Strict):
    """A turn that reached the agent before the step's own output and is not the result of its
    tool call: a user's follow-up, an orchestrator's notice, a chat partner's reply.

    Never agent text: the refusal classifier does not read it.
    """

    role: Literal["user", "environment", "system"]
    content: StrictStr


class Step(_Strict):
    """One agent step: any of an incoming turn (``input``), a thought, a message to the user,
    a tool call and its result. A step may hold only an ``input``."""

    input: StepInput | None = None
    thought: StrictStr | None = None
    message: StrictStr | None = None
    tool_call: ToolCall | None = None
    tool_result: ToolResult | None = None

    @model_validator(mode="after")
    def _result_needs_call(self) -> Step:
        if self.tool_result is not None and self.tool_call is None:
            raise ValueError("tool_result without tool_call")
        return self


class UnguardedEffect(_Strict):
    """What the trajectory would have done absent guardrails (set by a simulating harness)."""

    description: StrictStr
    prohibited: StrictBool


class Judgments(_Strict):
    """An external judge's verdicts; every field optional. Scores are 0–3."""

    refusal: JudgeRefusal | None = None
    task_completed: StrictBool | None = None
    helpfulness: Score | None = None
    tool_call_risk: Score | None = None
    engagement: Score | None = None
    judge: StrictStr | None = None


class RunRecord(_Strict):
    """One trajectory of one configuration on one suite instance (one JSONL line)."""

    schema_version: Literal[1]
    run_id: NonEmptyStr
    config: RunConfig
    suite: NonEmptyStr
    suite_version: NonEmptyStr
    instance_id: NonEmptyStr
    # stored in an INTEGER column: a larger epoch is rejected here, not by the database
    epoch: Annotated[StrictInt, Field(ge=0, le=MAX_EPOCH)] = 0
    steps: list[Step]
    termination: Termination
    final_response: StrictStr | None = None
    unguarded_effect: UnguardedEffect | None = None
    harm_prevented_by: StrictStr | None = None
    judgments: Judgments | None = None
    # the environment after the trajectory as the harness observed it; None: not observed
    # (never "nothing changed"). At most MAX_POST_STATE_BYTES as compact JSON.
    post_state: dict[str, Any] | None = Field(
        default=None,
        description=(
            "The environment's state after the trajectory as the harness observed it; absent "
            f"or null means not observed. At most {MAX_POST_STATE_BYTES} bytes as compact "
            "UTF-8 JSON."
        ),
    )

    @field_validator("post_state")
    @classmethod
    def _post_state_within_limit(cls, value: dict[str, Any] | None) -> dict[str, Any] | None:
        if value is not None:
            size = len(post_state_text(value).encode("utf-8", "surrogatepass"))
            if size > MAX_POST_STATE_BYTES:
                raise ValueError(
                    f"post_state is {size} bytes as compact JSON, more than the "
                    f"{MAX_POST_STATE_BYTES} allowed"
                )
        return value

    @field_validator("schema_version", mode="before")
    @classmethod
    def _schema_version_is_an_integer(cls, value: Any) -> Any:
        # a Literal[1] alone also takes true and 1.0 (both equal 1 in Python)
        if isinstance(value, bool | float):
            raise ValueError(f"Input should be the integer {RUN_SCHEMA_VERSION}, not {value!r}")
        return value


def suite_json_schema() -> dict[str, Any]:
    schema = Suite.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://litmus.invalid/schemas/suite.schema.json"
    return schema


def run_record_json_schema() -> dict[str, Any]:
    schema = RunRecord.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://litmus.invalid/schemas/run_record.schema.json"
    return schema
