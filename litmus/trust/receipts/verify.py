"""Verification: recompute everything a receipt states and describe each difference."""

from __future__ import annotations

import base64
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

from litmus.canonical import canonical_json
from litmus.errors import LitmusError, SuiteError
from litmus.fingerprint import stored_run_fingerprints
from litmus.ingestion import derivation
from litmus.ingestion.run_files import file_sha256
from litmus.ingestion.suites import load_suite_file, suite_hash
from litmus.metrics.leaderboard import Leaderboard, leaderboard_from_warehouse
from litmus.settings import LitmusPaths
from litmus.trust import rederivation
from litmus.trust.receipts.build import (
    NO_VERDICTS,
    NOT_EVALUATED,
    ConfigurationEvidence,
    ReceiptScope,
    build_receipt,
    configuration_evidence,
    raw_file_facts,
    suite_facts,
)
from litmus.trust.receipts.code_identity import code_versions
from litmus.trust.receipts.digests import (
    board_rows,
    leaderboard_table_rows,
    row_digest,
    rows_digest,
    short,
)
from litmus.trust.receipts.document import (
    ReceiptDocument,
    ReceiptError,
    document_problems,
    published_time,
)
from litmus.trust.receipts.keys import SIGNATURE_ALGORITHM, SIGNED_CONTENT, key_id, signing_payload
from litmus.warehouse import table_exists

_SHA256 = re.compile(r"[0-9a-f]{64}")


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


@dataclass(frozen=True)
class Newer:
    """What the warehouse holds beyond a receipt's scope: files landed and ingested (and
    perhaps labeled and scored) after it was published, not yet published themselves."""

    raw_files: tuple[str, ...]  # their names
    raw_file_hashes: tuple[str, ...]
    unsourced: tuple[tuple[str, int], ...]  # (partition key, trajectories of no raw file)
    suites: tuple[str, ...]
    configurations: frozenset[str]
    runs: frozenset[tuple[str, str]]  # (partition_key, run_id), newer or grown by a newer file
    grown: frozenset[str]  # configurations of the receipt with such runs

    @property
    def any(self) -> bool:
        return bool(self.raw_files or self.suites or self.runs)

    def notes(self) -> list[str]:
        if not self.any:
            return []
        files = ", ".join(self.raw_files[:3]) + (", …" if len(self.raw_files) > 3 else "")
        parts = [f"{len(self.runs)} newer unpublished run(s)"]
        if self.raw_files:
            parts.append(f"from {len(self.raw_files)} raw file(s) ({files})")
        if self.suites:
            parts.append(f"{len(self.suites)} suite(s) ({', '.join(self.suites[:3])})")
        notes = [f"{', '.join(parts)} not covered by this receipt: `litmus run` publishes them"]
        if self.grown:
            notes.append(
                f"{len(self.grown)} configuration(s) of the receipt have newer runs: their "
                "gates and metric tables already include them, so their published rows (and "
                "the ranks beside them) were checked as stored and published, not recomputed"
            )
        return notes


def newer_than(con: duckdb.DuckDBPyConnection, scope: ReceiptScope) -> Newer:
    """What the warehouse holds that ``scope`` does not cover."""
    files = sorted(scope.raw_files)
    raw_files = con.execute(
        "SELECT original_name, file_hash FROM raw_files WHERE NOT list_contains(?, file_hash) "
        "ORDER BY ingested_at, file_hash",
        [files],
    ).fetchall()
    unsourced = con.execute(
        "SELECT partition_key, count(*) FROM raw_trajectories "
        "WHERE source_file_hash NOT IN (SELECT file_hash FROM raw_files) GROUP BY 1 ORDER BY 1"
    ).fetchall()
    runs = {
        (key, run_id)
        for key, run_id, newer_file in con.execute(
            "SELECT partition_key, run_id, bool_or(NOT list_contains(?, source_file_hash)) "
            "FROM raw_trajectories GROUP BY ALL",
            [files],
        ).fetchall()
        if newer_file or (key, run_id) not in scope.runs
    }
    suites = tuple(
        f"{suite}@{version}"
        for suite, version in con.execute(
            "SELECT suite, suite_version FROM suites ORDER BY 1, 2"
        ).fetchall()
        if (suite, version) not in scope.suites
    )
    keys = {key for key, _ in runs}
    return Newer(
        raw_files=tuple(name for name, _ in raw_files),
        raw_file_hashes=tuple(sha for _, sha in raw_files),
        unsourced=tuple((key, int(n)) for key, n in unsourced),
        suites=suites,
        configurations=frozenset(keys - scope.configurations),
        runs=frozenset(runs),
        grown=frozenset(keys & scope.configurations),
    )


