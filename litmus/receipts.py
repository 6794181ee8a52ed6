"""Result receipts (SPEC §10): what a published leaderboard was computed from, and its check.

A receipt records, for one publication of the leaderboard:

- the SHA-256 of every raw input file, and the suites (name, version, content hash);
- the code that scored them: LITMUS, labeler, refusal-classifier and metric-code versions,
  the git commit when the project is a git checkout, and the bootstrap settings;
- per configuration: its run fingerprints, the publication gate results (or "not evaluated"),
  a digest of its audited labels, its audit verdicts (count, auditors, verdict files, digest)
  and whether it was published or withheld;
- every leaderboard row with the digest of its canonical JSON, and the policy versions;
- who published it and when, and an Ed25519 signature when a signing key is configured.

``verify_receipt`` recomputes all of it from the warehouse and the raw store and describes
every difference in plain words. A receipt proves that the published numbers follow from
those inputs under that code; it does not prove the judge or the inputs were right.
"""

from __future__ import annotations

import base64
import getpass
import hashlib
import importlib.metadata
import json
import math
import os
import platform
import re
import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import pyarrow as pa
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey

from litmus.errors import LitmusError, SuiteError
from litmus.fingerprint import (
    RunFingerprint,
    canonical_json,
    compute_run_fingerprints,
    group_by_configuration,
    sha256_text,
    stored_run_fingerprints,
)
from litmus.ingest import file_sha256
from litmus.labeler import LABELER_VERSION
from litmus.leaderboard import Leaderboard, leaderboard_from_warehouse
from litmus.receipt_document import (
    RECEIPT_KIND,
    RECEIPT_VERSION,
    ReceiptDocument,
    document_problems,
    envelope_problem,
    published_time,
)
from litmus.refusal import default_classifier
from litmus.settings import LitmusPaths
from litmus.suite import load_suite_file, suite_hash
from litmus.warehouse import table_exists

RECEIPT_FILE_NAME = "receipt.json"
SIGNING_KEY_ENV = "LITMUS_SIGNING_KEY"
SIGNING_KEY_PASSWORD_ENV = "LITMUS_SIGNING_KEY_PASSWORD"
PUBLISHER_ENV = "LITMUS_PUBLISHER"
NOT_EVALUATED = "not evaluated"
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
PROJECT_DIR = Path(__file__).resolve().parents[1]
# The metric code: the dbt models and the Python that turns their output into the leaderboard.
METRIC_CODE_GLOBS = (
    "dbt_project/dbt_project.yml",
    "dbt_project/models/**/*.sql",
    "dbt_project/models/**/*.yml",
    "dbt_project/macros/**/*.sql",
    "litmus/stats.py",
    "litmus/leaderboard.py",
)
RAW_STORE_SUFFIXES = (".jsonl", ".eval", ".json")
_SHA256 = re.compile(r"[0-9a-f]{64}")


class ReceiptError(LitmusError):
    """A receipt that cannot be read or made (a malformed file, an unusable signing key)."""


# ----------------------------------------------------------------------------- values


def _plain(value: Any) -> Any:
    """A warehouse value as canonical JSON sees it: NaN is a missing value, numpy is Python."""
    if value is None or value is pd.NA:
        return None
    if isinstance(value, float) and math.isnan(value):
        return None
    if hasattr(value, "item") and not isinstance(value, str | bytes):
        return _plain(value.item())
    if isinstance(value, datetime):
        return value.isoformat()
    return value


def _plain_rows(table: pa.Table) -> list[dict[str, Any]]:
    return [{k: _plain(v) for k, v in row.items()} for row in table.to_pylist()]


def leaderboard_table_rows(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]] | None:
    """The ``leaderboard`` table as published, in its stored order (None without the table)."""
    if not table_exists(con, "leaderboard"):
        return None
    return _plain_rows(con.sql("SELECT * FROM leaderboard").to_arrow_table())


def board_rows(board: Leaderboard) -> list[dict[str, Any]]:
    """Leaderboard rows exactly as they are stored (same Arrow conversion as the asset)."""
    frame = board.rows.copy()
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].astype("string")
    return _plain_rows(pa.Table.from_pandas(frame, preserve_index=False))


def row_digest(values: Mapping[str, Any]) -> str:
    return sha256_text(canonical_json(dict(values)))


def rows_digest(row_digests: Iterable[tuple[str, str]]) -> str:
    """Digest of the whole leaderboard: its (row name, row digest) pairs in published order."""
    return sha256_text(canonical_json([[name, digest] for name, digest in row_digests]))


