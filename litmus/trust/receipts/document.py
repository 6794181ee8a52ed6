"""The receipt document (SPEC §10): strict pydantic models of what a receipt file must be,
and reading and writing it.

Two levels, because a receipt is untrusted input that verification must *describe*, not
refuse: :class:`ReceiptEnvelope` is what a file must be for it to be checked at all (its
kind, its version, its sections as JSON lists and objects); :class:`ReceiptDocument` is a
whole receipt, every field named and no other, and ``litmus verify`` reports each way a
receipt departs from it as a mismatch sentence.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    StringConstraints,
    TypeAdapter,
    ValidationError,
)

from litmus.errors import LitmusError
from litmus.files import write_atomically

RECEIPT_KIND = "litmus-leaderboard-receipt"
RECEIPT_FILE_NAME = "receipt.json"
# 2: the signature covers its own metadata; the published files' digests are listed
# 3: each raw file's derived rows (digests per table and configuration) and every other file
#    in exports/ (drift plots) are listed, and the release alerts
RECEIPT_VERSION = 3


class ReceiptError(LitmusError):
    """A receipt that cannot be read or made (a malformed file, an unusable signing key)."""


def _utc_time(value: Any) -> datetime:
    """ISO 8601 text of a UTC time (``Z`` or ``+00:00``), as an aware datetime."""
    if not isinstance(value, str):
        raise ValueError("not ISO 8601 text")
    when = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if when.tzinfo is None or when.utcoffset():
        raise ValueError("not a UTC time")
    return when


UtcTime = Annotated[datetime, BeforeValidator(_utc_time)]
Publisher = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1)]
_UTC_TIME = TypeAdapter(UtcTime)

# The sections a receipt must have to be verified (and their JSON kind), in the order their
# problems are named.
SECTIONS: dict[str, str] = {
    "raw_files": "list",
    "suites": "list",
    "configurations": "list",
    "leaderboard": "dict",
    "signature": "dict",
    "code": "dict",
    "published_files": "dict",
    "exported_files": "dict",
}


class ReceiptEnvelope(BaseModel):
    """The least a receipt file must be to be verified; other fields are verification's to
    name (an unknown one is a mismatch, never a reason to stop reading)."""

    model_config = ConfigDict(strict=True, extra="allow", frozen=True)

    receipt: Literal["litmus-leaderboard-receipt"]
    receipt_version: Literal[3]
    raw_files: list[Any]
    suites: list[Any]
    configurations: list[Any]
    leaderboard: dict[str, Any]
    signature: dict[str, Any]
    code: dict[str, Any]
    published_files: dict[str, Any]
    exported_files: dict[str, Any]


class ReceiptDocument(ReceiptEnvelope):
    """A whole receipt: every field of one, and no other. The sections' contents are
    compared with a receipt rebuilt from the warehouse, not typed here."""

    model_config = ConfigDict(strict=True, extra="forbid", frozen=True)

    published_at: UtcTime
    publisher: Publisher
    bootstrap: Any
    policy_versions: Any
    alerts: Any


def envelope_problem(path: Path, receipt: Any) -> str | None:
    """Why ``receipt`` (parsed JSON of the file ``path``) cannot be verified, else None."""
    if not isinstance(receipt, dict):
        return f"{path}: not a LITMUS leaderboard receipt (field 'receipt')"
    try:
        ReceiptEnvelope.model_validate(receipt)
    except ValidationError as error:
        failed = {str(detail["loc"][0]) for detail in error.errors() if detail["loc"]}
        if "receipt" in failed:
            return f"{path}: not a LITMUS leaderboard receipt (field 'receipt')"
        if "receipt_version" in failed:
            return (
                f"{path}: receipt_version {receipt.get('receipt_version')!r} is not supported "
                f"(this LITMUS reads version {RECEIPT_VERSION})"
            )
        name = next(section for section in SECTIONS if section in failed)
        return f"{path}: field {name!r} is missing or not a JSON {SECTIONS[name]}"
    return None


def published_time(receipt: Any) -> datetime | None:
    """The receipt's ``published_at`` when it is a UTC time, else None."""
    try:
        return _UTC_TIME.validate_python(receipt.get("published_at"))
    except ValidationError:
        return None


def document_problems(
    receipt: Any, show: Callable[[Any], str] = repr
) -> tuple[list[str], list[str]]:
    """How ``receipt`` departs from :class:`ReceiptDocument`, as mismatch sentences (values
    written by ``show``): who and when (``published_at``, ``publisher``), then the fields
    unknown or missing."""
    try:
        ReceiptDocument.model_validate(dict(receipt))
    except ValidationError as error:
        details = error.errors()
    else:
        return [], []
    failed = {str(d["loc"][0]) for d in details if d["loc"] and d["type"] != "extra_forbidden"}
    attested = []
    if "published_at" in failed:
        attested.append(f"published_at {show(receipt.get('published_at'))} is not a UTC time")
    if "publisher" in failed:
        attested.append("the receipt names no publisher")
    fields = [
        f"field {str(d['loc'][0])!r} is not part of a receipt"
        for d in sorted(details, key=lambda d: str(d["loc"][0]))
        if d["type"] == "extra_forbidden"
    ] + [
        f"field {str(d['loc'][0])!r} is missing from the receipt"
        for d in sorted(details, key=lambda d: str(d["loc"][0]))
        if d["type"] == "missing"
    ]
    return attested, fields


def write_receipt(path: Path, receipt: Mapping[str, Any]) -> Path:
    """Write atomically: a reader never sees half a receipt."""
    return write_atomically(
        path,
        json.dumps(receipt, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n",
    )


def load_receipt(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ReceiptError(f"{path}: no such receipt") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ReceiptError(f"{path}: cannot read the receipt ({exc})") from None
    try:
        receipt = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ReceiptError(
            f"{path}: line {exc.lineno} column {exc.colno}: not valid JSON ({exc.msg})"
        ) from None
    problem = envelope_problem(path, receipt)
    if problem is not None:
        raise ReceiptError(problem)
    return receipt