def _check_newer(result: Verification, newer: Newer, paths: LitmusPaths) -> None:
    """What is newer than the receipt must be what newer landed files gave: each of them in the
    raw store, unmodified, and no trajectory without a raw file."""
    for name, sha in zip(newer.raw_files, newer.raw_file_hashes, strict=True):
        stored = paths.stored_raw_file(sha)
        if stored is None or file_sha256(stored) != sha:
            result.mismatches.append(
                f"raw file {short(sha)} ({name}), newer than the receipt, is "
                f"{'missing from' if stored is None else 'modified in'} the raw store"
            )
    for key, count in newer.unsourced:
        result.mismatches.append(
            f"{count} trajectory(ies) of configuration {key!r} come from no raw file in the "
            "warehouse"
        )


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
) -> dict[str, Path]:
    """Each raw file against the raw store and the warehouse; the intact ones (sha256 → the
    raw store's file)."""
    found_intact: dict[str, Path] = {}
    in_warehouse = {row["sha256"]: row for row in raw_file_facts(con)}
    listed = set()
    intact = 0
    for entry in receipt["raw_files"]:
        sha = str(entry.get("sha256", ""))
        listed.add(sha)
        label = f"raw file {short(sha)} ({entry.get('name')})"
        if not _SHA256.fullmatch(sha):
            result.mismatches.append(f"raw file entry {sha!r} in the receipt is not a SHA-256")
            continue
        stored = paths.stored_raw_file(sha)
        if stored is None:
            result.mismatches.append(f"{label} is missing from the raw store")
        else:
            now = file_sha256(stored)
            if now != sha:
                result.mismatches.append(f"{label} was modified (sha256 now {short(now)})")
            else:
                intact += 1
                found_intact[sha] = stored
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
    # a file in the warehouse the receipt does not list was ingested after it (Newer)
    result.checked.append(
        f"{intact} of {len(receipt['raw_files'])} raw file(s) present and unmodified"
    )
    return found_intact


def _listed_derivations(receipt: Mapping[str, Any]) -> derivation.Digests:
    listed: derivation.Digests = {}
    for entry in receipt["raw_files"]:
        if isinstance(entry, dict) and isinstance(entry.get("derived"), list):
            listed |= derivation.from_receipt_entries(str(entry.get("sha256")), entry["derived"])
    return listed


def _check_derived_rows(
    result: Verification,
    receipt: Mapping[str, Any],
    con: duckdb.DuckDBPyConnection,
    paths: LitmusPaths,
    intact: Mapping[str, Path],
) -> None:
    """The rows derived from each raw file: the warehouse's now against the receipt's
    digests; the raw files ingested again (in a scratch warehouse, with the receipt's suites)
    against the warehouse's rows themselves and the receipt's digests and counts; and records
    in = accepted + quarantined, in the receipt and against the rows the warehouse holds."""
    entries = [e for e in receipt["raw_files"] if isinstance(e, dict)]
    names = {str(e.get("sha256")): str(e.get("name")) for e in entries}
    listed = _listed_derivations(receipt)
    now = {
        key: value
        for key, value in derivation.stored_digests(con).items()
        if key[0] is None or key[0] in names
    }
    for difference in derivation.differences(listed, now):
        result.mismatches.append(difference.sentence(names, "in the warehouse", "in the receipt"))
    for entry in entries:
        sha = str(entry.get("sha256"))
        label = f"raw file {short(sha)} ({entry.get('name')})"
        total, accepted, quarantined = (
            entry.get("records_total"), entry.get("records_accepted"),
            entry.get("records_quarantined"),
        )  # fmt: skip
        if not all(isinstance(n, int) for n in (total, accepted, quarantined)):
            continue  # the field comparison names it
        if total != accepted + quarantined:
            result.mismatches.append(
                f"{label}: the receipt says {total} records in, but {accepted} accepted + "
                f"{quarantined} quarantined"
            )
        stored = sum(n for (f, t, _), (n, _) in now.items() if f == sha and t == "raw_trajectories")
        held = now.get((sha, "quarantine", None), (0, ""))[0]
        if (stored, held) != (accepted, quarantined):
            result.mismatches.append(
                f"{label}: records in = accepted + quarantined no longer holds: {total} records "
                f"in, the warehouse holds {stored} accepted + {held} quarantined"
            )
    _check_rederived(result, receipt, con, paths, intact, names, listed)
    result.checked.append(
        f"the rows derived from {len(entries)} raw file(s) (trajectories, steps, quarantine) "
        "against the receipt, in the warehouse and derived again from the raw store"
    )


