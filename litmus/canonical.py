"""JSON as text, each way written once: the canonical text a value is hashed and compared as,
and the compact text a value is stored and matched as.

The canonical text is what every stored digest (run and configuration fingerprints, receipt
rows and boards, signing bodies) was computed over; changing it changes every digest, so
tests/test_canonical_json.py holds it to digests recorded before.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 text, no NaN: the one text a value hashes as."""
    return json.dumps(
        value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
    )


def compact_json(value: Any) -> str:
    """No whitespace, UTF-8 text, keys in the value's own order: how a tool call's arguments
    and a post-state are stored, and a non-string argument is matched."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()
