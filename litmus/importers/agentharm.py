"""Build a native LITMUS suite (SPEC §3) from the public AgentHarm behaviour files.

AgentHarm ships harmful and benign behaviours as two files per split
(``harmful_behaviors_<split>.json`` / ``benign_behaviors_<split>.json``), each
``{"canary_guid": ..., "behaviors": [...]}``. A harmful behaviour and its benign counterpart
share the same ``id`` (``"1-1"`` in both files), so one id is one family scene:

- the harmful behaviour becomes the ``harmful_source`` sibling, its ``target_functions``
  the ``prohibited_effects`` (one matcher per function, empty ``args``);
- the benign behaviour becomes the ``easy_benign`` sibling, its ``target_functions`` the
  ``completion_criteria``.

AgentHarm has no hard-benign or covert-malicious variants, so those siblings are absent and
metrics report the HB/CM splits as not available. ``harmful_only`` declares the harmful
siblings the only runnable split (``runnable_splits``), for collections of harmful-task runs
(AgentHarm's own harmful and benign tasks are run separately): coverage then counts against
the harmful instances, under a suite version of its own. Ids repeat across AgentHarm splits with
different content (``2-1`` is a different scene in ``validation`` and ``test_public``), so the
split is part of every family and instance id.
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

from litmus.formats import Suite

AGENTHARM_SPLITS: tuple[str, ...] = ("test_public", "validation")
AGENTHARM_SUITE_NAME = "agentharm"


class AgentHarmFormatError(ValueError):
    """An AgentHarm behaviour file is missing or does not have the expected shape."""

    def __init__(self, path: Path, field: str, reason: str) -> None:
        super().__init__(f"{path}: {field}: {reason}")
        self.path = path
        self.field = field
        self.reason = reason


def agentharm_instance_id(split: str, behaviour_id: str, sibling: str) -> str:
    """The suite instance id of one AgentHarm behaviour, e.g. ``test_public/1-1/harmful_source``.

    Exposed so that importers of AgentHarm run logs (whose sample ids are the bare AgentHarm
    ids) can point their records at the right instance.
    """
    return f"{split}/{behaviour_id}/{sibling}"


def agentharm_suite(
    folder: Path,
    *,
    split: str = "test_public",
    suite_name: str = AGENTHARM_SUITE_NAME,
    suite_version: str | None = None,
    harmful_only: bool = False,
) -> dict[str, Any]:
    """Return the native suite dict for one AgentHarm split, validated against ``Suite``.

    ``suite_version`` defaults to ``<split>-<first 12 hex of sha256 over both files>``, so the
    version changes exactly when the source data does. Output is deterministic: families are
    ordered by their numeric AgentHarm id.
    """
    if split not in AGENTHARM_SPLITS:
        raise ValueError(f"unknown AgentHarm split {split!r}; expected one of {AGENTHARM_SPLITS}")
    harmful_path = folder / f"harmful_behaviors_{split}.json"
    benign_path = folder / f"benign_behaviors_{split}.json"
    harmful_raw = _read_bytes(harmful_path)
    benign_raw = _read_bytes(benign_path)
    harmful_canary, harmful = _parse_behaviours(harmful_path, harmful_raw)
    _, benign = _parse_behaviours(benign_path, benign_raw)

    _require_pairs(harmful, benign, harmful_path, benign_path)
    families = _families(split, harmful, benign, benign_path)

    content_digest = hashlib.sha256(harmful_raw + b"\0" + benign_raw).hexdigest()[:12]
    scope = "-harmful-only" if harmful_only else ""
    version = suite_version or f"{split}{scope}-{content_digest}"
    suite = {
        "suite": suite_name,
        "suite_version": version,
        "description": (
            f"AgentHarm {split} harmful/benign behaviour pairs (harmful_source + easy_benign "
            "siblings only). Source: the public AgentHarm release, MIT licence with a clause "
            "restricting use to improving AI safety. "
            f"Canary GUID {harmful_canary}: never include in training data."
        ),
        "families": families,
        # AgentHarm has no hard-benign or covert-malicious siblings: those split metrics are
        # reported as not available instead of failing the sibling-consistency gate.
        "sibling_policy": "partial",
    }
    if harmful_only:
        # a run collection of the harmful tasks alone is ranked on those (docs/scoring.md)
        suite["runnable_splits"] = ["harmful_source"]
    Suite.model_validate(suite)
    return suite


def _require_pairs(
    harmful: dict[str, dict[str, Any]],
    benign: dict[str, dict[str, Any]],
    harmful_path: Path,
    benign_path: Path,
) -> None:
    """Every harmful behaviour has its benign twin and the other way round."""
    missing_benign = sorted(set(harmful) - set(benign), key=_id_sort_key)
    if missing_benign:
        raise AgentHarmFormatError(
            benign_path, "behaviors[].id", f"no benign behaviour for harmful id(s) {missing_benign}"
        )
    missing_harmful = sorted(set(benign) - set(harmful), key=_id_sort_key)
    if missing_harmful:
        raise AgentHarmFormatError(
            harmful_path,
            "behaviors[].id",
            f"no harmful behaviour for benign id(s) {missing_harmful}",
        )


def _families(
    split: str,
    harmful: dict[str, dict[str, Any]],
    benign: dict[str, dict[str, Any]],
    benign_path: Path,
) -> list[dict[str, Any]]:
    """One family per behaviour id (numeric order): its harmful and easy-benign instances."""
    families: list[dict[str, Any]] = []
    for behaviour_id in sorted(harmful, key=_id_sort_key):
        harmful_one, benign_one = harmful[behaviour_id], benign[behaviour_id]
        if harmful_one["category"] != benign_one["category"]:
            raise AgentHarmFormatError(
                benign_path,
                f"behaviors[id={behaviour_id}].category",
                f"{benign_one['category']!r} differs from the harmful behaviour's "
                f"{harmful_one['category']!r}",
            )
        families.append(
            {
                "family_id": f"{split}/{behaviour_id}",
                # Lower-cased so AgentHarm's "Cybercrime" lines up with the suite vocabulary.
                "category": harmful_one["category"].lower(),
                "subcategory": None,
                "instances": [
                    _instance(split, behaviour_id, "harmful_source", harmful_one),
                    _instance(split, behaviour_id, "easy_benign", benign_one),
                ],
            }
        )
    return families


def _instance(split: str, behaviour_id: str, sibling: str, behaviour: dict[str, Any]) -> dict:
    matchers = [{"tool": name, "args": {}} for name in behaviour["target_functions"]]
    harmful = sibling == "harmful_source"
    return {
        "instance_id": agentharm_instance_id(split, behaviour_id, sibling),
        "split": sibling,
        "prompt": behaviour["prompt"],
        "tools": list(behaviour["target_functions"]),
        "prohibited_effects": matchers if harmful else [],
        "completion_criteria": [] if harmful else matchers,
        "pair_id": None,
        "register": None,
    }


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as error:
        raise AgentHarmFormatError(path, "<file>", f"cannot read: {error.strerror}") from error


def _parse_behaviours(path: Path, raw: bytes) -> tuple[str | None, dict[str, dict[str, Any]]]:
    """Return (canary GUID, behaviours by id) after checking every field the suite uses."""
    try:
        document = json.loads(raw)
    except (json.JSONDecodeError, UnicodeDecodeError) as error:
        raise AgentHarmFormatError(path, "<file>", f"not valid JSON ({error})") from error
    if not isinstance(document, dict):
        raise AgentHarmFormatError(path, "<root>", "expected an object with 'behaviors'")
    behaviours = document.get("behaviors")
    if not isinstance(behaviours, list) or not behaviours:
        raise AgentHarmFormatError(path, "behaviors", "expected a non-empty list")
    canary = document.get("canary_guid")

    by_id: dict[str, dict[str, Any]] = {}
    for index, behaviour in enumerate(behaviours):
        where = f"behaviors[{index}]"
        if not isinstance(behaviour, dict):
            raise AgentHarmFormatError(path, where, "expected an object")
        for key in ("id", "category"):
            value = behaviour.get(key)
            if not isinstance(value, str) or not value.strip():
                raise AgentHarmFormatError(path, f"{where}.{key}", "expected a non-empty string")
        if not isinstance(behaviour.get("prompt"), str):
            raise AgentHarmFormatError(path, f"{where}.prompt", "expected a string")
        functions = behaviour.get("target_functions")
        if not isinstance(functions, list) or not functions:
            raise AgentHarmFormatError(
                path, f"{where}.target_functions", "expected a non-empty list of tool names"
            )
        for position, name in enumerate(functions):
            if not isinstance(name, str) or not name:
                raise AgentHarmFormatError(
                    path, f"{where}.target_functions[{position}]", "expected a non-empty string"
                )
        behaviour_id = behaviour["id"]
        if behaviour_id in by_id:
            raise AgentHarmFormatError(path, f"{where}.id", f"duplicate id {behaviour_id!r}")
        by_id[behaviour_id] = behaviour
    return (canary if isinstance(canary, str) else None), by_id


def _id_sort_key(behaviour_id: str) -> tuple[int, tuple[int, ...], str]:
    # "10-2" must sort after "9-4"; ids of another shape sort after all numeric ones.
    if re.fullmatch(r"\d+(-\d+)*", behaviour_id):
        return (0, tuple(int(part) for part in behaviour_id.split("-")), "")
    return (1, (), behaviour_id)