def _check_rederived(
    result: Verification,
    receipt: Mapping[str, Any],
    con: duckdb.DuckDBPyConnection,
    paths: LitmusPaths,
    intact: Mapping[str, Path],
    names: Mapping[str, str],
    listed: derivation.Digests,
) -> None:
    from litmus.ingestion import run_files

    formats = {
        str(e.get("sha256")): str(e.get("format"))
        for e in receipt["raw_files"]
        if isinstance(e, dict)
    }
    order = [row[0] for row in con.execute(
        "SELECT file_hash FROM raw_files ORDER BY ingested_at, file_hash"
    ).fetchall()]  # fmt: skip
    order += sorted(set(intact) - set(order))
    files = [(sha, names[sha], formats[sha], intact[sha]) for sha in order if sha in intact]
    receipt_suites = {
        (s.get("suite"), s.get("suite_version"), s.get("suite_hash"))
        for s in receipt["suites"]
        if isinstance(s, dict)
    }
    suite_paths = [
        paths.suites / file_name
        for (suite, version), (digest, file_name) in _suite_file_hashes(paths, result).items()
        if (suite, version, digest) in receipt_suites
    ]
    with derivation.scratch_folder() as scratch:
        try:
            again = rederivation.rederive(
                files,
                suite_paths,
                Path(scratch),
                inspect_items=lambda stored: run_files._inspect_items(
                    stored, run_files.load_inspect_mapping(paths)
                ),
            )
            rows = derivation.compare_rows(con, again.db_path, [f[0] for f in files])
        except (LitmusError, duckdb.Error, OSError) as error:
            result.mismatches.append(f"cannot ingest the raw files again to check them: {error}")
            return
    for difference in rows:
        result.mismatches.append(difference.sentence(names))
    wanted = set(intact)
    mine = {key: value for key, value in listed.items() if key[0] in wanted}
    for difference in derivation.differences(again.digests, mine):
        result.mismatches.append(
            difference.sentence(names, "in the receipt", "when ingested again from the raw file")
        )
    for entry in receipt["raw_files"]:
        if not isinstance(entry, dict) or str(entry.get("sha256")) not in again.counts:
            continue
        sha = str(entry["sha256"])
        counts = ("records_total", "records_accepted", "records_quarantined")
        if tuple(entry.get(c) for c in counts) != again.counts[sha]:
            result.mismatches.append(
                f"raw file {short(sha)} ({entry.get('name')}) ingested again gives "
                f"{', '.join(f'{c} {n}' for c, n in zip(counts, again.counts[sha], strict=True))}"
                f"; the receipt says {', '.join(f'{c} {entry.get(c)}' for c in counts)}"
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
    in_warehouse = {(s["suite"], s["suite_version"]): s for s in suite_facts(con)}
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
    # a suite in the warehouse the receipt does not list was loaded after it (Newer)
    result.checked.append(f"{len(receipt['suites'])} suite(s) compared by content hash")


def _check_configurations(
    result: Verification,
    receipt: Mapping[str, Any],
    con: duckdb.DuckDBPyConnection,
    board: Leaderboard | None,
    scope: ReceiptScope,
    newer: Newer,
) -> None:
    """Each configuration the receipt lists, recomputed from its runs and raw files; one of
    them that newer runs have grown since is checked on what the receipt covers of it (its
    runs, its trajectories' labels), not on what now sums over the newer runs too."""
    evidence = configuration_evidence(con, scope)
    stored = stored_run_fingerprints(con)
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
        if key not in evidence.facts:
            result.mismatches.append(
                f"configuration {name!r} is in the receipt but not in the warehouse"
            )
            continue
        result.mismatches += _run_differences(name, key, entry, evidence.runs, stored, newer.runs)
        result.mismatches += _evidence_differences(name, key, entry, evidence, newer)
        if board is not None and key not in newer.grown:
            now_status = status.get(key, "not on the leaderboard")
            if now_status != entry.get("status"):
                result.mismatches.append(
                    f"configuration {name!r} would now be {now_status}; the receipt says "
                    f"{entry.get('status')}"
                )
    # a configuration in the warehouse the receipt does not list came after it (Newer)
    result.checked.append(
        f"{len(receipt['configurations'])} configuration(s): fingerprints, gates and labels "
        "recomputed"
    )


def _run_differences(
    name: str,
    key: str,
    entry: Mapping[str, Any],
    recomputed_runs: Mapping[str, list[dict[str, Any]]],
    stored: Mapping[tuple[str, str], str],
    grown: frozenset[tuple[str, str]],
) -> list[str]:
    """How a configuration's runs in the receipt differ from those recomputed from the
    warehouse and from the stored run fingerprints (a run a newer raw file added trajectories
    to, in ``grown``, is newer than the receipt: only its presence is checked)."""
    found = []
    runs = {run["run_id"]: run for run in recomputed_runs.get(key, [])}
    for run in entry.get("runs", []):
        now = runs.pop(run.get("run_id"), None)
        if now is not None and (key, now["run_id"]) in grown:
            continue
        if now is None:
            found.append(
                f"run {run.get('run_id')!r} of configuration {name!r} is in the receipt "
                "but not in the warehouse"
            )
        elif now["fingerprint"] != run.get("fingerprint"):
            found.append(
                f"run {run.get('run_id')!r} of configuration {name!r}: fingerprint "
                f"recomputed from the warehouse is {short(now['fingerprint'])}, the receipt "
                f"says {short(run.get('fingerprint'))}"
            )
        elif (key, now["run_id"]) in stored and stored[(key, now["run_id"])] != now["fingerprint"]:
            found.append(
                f"run {now['run_id']!r} of configuration {name!r}: the run_fingerprints "
                f"table holds {short(stored[(key, now['run_id'])])}, but its inputs hash to "
                f"{short(now['fingerprint'])}"
            )
    for run_id in runs:
        found.append(
            f"run {run_id!r} of configuration {name!r} is in the warehouse but not in the receipt"
        )
    return found


def _evidence_differences(
    name: str, key: str, entry: Mapping[str, Any], evidence: ConfigurationEvidence, newer: Newer
) -> list[str]:
    """How a configuration's fingerprint, gates, labels and audit verdicts recomputed from
    the warehouse differ from the receipt's (of a configuration newer runs have grown, its
    gates judge them too, and a run a newer file added to changes its fingerprint: those two
    are newer than the receipt)."""
    found = []
    fingerprint = evidence.fingerprints.get(key)
    extended = any((key, run) in newer.runs for run in map(_run_id, entry.get("runs", [])))
    if fingerprint != entry.get("fingerprint") and not extended:
        found.append(
            f"configuration {name!r}: fingerprint recomputed from the warehouse is "
            f"{short(fingerprint)}, the receipt says {short(entry.get('fingerprint'))}"
        )
    now_gates = evidence.gates.get(key, NOT_EVALUATED)
    if key not in newer.grown and canonical_json(now_gates) != canonical_json(entry.get("gates")):
        found.append(
            f"configuration {name!r}: publication gates are now {_gate_text(now_gates)}; "
            f"the receipt says {_gate_text(entry.get('gates'))}"
        )
    labels = evidence.label_digests.get(key)
    if labels != entry.get("label_digest"):
        found.append(
            f"configuration {name!r}: its audited labels differ from the receipt "
            f"(digest {short(labels)} in the warehouse, "
            f"{short(entry.get('label_digest'))} in the receipt)"
        )
    now_audit = evidence.audits.get(key, NO_VERDICTS)
    if canonical_json(now_audit) != canonical_json(entry.get("audit", NO_VERDICTS)):
        then = entry.get("audit") or NO_VERDICTS
        found.append(
            f"configuration {name!r}: audit verdicts differ from the receipt "
            f"({now_audit['verdicts']} verdict(s) in the warehouse, digest "
            f"{short(now_audit.get('digest'))}; {then.get('verdicts')} in the receipt, "
            f"digest {short(then.get('digest'))})"
        )
    return found


def _run_id(run: Any) -> str:
    return str(run.get("run_id")) if isinstance(run, Mapping) else ""


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
    newer: Newer,
) -> None:
    """The receipt's rows against the leaderboard table (replaced only when a publication
    commits: litmus.trust.publication) and the board recomputed from the metric tables (of
    the configurations it covers)."""
    entries = receipt["leaderboard"].get("rows", [])
    stored = leaderboard_table_rows(con)
    if stored is None:
        result.mismatches.append("the warehouse has no leaderboard table")
    else:
        _compare_rows(result, entries, stored, where="in the warehouse", label="leaderboard row")
    if board is not None and newer.grown:
        _compare_own_values(result, entries, board_rows(board), newer.grown)
    elif board is not None:
        _compare_rows(
            result,
            entries,
            board_rows(board),
            where="when recomputed from the metric tables",
            label="leaderboard row",
        )
    result.checked.append(f"{len(entries)} leaderboard row(s) compared by digest")


