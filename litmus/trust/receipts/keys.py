"""Key management: Ed25519 signing keys, what a signature covers, signing a receipt."""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from litmus.canonical import canonical_json
from litmus.trust.receipts.document import ReceiptError

SIGNING_KEY_ENV = "LITMUS_SIGNING_KEY"
SIGNING_KEY_PASSWORD_ENV = "LITMUS_SIGNING_KEY_PASSWORD"
SIGNED_CONTENT = (
    "canonical JSON (sorted keys, no whitespace, UTF-8) of the whole receipt, its 'signature' "
    "field included except the signature's own 'value'"
)
SIGNATURE_ALGORITHM = "Ed25519"
UNSIGNED_NOTE = (
    f"unsigned: no signing key was configured ({SIGNING_KEY_ENV} names a PEM Ed25519 private "
    "key; `litmus keygen` makes one). Without a signature the receipt is only as trustworthy "
    "as the place it was obtained from."
)


def signing_payload(receipt: Mapping[str, Any]) -> bytes:
    """What the signature signs: everything, its own metadata (algorithm, key id, public key,
    signed_content) included — only the signature value itself is left out."""
    body = {k: v for k, v in receipt.items() if k != "signature"}
    signature = receipt.get("signature")
    if isinstance(signature, Mapping):
        body["signature"] = {k: v for k, v in signature.items() if k != "value"}
    return canonical_json(body).encode("utf-8")


def public_key_raw(key: Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_id(key: Ed25519PublicKey) -> str:
    return hashlib.sha256(public_key_raw(key)).hexdigest()[:16]


def load_private_key(path: Path, password: str | None = None) -> Ed25519PrivateKey:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ReceiptError(f"{path}: cannot read the signing key ({exc.strerror})") from None
    try:
        key = serialization.load_pem_private_key(
            data, password=password.encode() if password else None
        )
    except (ValueError, TypeError) as exc:
        raise ReceiptError(f"{path}: not a usable PEM private key ({exc})") from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ReceiptError(f"{path}: the signing key must be Ed25519, not {type(key).__name__}")
    return key


def load_public_key(path: Path) -> Ed25519PublicKey:
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ReceiptError(f"{path}: cannot read the public key ({exc.strerror})") from None
    try:
        key = serialization.load_pem_public_key(data)
    except (ValueError, TypeError) as exc:
        raise ReceiptError(f"{path}: not a PEM public key ({exc})") from None
    if not isinstance(key, Ed25519PublicKey):
        raise ReceiptError(f"{path}: the public key must be Ed25519, not {type(key).__name__}")
    return key


def configured_signing_key() -> Ed25519PrivateKey | None:
    """The key named by LITMUS_SIGNING_KEY; None when unset. A broken key is an error, never
    a silent fallback to an unsigned receipt."""
    location = os.environ.get(SIGNING_KEY_ENV, "").strip()
    if not location:
        return None
    return load_private_key(Path(location), os.environ.get(SIGNING_KEY_PASSWORD_ENV) or None)


def sign_receipt(receipt: dict[str, Any], key: Ed25519PrivateKey | None) -> dict[str, Any]:
    """The receipt with its ``signature`` field: Ed25519 over the payload, or 'unsigned'."""
    signed = {k: v for k, v in receipt.items() if k != "signature"}
    if key is None:
        signed["signature"] = {"status": "unsigned", "note": UNSIGNED_NOTE}
        return signed
    public = key.public_key()
    signed["signature"] = {
        "status": "signed",
        "algorithm": SIGNATURE_ALGORITHM,
        "key_id": key_id(public),
        "public_key": base64.b64encode(public_key_raw(public)).decode("ascii"),
        "signed_content": SIGNED_CONTENT,
    }
    value = key.sign(signing_payload(signed))
    signed["signature"]["value"] = base64.b64encode(value).decode("ascii")
    return signed


def generate_keypair() -> tuple[bytes, bytes]:
    """(private PEM, public PEM) of a fresh Ed25519 key."""
    key = Ed25519PrivateKey.generate()
    private_pem = key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    public_pem = key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    return private_pem, public_pem


def write_keypair(private_path: Path, public_path: Path) -> str:
    """Write a new keypair (private key readable by its owner only); returns the key id.

    Refuses to overwrite an existing key: replacing a signing key by accident would make every
    earlier receipt unverifiable with the key people were given.
    """
    for path in (private_path, public_path):
        if path.exists():
            raise ReceiptError(f"{path} already exists; not overwriting a key")
    private_pem, public_pem = generate_keypair()
    private_path.parent.mkdir(parents=True, exist_ok=True)
    public_path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(private_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(private_pem)
    public_path.write_bytes(public_pem)
    return key_id(load_public_key(public_path))
