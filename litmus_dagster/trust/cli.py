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


def cmd_verify(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.receipts import load_public_key, load_receipt, verify_receipt
    from litmus.warehouse import connect

    receipt_path = require_file(args.receipt, "a receipt (JSON)")
    receipt = load_receipt(receipt_path)
    public_key = (
        load_public_key(require_file(args.public_key, "a public key (PEM)"))
        if args.public_key
        else None
    )
    if not paths.duckdb_path.exists():
        raise LitmusError(f"no warehouse at {paths.duckdb_path} (pick the state folder: --home)")
    with connect(paths.duckdb_path) as con:
        result = verify_receipt(receipt, con, paths, public_key=public_key)
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
    if result.ok:
        print("verified: the warehouse and the raw store match the receipt")
        return 0
    print(f"NOT verified: {len(result.mismatches)} mismatch(es) with the receipt")
    return 1


def cmd_keygen(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.receipts import SIGNING_KEY_ENV, write_keypair

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
            "states and list each difference. Exit 0 only if everything matches."
        ),
    )
    verify.add_argument("receipt", help="the receipt, e.g. .litmus/exports/receipt.json")
    verify.add_argument(
        "--public-key", help="PEM Ed25519 public key the receipt must be signed with"
    )
    verify.set_defaults(handler=cmd_verify)

    keygen = commands.add_parser("keygen", help="make an Ed25519 keypair for signing receipts")
    keygen.add_argument(
        "--out",
        help=f"private key file (default: {default_key_path()}); the public key goes beside it "
        "as NAME.pub.pem",
    )
    keygen.set_defaults(handler=cmd_keygen)