# Columns of a board row that depend on the other rows of its board: ranks and the order
# between neighbours (and plug-in deltas, ``plugin_*``, against a baseline configuration).
_RELATIVE_COLUMNS = frozenset(
    {"rank", "naive_rank", "rank_shift", "ci_overlaps_next", "rank_not_significant"}
)


def _own_values(row: Mapping[str, Any]) -> dict[str, Any]:
    return {
        column: value
        for column, value in row.items()
        if column not in _RELATIVE_COLUMNS and not column.startswith("plugin_")
    }


def _compare_own_values(
    result: Verification,
    entries: list[dict[str, Any]],
    recomputed: list[dict[str, Any]],
    grown: frozenset[str],
) -> None:
    """The receipt's rows of the configurations newer runs did not grow (and the controls)
    against the board recomputed without the grown ones, on every column a row holds of its
    own: a grown configuration's metric tables include its newer runs, and its neighbours'
    ranks depend on them."""
    where = "when recomputed from the metric tables"
    rows = {row["name"]: _own_values(row) for row in recomputed}
    for entry in entries:
        if entry.get("partition_key") in grown:
            continue
        name, values = entry.get("name"), _own_values(entry.get("values") or {})
        row = rows.get(name)
        if row is None:
            result.mismatches.append(f"leaderboard row {name!r} is in the receipt but not {where}")
        elif canonical_json(row) != canonical_json(values):
            result.mismatches.append(
                _describe_row_difference(str(name), values, row, where, "leaderboard row")
            )


