"""Command-line subcommands of the trust domain: ``litmus verify`` and ``litmus keygen``.

The handlers import what they use, so building the parser (for every command) stays cheap.
"""

import argparse
import os
from pathlib import Path

from litmus.errors import LitmusError, require_file
from litmus.settings import LitmusPaths


def default_key_path() -> Path:
    """Outside the state folder (``litmus demo`` wipes that) and outside any checkout."""
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(Path.home(), ".config")
    return Path(config_home) / "litmus" / "signing-key.pem"


# `litmus verify` exits 0 only for a receipt signed by the trusted key with nothing differing;
# 1 when anything differs; this when nothing differs but the origin is not proven.
UNVERIFIED_EXIT = 2


def cmd_verify(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.trust.receipts import (
        RECEIPT_FILE_NAME,
        load_public_key,
        load_receipt,
        verify_receipt,
    )
    from litmus.warehouse import connect_read_only

    if args.receipt is None:  # the home's published receipt
        default = paths.exports / RECEIPT_FILE_NAME
        if not default.is_file():
            raise LitmusError(
                f"nothing published in {paths.home} yet: no receipt at {default} (`litmus run` "
                "publishes a board with its receipt; or name a receipt to verify)"
            )
    receipt_path = require_file(args.receipt or default, "a receipt (JSON)")
    receipt = load_receipt(receipt_path)
    public_key = (
        load_public_key(require_file(args.public_key, "a public key (PEM)"))
        if args.public_key
        else None
    )
    with connect_read_only(paths.duckdb_path) as con:
        result = verify_receipt(
            receipt, con, paths, public_key=public_key, published_dir=receipt_path.parent
        )
    signature = receipt["signature"]
    signed = (
        f"signed by key {signature.get('key_id')}"
        if signature.get("status") == "signed"
        else "unsigned"
    )
    print(
        f"receipt {receipt_path}: published {receipt.get('published_at')} by "
        f"{receipt.get('publisher')}, {signed}"
    )
    print(f"checked against {paths.duckdb_path} and the raw store {paths.raw_store}")
    for line in result.checked:
        print(f"  checked: {line}")
    for line in result.notes:
        print(f"  note: {line}")
    for line in result.mismatches:
        print(f"  MISMATCH: {line}")
    if not result.ok:
        print(f"NOT verified: {len(result.mismatches)} mismatch(es) with the receipt")
        return 1
    if result.unverified:
        for reason in result.unverified:
            print(f"  UNVERIFIED: {reason}")
        print(
            "UNVERIFIED: the published files, the warehouse and the raw store match the "
            "receipt, but nothing proves who published it; pass --public-key with the "
            f"publisher's key (exit {UNVERIFIED_EXIT})"
        )
        return UNVERIFIED_EXIT
    print("verified: the published files, the warehouse and the raw store match the receipt")
    return 0


def cmd_keygen(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.trust.receipts import SIGNING_KEY_ENV, write_keypair

    private_path = Path(args.out) if args.out else default_key_path()
    public_path = private_path.with_name(private_path.stem + ".pub.pem")
    identifier = write_keypair(private_path, public_path)
    print(f"Ed25519 signing key {identifier}")
    print(f"  private key (keep it secret, mode 0600): {private_path}")
    print(f"  public key (give it to whoever verifies): {public_path}")
    print(f"sign receipts:   export {SIGNING_KEY_ENV}={private_path}")
    print(f"verify a receipt: litmus verify RECEIPT --public-key {public_path}")
    return 0


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add this domain's subcommands (each sets ``handler=fn(args, paths) -> int``)."""
    verify = commands.add_parser(
        "verify",
        help="check a leaderboard receipt against the warehouse and the raw store",
        description=(
            "Recompute every hash, fingerprint, gate result and leaderboard row a receipt "
            "states, check the published files byte for byte, and list each difference. "
            "Exit 0 only if everything matches and the signature verifies with --public-key; "
            "1 if anything differs; 2 (UNVERIFIED) if nothing differs but no trusted key "
            "proved who published it."
        ),
    )
    verify.add_argument(
        "receipt", nargs="?", help="the receipt (default: <home>/exports/receipt.json)"
    )
    verify.add_argument(
        "--public-key", help="PEM Ed25519 public key the receipt must be signed with"
    )
    verify.set_defaults(handler=cmd_verify, read_only=True)

    keygen = commands.add_parser("keygen", help="make an Ed25519 keypair for signing receipts")
    keygen.add_argument(
        "--out",
        help=f"private key file (default: {default_key_path()}); the public key goes beside it "
        "as NAME.pub.pem",
    )
    keygen.set_defaults(handler=cmd_keygen)