def short(digest: str | None) -> str:
    return f"{digest[:12]}…" if digest else "none"


# ----------------------------------------------------------------------------- code identity


def git_commit(project_dir: Path = PROJECT_DIR) -> tuple[str | None, bool | None]:
    """(HEAD commit, tree has uncommitted changes) when ``project_dir`` is a git checkout."""
    if not (project_dir / ".git").exists():
        return None, None
    try:
        head = subprocess.run(
            ["git", "-C", os.fspath(project_dir), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if head.returncode != 0:
            return None, None
        # --no-optional-locks: only look; never refresh (and so lock) the checkout's index,
        # which would make a concurrent `git commit` there fail
        status = subprocess.run(
            [
                "git", "--no-optional-locks", "-C", os.fspath(project_dir),
                "status", "--porcelain", "--untracked-files=no",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None, None
    dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    return head.stdout.strip(), dirty


def metric_code_digest(project_dir: Path = PROJECT_DIR) -> str | None:
    """SHA-256 over the metric code files (path and content), None when they are not present."""
    files = sorted({path for pattern in METRIC_CODE_GLOBS for path in project_dir.glob(pattern)})
    if not files:
        return None
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(project_dir).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def code_versions(project_dir: Path = PROJECT_DIR) -> dict[str, Any]:
    commit, dirty = git_commit(project_dir)
    code: dict[str, Any] = {
        "litmus": _package_version("litmus-scoring"),
        "labeler_version": LABELER_VERSION,
        "refusal_classifier_version": default_classifier().version,
        "metric_code_sha256": metric_code_digest(project_dir),
        "duckdb": duckdb.__version__,
        "dbt_core": _package_version("dbt-core"),
        "python": platform.python_version(),
    }
    if commit:  # absent, not null, when the project is not a git checkout
        code["git_commit"] = commit
        code["git_dirty"] = dirty
    return code


def publisher_identity() -> str:
    chosen = os.environ.get(PUBLISHER_ENV, "").strip()
    if chosen:
        return chosen
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return f"uid {os.getuid()}"


# ----------------------------------------------------------------------------- warehouse facts


def _suites(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    return _plain_rows(
        con.sql(
            "SELECT suite, suite_version, suite_hash, source_name FROM suites ORDER BY 1, 2"
        ).to_arrow_table()
    )


def _raw_files(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    return _plain_rows(
        con.sql(
            """
            SELECT file_hash AS sha256, original_name AS name, file_format AS format,
                   size_bytes, records_total, records_accepted, records_quarantined
            FROM raw_files ORDER BY file_hash
            """
        ).to_arrow_table()
    )


def _gates(con: duckdb.DuckDBPyConnection) -> dict[str, list[dict[str, Any]]]:
    if not table_exists(con, "publication_gates"):
        return {}
    gates: dict[str, list[dict[str, Any]]] = {}
    for row in _plain_rows(
        con.sql(
            "SELECT partition_key, gate, passed, message FROM publication_gates "
            "ORDER BY partition_key, gate, message"
        ).to_arrow_table()
    ):
        key = row.pop("partition_key")
        gates.setdefault(key, []).append(row)
    return gates


def _label_digests(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    """partition_key → digest of its audited labels (what the metrics read)."""
    if not table_exists(con, "audited_trajectories"):
        return {}
    return dict(
        con.execute(
            """
            SELECT partition_key,
                   sha256(string_agg(concat_ws('|', trajectory_id, label, outcome,
                                               coalesce(label_source, '')),
                                     chr(10) ORDER BY trajectory_id))
            FROM audited_trajectories GROUP BY partition_key
            """
        ).fetchall()
    )


def _audit_facts(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Any]]:
    """partition_key → its audit verdicts (count, auditors, verdict files, digest): the human
    inputs behind audited labels."""
    if not table_exists(con, "audit_verdicts"):
        return {}
    return {
        row.pop("partition_key"): row
        for row in _plain_rows(
            con.sql(
                """
                SELECT partition_key, count(*) AS verdicts,
                       list_sort(list(DISTINCT auditor)) AS auditors,
                       list_sort(list(DISTINCT source_sha256)) AS verdict_files,
                       sha256(string_agg(
                           concat_ws('|', verdict_id, CAST(load_seq AS VARCHAR), trajectory_id,
                                     verdict, CAST(override AS VARCHAR), auditor,
                                     coalesce(reason, '')),
                           chr(10) ORDER BY load_seq, source_line, verdict_id)) AS digest
                FROM audit_verdicts GROUP BY partition_key ORDER BY partition_key
                """
            ).to_arrow_table()
        )
    }


NO_VERDICTS: dict[str, Any] = {"verdicts": 0}


def _configuration_facts(con: duckdb.DuckDBPyConnection) -> dict[str, dict[str, Any]]:
    """partition_key → config key and policy versions, for every ingested configuration."""
    return {
        row["partition_key"]: row
        for row in _plain_rows(
            con.sql(
                """
                SELECT partition_key, min(config_key) AS config_key,
                       list_sort(list(DISTINCT policy_version), 'ASC', 'NULLS FIRST')
                           AS policy_versions
                FROM raw_trajectories GROUP BY partition_key ORDER BY partition_key
                """
            ).to_arrow_table()
        )
    }


def _bootstrap_settings(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    if not table_exists(con, "metric_cis"):
        return []
    return _plain_rows(
        con.sql(
            "SELECT DISTINCT seed, n_resamples, confidence FROM metric_cis ORDER BY ALL"
        ).to_arrow_table()
    )


def _runs_by_configuration(
    fingerprints: list[RunFingerprint],
) -> dict[str, list[dict[str, Any]]]:
    runs: dict[str, list[dict[str, Any]]] = {}
    for fp in fingerprints:
        runs.setdefault(fp.partition_key, []).append(
            {
                "run_id": fp.run_id,
                "fingerprint": fp.fingerprint,
                "n_trajectories": fp.n_trajectories,
            }
        )
    return runs


def _configurations(
    con: duckdb.DuckDBPyConnection, rows: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    fingerprints = compute_run_fingerprints(con)
    configuration_fps = group_by_configuration(fingerprints)
    runs = _runs_by_configuration(fingerprints)
    gates = _gates(con)
    labels = _label_digests(con)
    audits = _audit_facts(con)
    facts = _configuration_facts(con)
    status = {
        row["partition_key"]: row["status"] for row in rows if row["row_kind"] == "configuration"
    }
    configurations = []
    for key in sorted(set(facts) | set(status)):
        configurations.append(
            {
                "partition_key": key,
                "config_key": facts.get(key, {}).get("config_key"),
                "status": status.get(key, "not on the leaderboard"),
                "policy_versions": facts.get(key, {}).get("policy_versions", []),
                "fingerprint": configuration_fps.get(key),
                "runs": runs.get(key, []),
                "gates": gates.get(key, NOT_EVALUATED),
                "label_digest": labels.get(key),
                "audit": audits.get(key, NO_VERDICTS),
            }
        )
    return configurations


def _leaderboard_section(rows: list[dict[str, Any]]) -> dict[str, Any]:
    entries = [
        {
            "name": row["name"],
            "row_kind": row["row_kind"],
            "partition_key": row["partition_key"],
            "digest": row_digest(row),
            "values": row,
        }
        for row in rows
    ]
    names = [entry["name"] for entry in entries]
    if len(set(names)) != len(names):
        raise ReceiptError("leaderboard rows do not have unique names; cannot issue a receipt")
    return {
        "columns": list(rows[0]) if rows else [],
        "rows": entries,
        "digest": rows_digest((e["name"], e["digest"]) for e in entries),
    }


def build_receipt(
    con: duckdb.DuckDBPyConnection,
    *,
    publisher: str | None = None,
    published_at: datetime | None = None,
    project_dir: Path = PROJECT_DIR,
    published_files: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The unsigned receipt of the leaderboard currently published in the warehouse, with the
    digests of the files it is published as (``litmus.publication.file_digests``)."""
    rows = leaderboard_table_rows(con)
    if rows is None:
        raise ReceiptError("the warehouse has no leaderboard table yet; publish one first")
    configurations = _configurations(con, rows)
    policy_versions = sorted(
        {v for c in configurations for v in c["policy_versions"]},
        key=lambda v: (v is not None, v or ""),
    )
    when = (published_at or datetime.now(UTC)).astimezone(UTC)
    return {
        "receipt": RECEIPT_KIND,
        "receipt_version": RECEIPT_VERSION,
        "published_at": when.isoformat(timespec="seconds").replace("+00:00", "Z"),
        "publisher": publisher or publisher_identity(),
        "code": code_versions(project_dir),
        "bootstrap": _bootstrap_settings(con),
        "policy_versions": policy_versions,
        "suites": _suites(con),
        "raw_files": _raw_files(con),
        "configurations": configurations,
        "leaderboard": _leaderboard_section(rows),
        "published_files": dict(published_files or {}),
    }


# ----------------------------------------------------------------------------- signing


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


# ----------------------------------------------------------------------------- files


def write_receipt(path: Path, receipt: Mapping[str, Any]) -> Path:
    """Write atomically: a reader never sees half a receipt."""
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}")
    partial.write_text(
        json.dumps(receipt, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n",
        encoding="utf-8",
    )
    os.replace(partial, path)
    return path


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


def raw_store_file(paths: LitmusPaths, sha256: str) -> Path | None:
    """Where the raw store keeps the file with this hash; the hash is checked to be 64 hex
    digits before it is used in a path, since it comes from the (untrusted) receipt."""
    if not _SHA256.fullmatch(sha256):
        return None
    for suffix in RAW_STORE_SUFFIXES:
        candidate = paths.raw_store / sha256[:2] / f"{sha256}{suffix}"
        if candidate.is_file():
            return candidate
    return None


# ----------------------------------------------------------------------------- verification


@dataclass
class Verification:
    """What ``litmus verify`` found: mismatches (each one sentence) and notes."""

    mismatches: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    # why the receipt's origin is not proven (no trusted key given, or unsigned); empty when
    # its signature verified with the key the verifier trusts
    unverified: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches

    @property
    def verified(self) -> bool:
        """Nothing differs and the signature verified with the trusted key."""
        return self.ok and not self.unverified


def _show(value: Any, other: Any = None) -> str:
    """A value for a sentence; floats short unless that would hide the difference."""
    if isinstance(value, float) and not isinstance(value, bool):
        brief = f"{value:.6g}"
        if isinstance(other, float) and f"{other:.6g}" == brief and other != value:
            return repr(value)
        return brief
    if value is None:
        return "blank"
    return repr(value) if isinstance(value, str) else str(value)


def _describe_row_difference(
    name: str, receipt_values: Mapping[str, Any], actual: Mapping[str, Any], where: str, label: str
) -> str:
    # In the warehouse's column order (the receipt's JSON is key-sorted): headline numbers first.
    columns = list(dict.fromkeys([*actual, *receipt_values]))
    differing = [
        column
        for column in columns
        if canonical_json(receipt_values.get(column)) != canonical_json(actual.get(column))
    ]
    details = []
    for column in differing[:4]:
        ours, theirs = actual.get(column), receipt_values.get(column)
        if column not in actual:
            details.append(f"{column} is not a column {where}")
        elif column not in receipt_values:
            details.append(f"{column} is not in the receipt")
        else:
            details.append(
                f"{column} {_show(ours, theirs)} {where}, {_show(theirs, ours)} in the receipt"
            )
    if len(differing) > 4:
        details.append(f"and {len(differing) - 4} more column(s)")
    return f"{label} {name!r} differs from the receipt: {'; '.join(details)} (digest mismatch)"


def _compare_rows(
    result: Verification,
    receipt_rows: list[dict[str, Any]],
    actual_rows: list[dict[str, Any]],
    *,
    where: str,
    label: str,
) -> None:
    actual = {row["name"]: row for row in actual_rows}
    expected = {entry["name"]: entry for entry in receipt_rows}
    for name, entry in expected.items():
        row = actual.get(name)
        if row is None:
            result.mismatches.append(f"{label} {name!r} is in the receipt but not {where}")
        elif row_digest(row) != entry["digest"]:
            result.mismatches.append(
                _describe_row_difference(name, entry["values"], row, where, label)
            )
    for name in actual:
        if name not in expected:
            result.mismatches.append(f"{label} {name!r} is {where} but not in the receipt")
    if [n for n in actual if n in expected] != [n for n in expected if n in actual]:
        result.mismatches.append(f"{label}s are in a different order {where} than in the receipt")


def _check_signature(
    result: Verification, receipt: Mapping[str, Any], public_key: Ed25519PublicKey | None
) -> None:
    signature = receipt["signature"]
    if signature.get("status") != "signed":
        if public_key is not None:
            result.mismatches.append(
                "the receipt is unsigned, so it cannot match the given public key"
            )
        else:
            result.notes.append(
                "the receipt is unsigned: it shows what was published, but not who vouches for it"
            )
            result.unverified.append("the receipt is unsigned")
        return
    try:
        embedded = Ed25519PublicKey.from_public_bytes(base64.b64decode(signature["public_key"]))
        value = base64.b64decode(signature["value"], validate=True)
    except (KeyError, TypeError, ValueError):
        result.mismatches.append("the receipt's signature field is malformed")
        return
    for name, expected in (
        ("algorithm", SIGNATURE_ALGORITHM),
        ("key_id", key_id(embedded)),
        ("signed_content", SIGNED_CONTENT),
    ):
        if signature.get(name) != expected:
            result.mismatches.append(
                f"the signature's {name} is {_show(signature.get(name))}, not {_show(expected)}"
            )
    unknown = sorted(set(signature) - SIGNATURE_FIELDS)
    if unknown:
        result.mismatches.append(f"the signature has unknown field(s) {', '.join(unknown)}")
    key = public_key or embedded
    try:
        key.verify(value, signing_payload(receipt))
    except InvalidSignature:
        if public_key is not None:
            extra = (
                f" (the receipt names key {signature.get('key_id')}, the given key is "
                f"{key_id(public_key)})"
                if key_id(public_key) != key_id(embedded)
                else " (the receipt was changed after it was signed)"
            )
            result.mismatches.append(f"signature does not verify with the given public key{extra}")
        else:
            result.mismatches.append(
                "signature does not verify with the public key embedded in the receipt: "
                "the receipt was changed after it was signed"
            )
        return
    if public_key is not None:
        result.checked.append(f"signature verifies with the given public key {key_id(key)}")
    else:
        result.checked.append("signature verifies with the key embedded in the receipt")
        result.notes.append(
            f"signed by key {key_id(embedded)}; pass --public-key to check that it is the key "
            "you trust (anyone can sign a receipt with a key of their own)"
        )
        result.unverified.append(
            f"no trusted public key was given (the receipt's own key {key_id(embedded)} proves "
            "nothing: anyone can re-sign a receipt with a key of their own)"
        )


SIGNATURE_FIELDS = frozenset(
    {"status", "algorithm", "key_id", "public_key", "signed_content", "value"}
)


def _check_internal_digests(result: Verification, receipt: Mapping[str, Any]) -> None:
    section = receipt["leaderboard"]
    entries = section.get("rows", [])
    for entry in entries:
        if row_digest(entry.get("values", {})) != entry.get("digest"):
            result.mismatches.append(
                f"the receipt's digest of leaderboard row {entry.get('name')!r} does not match "
                "the values it lists (the receipt was edited)"
            )
    if rows_digest((e.get("name"), e.get("digest")) for e in entries) != section.get("digest"):
        result.mismatches.append(
            "the receipt's leaderboard digest does not match its rows (the receipt was edited)"
        )


def _check_raw_files(
    result: Verification,
    receipt: Mapping[str, Any],
    con: duckdb.DuckDBPyConnection,
    paths: LitmusPaths,
) -> None:
    in_warehouse = {row["sha256"]: row for row in _raw_files(con)}
    listed = set()
    intact = 0
    for entry in receipt["raw_files"]:
        sha = str(entry.get("sha256", ""))
        listed.add(sha)
        label = f"raw file {short(sha)} ({entry.get('name')})"
        if not _SHA256.fullmatch(sha):
            result.mismatches.append(f"raw file entry {sha!r} in the receipt is not a SHA-256")
            continue
        stored = raw_store_file(paths, sha)
        if stored is None:
            result.mismatches.append(f"{label} is missing from the raw store")
        else:
            now = file_sha256(stored)
            if now != sha:
                result.mismatches.append(f"{label} was modified (sha256 now {short(now)})")
            else:
                intact += 1
        row = in_warehouse.get(sha)
        if row is None:
            result.mismatches.append(f"{label} is in the receipt but not in the warehouse")
            continue
        counts = ("records_total", "records_accepted", "records_quarantined")
        if any(row[c] != entry.get(c) for c in counts):
            result.mismatches.append(
                f"{label}: the warehouse records "
                f"{', '.join(f'{c} {row[c]}' for c in counts)}; the receipt says "
                f"{', '.join(f'{c} {entry.get(c)}' for c in counts)}"
            )
    for sha, row in in_warehouse.items():
        if sha not in listed:
            result.mismatches.append(
                f"raw file {short(sha)} ({row['name']}) is in the warehouse but not in the receipt"
            )
    result.checked.append(
        f"{intact} of {len(receipt['raw_files'])} raw file(s) present and unmodified"
    )


def _suite_file_hashes(
    paths: LitmusPaths, result: Verification
) -> dict[tuple[str, str], tuple[str, str]]:
    from litmus.runs import suite_files

    hashes: dict[tuple[str, str], tuple[str, str]] = {}
    for path in suite_files(paths):
        try:
            suite = load_suite_file(path)
        except SuiteError as exc:
            result.mismatches.append(f"suite file {path.name} no longer loads: {exc}")
            continue
        hashes[(suite.suite, suite.suite_version)] = (suite_hash(suite), path.name)
    return hashes


def _check_suites(
    result: Verification,
    receipt: Mapping[str, Any],
    con: duckdb.DuckDBPyConnection,
    paths: LitmusPaths,
) -> None:
    in_warehouse = {(s["suite"], s["suite_version"]): s for s in _suites(con)}
    files = _suite_file_hashes(paths, result)
    for entry in receipt["suites"]:
        key = (entry.get("suite"), entry.get("suite_version"))
        label = f"suite {key[0]}@{key[1]}"
        stored = in_warehouse.get(key)
        if stored is None:
            result.mismatches.append(f"{label} is in the receipt but not in the warehouse")
        elif stored["suite_hash"] != entry.get("suite_hash"):
            result.mismatches.append(
                f"{label}: content hash in the warehouse is {short(stored['suite_hash'])}, "
                f"the receipt says {short(entry.get('suite_hash'))}"
            )
        on_disk = files.get(key)
        if on_disk is None:
            result.notes.append(f"{label}: no suite file in {paths.suites} to re-hash")
        elif on_disk[0] != entry.get("suite_hash"):
            result.mismatches.append(
                f"{label}: suite file {on_disk[1]} now hashes to {short(on_disk[0])}, "
                f"the receipt says {short(entry.get('suite_hash'))}"
            )
    listed = {(e.get("suite"), e.get("suite_version")) for e in receipt["suites"]}
    for key in in_warehouse:
        if key not in listed:
            result.mismatches.append(
                f"suite {key[0]}@{key[1]} is in the warehouse but not in the receipt"
            )
    result.checked.append(f"{len(receipt['suites'])} suite(s) compared by content hash")


def _check_configurations(
    result: Verification,
    receipt: Mapping[str, Any],
    con: duckdb.DuckDBPyConnection,
    board: Leaderboard | None,
) -> None:
    fingerprints = compute_run_fingerprints(con)
    recomputed_runs = _runs_by_configuration(fingerprints)
    recomputed = group_by_configuration(fingerprints)
    stored = stored_run_fingerprints(con)
    facts = _configuration_facts(con)
    gates = _gates(con)
    labels = _label_digests(con)
    audits = _audit_facts(con)
    status: dict[str, str] = {}
    if board is not None:
        status = {
            row.partition_key: row.status
            for row in board.rows.itertuples()
            if row.row_kind == "configuration"
        }
    listed = set()
    for entry in receipt["configurations"]:
        key = entry.get("partition_key")
        listed.add(key)
        name = entry.get("config_key") or key
        if key not in facts:
            result.mismatches.append(
                f"configuration {name!r} is in the receipt but not in the warehouse"
            )
            continue
        runs = {run["run_id"]: run for run in recomputed_runs.get(key, [])}
        for run in entry.get("runs", []):
            now = runs.pop(run.get("run_id"), None)
            if now is None:
                result.mismatches.append(
                    f"run {run.get('run_id')!r} of configuration {name!r} is in the receipt "
                    "but not in the warehouse"
                )
            elif now["fingerprint"] != run.get("fingerprint"):
                result.mismatches.append(
                    f"run {run.get('run_id')!r} of configuration {name!r}: fingerprint "
                    f"recomputed from the warehouse is {short(now['fingerprint'])}, the receipt "
                    f"says {short(run.get('fingerprint'))}"
                )
            elif (key, now["run_id"]) in stored and stored[(key, now["run_id"])] != now[
                "fingerprint"
            ]:
                result.mismatches.append(
                    f"run {now['run_id']!r} of configuration {name!r}: the run_fingerprints "
                    f"table holds {short(stored[(key, now['run_id'])])}, but its inputs hash to "
                    f"{short(now['fingerprint'])}"
                )
        for run_id in runs:
            result.mismatches.append(
                f"run {run_id!r} of configuration {name!r} is in the warehouse but not in the "
                "receipt"
            )
        if recomputed.get(key) != entry.get("fingerprint"):
            result.mismatches.append(
                f"configuration {name!r}: fingerprint recomputed from the warehouse is "
                f"{short(recomputed.get(key))}, the receipt says {short(entry.get('fingerprint'))}"
            )
        now_gates = gates.get(key, NOT_EVALUATED)
        if canonical_json(now_gates) != canonical_json(entry.get("gates")):
            result.mismatches.append(
                f"configuration {name!r}: publication gates are now {_gate_text(now_gates)}; "
                f"the receipt says {_gate_text(entry.get('gates'))}"
            )
        if labels.get(key) != entry.get("label_digest"):
            result.mismatches.append(
                f"configuration {name!r}: its audited labels differ from the receipt "
                f"(digest {short(labels.get(key))} in the warehouse, "
                f"{short(entry.get('label_digest'))} in the receipt)"
            )
        now_audit = audits.get(key, NO_VERDICTS)
        if canonical_json(now_audit) != canonical_json(entry.get("audit", NO_VERDICTS)):
            then = entry.get("audit") or NO_VERDICTS
            result.mismatches.append(
                f"configuration {name!r}: audit verdicts differ from the receipt "
                f"({now_audit['verdicts']} verdict(s) in the warehouse, digest "
                f"{short(now_audit.get('digest'))}; {then.get('verdicts')} in the receipt, "
                f"digest {short(then.get('digest'))})"
            )
        if board is not None:
            now_status = status.get(key, "not on the leaderboard")
            if now_status != entry.get("status"):
                result.mismatches.append(
                    f"configuration {name!r} would now be {now_status}; the receipt says "
                    f"{entry.get('status')}"
                )
    for key, fact in facts.items():
        if key not in listed:
            result.mismatches.append(
                f"configuration {fact['config_key']!r} is in the warehouse but not in the receipt"
            )
    result.checked.append(
        f"{len(receipt['configurations'])} configuration(s): fingerprints, gates and labels "
        "recomputed"
    )


def _gate_text(gates: Any) -> str:
    if not isinstance(gates, list):
        return str(gates)
    failed = [g.get("gate") for g in gates if isinstance(g, dict) and g.get("passed") is not True]
    return f"{len(gates)} gate(s), failed: {', '.join(map(str, failed)) or 'none'}"


def _check_leaderboard(
    result: Verification,
    receipt: Mapping[str, Any],
    con: duckdb.DuckDBPyConnection,
    board: Leaderboard | None,
) -> None:
    entries = receipt["leaderboard"].get("rows", [])
    stored = leaderboard_table_rows(con)
    if stored is None:
        result.mismatches.append("the warehouse has no leaderboard table")
    else:
        _compare_rows(result, entries, stored, where="in the warehouse", label="leaderboard row")
    if board is not None:
        _compare_rows(
            result,
            entries,
            board_rows(board),
            where="when recomputed from the metric tables",
            label="leaderboard row",
        )
    result.checked.append(f"{len(entries)} leaderboard row(s) compared by digest")


def _recomputed_board(result: Verification, con: duckdb.DuckDBPyConnection) -> Leaderboard | None:
    missing = [
        t for t in ("configuration_metrics", "control_metrics", "metric_cis")
        if not table_exists(con, t)
    ]  # fmt: skip
    if missing:
        result.mismatches.append(
            f"cannot recompute the leaderboard: the warehouse has no {', '.join(missing)}"
        )
        return None
    return leaderboard_from_warehouse(con)


def _compare_code(result: Verification, receipt: Mapping[str, Any]) -> None:
    then = receipt["code"]
    now = code_versions()
    for name in sorted(set(then) | set(now)):
        if then.get(name) != now.get(name):
            result.notes.append(
                f"the receipt was made with {name} {_show(then.get(name))}; this LITMUS has "
                f"{_show(now.get(name))} (stored results were compared, nothing was re-scored)"
            )
    result.checked.append(f"{len(then)} code version(s) compared with this LITMUS")


def _check_published_files(result: Verification, receipt: Mapping[str, Any], folder: Path) -> None:
    """The board files beside the receipt, byte for byte against the digests it lists."""
    from litmus import publication

    if (folder / publication.JOURNAL_NAME).exists():
        result.mismatches.append(
            f"a publication in {folder} was interrupted before it finished; `litmus run` "
            "completes it"
        )
    listed = receipt.get("published_files")
    if not isinstance(listed, dict) or not listed:
        result.mismatches.append("the receipt lists no published files (field published_files)")
        return
    intact = 0
    for name, entry in sorted(listed.items()):
        if not publication.is_board_file(name):  # a name from the receipt never becomes a path
            result.mismatches.append(f"published file {name!r} is not a file LITMUS publishes")
            continue
        path = folder / name
        if not path.is_file():
            result.mismatches.append(f"published file {name} is missing from {folder}")
            continue
        actual = publication.file_digests(folder, (name,))[name]
        expected = entry if isinstance(entry, dict) else {}
        if actual != {k: expected.get(k) for k in actual} or set(expected) != set(actual):
            result.mismatches.append(
                f"published file {name} differs from the receipt (sha256 now "
                f"{short(actual['sha256'])}, {actual['bytes']} bytes; the receipt says "
                f"{short(str(expected.get('sha256')))}, {expected.get('bytes')} bytes)"
            )
        else:
            intact += 1
    for name in publication.board_files(folder):
        if name not in listed:
            result.mismatches.append(f"{name} is published beside the receipt but not in it")
    result.checked.append(
        f"{intact} of {len(listed)} published file(s) ({', '.join(sorted(listed))}) match "
        "the receipt byte for byte"
    )


def _differences(ours: Any, theirs: Any, at: str) -> list[str]:
    """Where two JSON values differ, as paths (``configurations[2].runs[0].n_trajectories``)."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        found = []
        for key in sorted(set(ours) | set(theirs), key=str):
            found += _differences(ours.get(key), theirs.get(key), f"{at}.{key}")
        return found
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        found = []
        for index, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            found += _differences(a, b, f"{at}[{index}]")
        return found
    return [] if canonical_json(ours) == canonical_json(theirs) else [at]


def _check_every_field(
    result: Verification,
    receipt: Mapping[str, Any],
    con: duckdb.DuckDBPyConnection,
    described: set[str],
) -> None:
    """Every field of the receipt against a receipt rebuilt from the warehouse, so nothing it
    states goes unchecked. Sections a detailed check already found different (``described``)
    are not reported twice."""
    who_and_when, fields = document_problems(receipt, _show)
    result.mismatches.extend(who_and_when)
    when = published_time(receipt)
    publisher = receipt.get("publisher")
    try:
        rebuilt = build_receipt(
            con,
            publisher=str(publisher),
            published_at=when,
            published_files=receipt.get("published_files") or {},
        )
    except ReceiptError as error:
        result.mismatches.append(f"cannot rebuild the receipt from the warehouse: {error}")
        return
    result.mismatches.extend(fields)
    known = set(ReceiptDocument.model_fields)
    # code versions are notes (_compare_code); who and when are attested by the signature only
    attested = {"code", "publisher", "published_at", "published_files", "signature"}
    for name in sorted(set(rebuilt) - attested - described):
        differing = _differences(receipt.get(name), rebuilt[name], name)
        if differing:
            more = f" and {len(differing) - 3} more" if len(differing) > 3 else ""
            result.mismatches.append(
                f"receipt field(s) {', '.join(differing[:3])}{more} differ from the warehouse"
            )
    result.checked.append(
        f"every receipt field ({', '.join(sorted(known))}) compared; published_at and "
        "publisher are vouched for by the signature only"
    )


def verify_receipt(
    receipt: Mapping[str, Any],
    con: duckdb.DuckDBPyConnection,
    paths: LitmusPaths,
    *,
    public_key: Ed25519PublicKey | None = None,
    published_dir: Path | None = None,
) -> Verification:
    """Recompute everything the receipt states from the warehouse, the raw store and the
    published files (in ``published_dir``, default ``<home>/exports``)."""
    result = Verification()
    described: set[str] = set()

    def section(name: str, check: Any, *args: Any) -> Any:
        before = len(result.mismatches)
        value = check(result, *args)
        if len(result.mismatches) > before:
            described.add(name)
        return value

    _check_signature(result, receipt, public_key)
    section("leaderboard", _check_internal_digests, receipt)
    section("raw_files", _check_raw_files, receipt, con, paths)
    section("suites", _check_suites, receipt, con, paths)
    board = _recomputed_board(result, con)
    section("configurations", _check_configurations, receipt, con, board)
    section("leaderboard", _check_leaderboard, receipt, con, board)
    _check_published_files(result, receipt, published_dir or paths.exports)
    _check_every_field(result, receipt, con, described)
    _compare_code(result, receipt)
    return result