def _recomputed_board(
    result: Verification, con: duckdb.DuckDBPyConnection, scope: ReceiptScope, newer: Newer
) -> Leaderboard | None:
    """The board of the configurations the receipt covers (but those newer runs grew, whose
    metric tables include them), recomputed from the metric tables."""
    missing = [
        t for t in ("configuration_metrics", "control_metrics", "leaderboard_rows")  # dbt's
        if not table_exists(con, t)
    ]  # fmt: skip
    if missing:
        result.mismatches.append(
            f"cannot recompute the leaderboard: the warehouse has no {', '.join(missing)}"
        )
        return None
    return leaderboard_from_warehouse(con, partition_keys=scope.configurations - newer.grown)


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


def _compare_listed_files(
    result: Verification,
    listed: Mapping[str, Any],
    folder: Path,
    *,
    kind: str,
    shown: Callable[[str], str],
    allowed: Callable[[str], bool],
    refused: str,
) -> int:
    """Each file the receipt lists (name → its digests) against the file in ``folder``, byte
    for byte; returns how many match. A listed name is looked up only when ``allowed``."""
    from litmus.trust import publication

    intact = 0
    for name, entry in sorted(listed.items()):
        if not allowed(name):
            result.mismatches.append(f"{kind} {name!r} {refused}")
            continue
        if not (folder / name).is_file():
            result.mismatches.append(f"{kind} {shown(name)} is missing from {folder}")
            continue
        actual = publication.file_digests(folder, (name,))[name]
        if actual == entry:
            intact += 1
            continue
        expected = entry if isinstance(entry, dict) else {}
        result.mismatches.append(
            f"{kind} {shown(name)} differs from the receipt (sha256 now "
            f"{short(actual['sha256'])}, {actual['bytes']} bytes; the receipt says "
            f"{short(str(expected.get('sha256')))}, {expected.get('bytes')} bytes)"
        )
    return intact


def _check_published_files(result: Verification, receipt: Mapping[str, Any], folder: Path) -> None:
    """The board files beside the receipt, byte for byte against the digests it lists."""
    from litmus.trust import publication

    if (folder / publication.JOURNAL_NAME).exists():
        result.mismatches.append(
            f"a publication in {folder} was interrupted before it finished; `litmus run` "
            "completes it"
        )
    listed = receipt.get("published_files")
    if not isinstance(listed, dict) or not listed:
        result.mismatches.append("the receipt lists no published files (field published_files)")
        return
    intact = _compare_listed_files(
        result,
        listed,
        folder,
        kind="published file",
        shown=str,
        allowed=publication.is_board_file,  # a name from the receipt never becomes a path
        refused="is not a file LITMUS publishes",
    )
    for name in publication.board_files(folder):
        if name not in listed:
            result.mismatches.append(f"{name} is published beside the receipt but not in it")
    result.checked.append(
        f"{intact} of {len(listed)} published file(s) ({', '.join(sorted(listed))}) match "
        "the receipt byte for byte"
    )


def _check_exported_files(result: Verification, receipt: Mapping[str, Any], folder: Path) -> None:
    """The other files in exports/ (drift plots, …): each one the receipt lists, byte for
    byte; any it does not list is a mismatch (nothing in exports/ goes unvouched for)."""
    from litmus.trust import publication

    listed = receipt.get("exported_files")
    listed = listed if isinstance(listed, dict) else {}
    intact = _compare_listed_files(
        result,
        listed,
        folder,
        kind="exported file",
        shown=repr,
        # a name from the receipt becomes a path only when it is a plain file name
        allowed=lambda name: (
            Path(name).name == name
            and name not in (".", "..")
            and not publication.is_published_file(name)
        ),
        refused="in the receipt is not a file name",
    )
    for name in publication.other_exports(folder):
        if name not in listed:
            result.mismatches.append(f"{name!r} in {folder} is not covered by the receipt")
    result.checked.append(
        f"{intact} of {len(listed)} other exported file(s) (drift plots, …) match the receipt, "
        "and no file in exports is unlisted"
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
    scope: ReceiptScope,
    newer: Newer,
) -> None:
    """Every field of the receipt against a receipt rebuilt from the warehouse within its
    scope, so nothing it states goes unchecked. Sections a detailed check already found
    different (``described``) are not reported twice; nor are the configurations newer runs
    have grown (the detailed checks compared what the receipt covers of them)."""
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
            exported_files=receipt.get("exported_files") or {},
            scope=scope,
        )
    except ReceiptError as error:
        result.mismatches.append(f"cannot rebuild the receipt from the warehouse: {error}")
        return
    result.mismatches.extend(fields)
    stated = {
        entry.get("partition_key"): entry
        for entry in receipt.get("configurations") or []
        if isinstance(entry, dict)
    }
    rebuilt["configurations"] = [
        stated[entry["partition_key"]] if entry["partition_key"] in newer.grown else entry
        for entry in rebuilt["configurations"]
    ]
    # release drift from or to a configuration newer runs changed is newer too
    changed = newer.configurations | newer.grown

    def unchanged(alerts: Any) -> Any:
        if not changed or not isinstance(alerts, list):
            return alerts
        return [
            alert
            for alert in alerts
            if not isinstance(alert, dict)
            or not {alert.get("from_partition_key"), alert.get("to_partition_key")} & changed
        ]

    rebuilt["alerts"] = unchanged(rebuilt["alerts"])
    receipt = {**receipt, "alerts": unchanged(receipt.get("alerts"))}
    known = set(ReceiptDocument.model_fields)
    # code versions are notes (_compare_code); who and when are attested by the signature only
    attested = {
        "code", "publisher", "published_at", "published_files", "exported_files", "signature"
    }  # fmt: skip
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
    scope = ReceiptScope.of(receipt)
    newer = newer_than(con, scope)
    _check_newer(result, newer, paths)
    intact = section("raw_files", _check_raw_files, receipt, con, paths)
    section("raw_files", _check_derived_rows, receipt, con, paths, intact)
    section("suites", _check_suites, receipt, con, paths)
    board = _recomputed_board(result, con, scope, newer)
    section("configurations", _check_configurations, receipt, con, board, scope, newer)
    section("leaderboard", _check_leaderboard, receipt, con, board, newer)
    _check_published_files(result, receipt, published_dir or paths.exports)
    _check_exported_files(result, receipt, published_dir or paths.exports)
    _check_every_field(result, receipt, con, described, scope, newer)
    _compare_code(result, receipt)
    result.notes += newer.notes()
    return result
