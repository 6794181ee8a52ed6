"""Receipts (SPEC §10): a published sample's receipt verifies, and every kind of tampering —
an edited metric or leaderboard row, an edited, swapped or missing raw file, a removed
configuration, a receipt signed with another key or edited after signing — is reported by
``litmus verify`` in plain words with a non-zero exit."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
import pandas as pd
import pytest
from leaderboard_reference import reference_board

from litmus.audit.workflow import load_verdicts
from litmus.fingerprint import configuration_fingerprints
from litmus.ingestion.run_files import file_sha256
from litmus.metrics.board_shape import typed_board_rows
from litmus.metrics.leaderboard import BoardInputs, board_from_mart
from litmus.sample import generate_sample, post_state_family_count
from litmus.settings import LitmusPaths, litmus_paths
from litmus.trust import publication
from litmus.trust.receipts import (
    NOT_EVALUATED,
    RECEIPT_FILE_NAME,
    ReceiptDocument,
    ReceiptError,
    build_receipt,
    configured_signing_key,
    leaderboard_table_rows,
    load_private_key,
    load_receipt,
    row_digest,
    sign_receipt,
    verify_receipt,
    write_keypair,
    write_receipt,
)
from litmus.warehouse import connect
from litmus_dagster.cli import main
from litmus_dagster.definitions import defs
from litmus_dagster.jobs import PUBLISH
from litmus_dagster.trust.cli import UNVERIFIED_EXIT

PUBLISHER = "release-bot@litmus.test"
CONFIGURATIONS = 2
TRAJECTORIES = (24 + post_state_family_count(24)) * 4  # a configuration's, in the sample
LITMUS = Path(sys.executable).with_name("litmus")
SESSION_STARTED = time.time()
LOCK_ERROR_WORDS = ("Conflicting lock", "Could not set lock", "database is locked", "IO Error")


@dataclass(frozen=True)
class Published:
    paths: LitmusPaths
    private_key: Path
    public_key: Path
    other_public_key: Path
    landed: dict[str, str]  # original file name → sha256
    runs: list[tuple[int, str]]  # (exit code, stderr) of each `litmus run`
    stdouts: list[str]  # what each `litmus run` printed on standard output

    @property
    def receipt_path(self) -> Path:
        return self.paths.exports / RECEIPT_FILE_NAME


@pytest.fixture(scope="module")
def published(tmp_path_factory: pytest.TempPathFactory) -> Published:
    """Three configurations of the (small) sample published by two ``litmus run`` processes
    started at once — the concurrency case of SPEC §10 — with a signing key configured."""
    root = tmp_path_factory.mktemp("receipts")
    keys = root / "keys"
    write_keypair(keys / "signing.pem", keys / "signing.pub.pem")
    write_keypair(keys / "other.pem", keys / "other.pub.pem")
    paths = litmus_paths(root / "home").ensure()
    manifest = generate_sample(root / "sample", n_families=24)
    shutil.copyfile(manifest.suite_path, paths.suites / manifest.suite_path.name)
    run_files = sorted(manifest.run_paths.values())[:CONFIGURATIONS]
    for run_path in run_files:
        shutil.copyfile(run_path, paths.landing / run_path.name)
    env = {
        **os.environ,
        "LITMUS_HOME": str(paths.home),
        "DBT_TARGET_PATH": str(root / "dbt_target"),
        "LITMUS_SIGNING_KEY": str(keys / "signing.pem"),
        "LITMUS_PUBLISHER": PUBLISHER,
    }
    env.pop("LITMUS_DUCKDB_PATH", None)
    processes = [
        subprocess.Popen(
            [str(LITMUS), "run"], cwd=root, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(2)
    ]
    outputs = [process.communicate(timeout=900) for process in processes]
    return Published(
        paths=paths,
        private_key=keys / "signing.pem",
        public_key=keys / "signing.pub.pem",
        other_public_key=keys / "other.pub.pem",
        landed={p.name: file_sha256(p) for p in run_files},
        runs=[
            (process.returncode, err.decode())
            for process, (_, err) in zip(processes, outputs, strict=True)
        ],
        stdouts=[out.decode() for out, _ in outputs],
    )


@pytest.fixture
def copy(published: Published, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> LitmusPaths:
    """A private copy of the published state folder to tamper with."""
    monkeypatch.delenv("LITMUS_DUCKDB_PATH", raising=False)
    target = tmp_path / "home"
    shutil.copytree(published.paths.home, target, ignore=shutil.ignore_patterns("dagster"))
    monkeypatch.setenv("LITMUS_HOME", str(target))
    return litmus_paths(target)


def verify_cli(
    paths: LitmusPaths, capsys: pytest.CaptureFixture[str], *extra: str
) -> tuple[int, str]:
    code = main(
        ["--home", str(paths.home), "verify", str(paths.exports / RECEIPT_FILE_NAME), *extra]
    )
    return code, capsys.readouterr().out


def mismatches(output: str) -> list[str]:
    return [line.split("MISMATCH: ", 1)[1] for line in output.splitlines() if "MISMATCH: " in line]


def execute(paths: LitmusPaths, sql: str, params: list[Any] | None = None) -> None:
    with connect(paths.duckdb_path) as con:
        con.execute(sql, params or [])


def a_published_row(paths: LitmusPaths) -> dict[str, Any]:
    with connect(paths.duckdb_path) as con:
        rows = leaderboard_table_rows(con) or []
    return next(r for r in rows if r["status"] == "published" and r["boundary_score"])


# ----------------------------------------------------------------------------- untouched


def test_two_litmus_runs_started_at_once_both_finish(published: Published) -> None:
    for code, stderr in published.runs:
        assert code == 0, stderr[-3000:]
        assert not any(word in stderr for word in LOCK_ERROR_WORDS), stderr[-3000:]
    with connect(published.paths.duckdb_path) as con:
        files, rows, distinct = con.execute(
            "SELECT (SELECT count(*) FROM raw_files), count(*), count(DISTINCT trajectory_id) "
            "FROM raw_trajectories"
        ).fetchall()[0]
    assert (files, rows, distinct) == (
        CONFIGURATIONS,
        CONFIGURATIONS * TRAJECTORIES,
        CONFIGURATIONS * TRAJECTORIES,
    )


def test_a_run_prints_results_and_keeps_the_steps_output_in_a_file(published: Published) -> None:
    step_log = published.paths.home / "last_run.log"
    for stdout, (_, stderr) in zip(published.stdouts, published.runs, strict=True):
        assert "| Rank | Configuration | n | Coverage | Boundary score" in stdout  # the board
        assert "publication" in stdout  # the status table
        assert "Running with dbt" not in stdout
        assert f"step output in {step_log}" in stderr
    assert "Running with dbt" in step_log.read_text()
    # the run that waited for the other one found nothing new and said so
    assert sum("nothing new since the last run" in stderr for _, stderr in published.runs) == 1


def test_publication_writes_a_signed_receipt_of_everything(published: Published) -> None:
    receipt = load_receipt(published.receipt_path)
    paths = published.paths
    assert receipt["publisher"] == PUBLISHER
    assert receipt["signature"]["status"] == "signed"
    assert receipt["signature"]["algorithm"] == "Ed25519"
    # every landed file, by the hash of its bytes
    assert {f["name"]: f["sha256"] for f in receipt["raw_files"]} == published.landed
    assert sum(f["records_total"] for f in receipt["raw_files"]) == CONFIGURATIONS * TRAJECTORIES
    with connect(paths.duckdb_path) as con:
        suite_hash = con.execute("SELECT suite_hash FROM suites").fetchall()
        stored_rows = leaderboard_table_rows(con)
        fingerprints = configuration_fingerprints(con)
    assert [s["suite_hash"] for s in receipt["suites"]] == [suite_hash[0][0]]
    code = receipt["code"]
    assert code["labeler_version"] and code["refusal_classifier_version"]
    assert len(code["metric_code_sha256"]) == 64
    project = Path(__file__).resolve().parents[1]
    assert ("git_commit" in code) == (project / ".git").exists()
    assert receipt["policy_versions"] == ["p1"]
    assert receipt["bootstrap"] and receipt["bootstrap"][0]["seed"] is not None
    # every published row, value for value, with the digest of its canonical JSON
    entries = receipt["leaderboard"]["rows"]
    assert [e["values"] for e in entries] == stored_rows
    assert all(e["digest"] == row_digest(e["values"]) for e in entries)
    # per configuration: fingerprints and gate results
    configurations = {c["partition_key"]: c for c in receipt["configurations"]}
    assert len(configurations) == CONFIGURATIONS
    for key, configuration in configurations.items():
        assert configuration["fingerprint"] == fingerprints[key]
        assert configuration["label_digest"]
        gates = configuration["gates"]
        assert gates == NOT_EVALUATED or all({"gate", "passed", "message"} == set(g) for g in gates)


def test_untouched_receipt_verifies_with_the_signing_key(
    published: Published, copy: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = verify_cli(copy, capsys, "--public-key", str(published.public_key))
    assert code == 0, out
    assert mismatches(out) == []
    assert "verified: the published files, the warehouse and the raw store match the receipt" in out
    assert "signature verifies with the given public key" in out


def test_the_receipt_asset_is_published_with_the_leaderboard() -> None:
    selected = PUBLISH.resolve(defs.resolve_asset_graph())
    assert {dg.AssetKey("leaderboard_receipt"), dg.AssetKey("run_fingerprints")} <= selected
    graph = defs.resolve_asset_graph()
    assert dg.AssetKey("leaderboard") in graph.get(dg.AssetKey("leaderboard_receipt")).parent_keys


def test_leaderboard_shows_each_configuration_fingerprint(published: Published) -> None:
    with connect(published.paths.duckdb_path) as con:
        shown = dict(
            con.execute(
                "SELECT partition_key, fingerprint FROM leaderboard "
                "WHERE row_kind = 'configuration' AND status = 'published'"
            ).fetchall()
        )
        expected = configuration_fingerprints(con)
        stored_runs = con.execute("SELECT count(*) FROM run_fingerprints").fetchall()[0][0]
    assert shown and all(shown[key] == expected[key] for key in shown)
    assert stored_runs == CONFIGURATIONS
    markdown = (published.paths.exports / "leaderboard.md").read_text(encoding="utf-8")
    assert "Fingerprint" in markdown
    assert all(fp[:12] in markdown for fp in shown.values())


def test_the_published_board_is_the_mart_and_equals_its_reference(published: Published) -> None:
    """On a world `litmus run` published: the stored board is the dbt mart's rows, and the mart
    ranks as the pandas oracle does (tests/leaderboard_reference.py)."""
    with connect(published.paths.duckdb_path) as con:
        inputs = BoardInputs.from_warehouse(con)
        mart = board_from_mart(con, inputs).rows
        pd.testing.assert_frame_equal(mart, reference_board(con, inputs).rows)
        stored = typed_board_rows(con.sql("SELECT * FROM leaderboard").df())
    pd.testing.assert_frame_equal(mart, stored)
    assert mart["rank"].notna().sum() == CONFIGURATIONS


# ----------------------------------------------------------------------------- tampering


def test_edited_leaderboard_row_is_detected(
    copy: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    row = a_published_row(copy)
    execute(copy, "UPDATE leaderboard SET boundary_score = 0.999 WHERE name = ?", [row["name"]])
    code, out = verify_cli(copy, capsys)
    assert code == 1
    assert mismatches(out) == [
        f"leaderboard row {row['name']!r} differs from the receipt: boundary_score 0.999 in the "
        f"warehouse, {row['boundary_score']:.6g} in the receipt (digest mismatch)"
    ]


def test_edited_metric_row_is_detected_by_recomputing_the_leaderboard(
    copy: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    row = a_published_row(copy)
    execute(
        copy,
        "UPDATE configuration_metrics SET cm_safety = 1.0 WHERE partition_key = ?",
        [row["partition_key"]],
    )
    code, out = verify_cli(copy, capsys)
    assert code == 1
    (found,) = mismatches(out)
    assert found.startswith(f"leaderboard row {row['name']!r} differs from the receipt: ")
    assert "cm_safety 1 when recomputed from the metric tables" in found


def test_edited_raw_file_is_detected(
    published: Published, copy: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    name, sha = sorted(published.landed.items())[0]
    stored = copy.stored_raw_file(sha)
    assert stored is not None and not stored.stat().st_mode & stat.S_IWUSR  # kept read-only
    stored.chmod(0o644)
    stored.write_bytes(stored.read_bytes().replace(b'"refused"', b'"complied"', 1))
    code, out = verify_cli(copy, capsys)
    assert code == 1
    assert mismatches(out) == [
        f"raw file {sha[:12]}… ({name}) was modified (sha256 now {file_sha256(stored)[:12]}…)"
    ]


def test_swapped_and_missing_raw_files_are_detected(
    published: Published, copy: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    (name_a, sha_a), (name_b, sha_b) = sorted(published.landed.items())[:2]
    file_a, file_b = copy.stored_raw_file(sha_a), copy.stored_raw_file(sha_b)
    assert file_a and file_b
    shutil.copyfile(file_b, file_a.with_name("swap"))
    os.replace(file_a.with_name("swap"), file_a)  # a's name, b's content
    file_b.unlink()
    code, out = verify_cli(copy, capsys)
    assert code == 1
    expected = {
        sha_a: f"raw file {sha_a[:12]}… ({name_a}) was modified (sha256 now {sha_b[:12]}…)",
        sha_b: f"raw file {sha_b[:12]}… ({name_b}) is missing from the raw store",
    }
    assert mismatches(out) == [expected[sha] for sha in sorted(expected)]


def test_removed_configuration_is_detected(
    copy: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    row = a_published_row(copy)
    key = row["partition_key"]
    with connect(copy.duckdb_path) as con:
        for table in (
            "trajectory_labels",
            "audited_trajectories",
            "refusal_signals",
            "configuration_metrics",
            "metric_cis",
            "run_fingerprints",
        ):
            con.execute(f"DELETE FROM {table} WHERE partition_key = ?", [key])
        con.execute(
            "DELETE FROM raw_steps WHERE trajectory_id IN "
            "(SELECT trajectory_id FROM raw_trajectories WHERE partition_key = ?)",
            [key],
        )
        con.execute("DELETE FROM raw_trajectories WHERE partition_key = ?", [key])
        con.execute("DELETE FROM leaderboard WHERE partition_key = ?", [key])
    code, out = verify_cli(copy, capsys)
    assert code == 1
    found = mismatches(out)
    assert f"configuration {row['name']!r} is in the receipt but not in the warehouse" in found
    assert f"leaderboard row {row['name']!r} is in the receipt but not in the warehouse" in found


def test_receipt_signed_with_another_key_is_detected(
    published: Published, copy: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    receipt = load_receipt(copy.exports / RECEIPT_FILE_NAME)
    intruder = load_private_key(published.private_key.with_name("other.pem"))
    write_receipt(copy.exports / RECEIPT_FILE_NAME, sign_receipt(receipt, intruder))
    code, out = verify_cli(copy, capsys, "--public-key", str(published.public_key))
    assert code == 1
    (found,) = mismatches(out)
    assert found.startswith("signature does not verify with the given public key (the receipt ")
    # the intruder's own key does verify it: a signature says who, --public-key says whom to trust
    code, out = verify_cli(copy, capsys, "--public-key", str(published.other_public_key))
    assert code == 0, out


def test_receipt_edited_after_signing_is_detected(
    published: Published, copy: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    path = copy.exports / RECEIPT_FILE_NAME
    receipt = load_receipt(path)
    entry = next(e for e in receipt["leaderboard"]["rows"] if e["row_kind"] == "configuration")
    entry["values"]["boundary_score"] = 0.999
    path.write_text(json.dumps(receipt), encoding="utf-8")
    code, out = verify_cli(copy, capsys, "--public-key", str(published.public_key))
    assert code == 1
    found = mismatches(out)
    assert found[0] == (
        "signature does not verify with the given public key (the receipt was changed after it "
        "was signed)"
    )
    assert (
        f"the receipt's digest of leaderboard row {entry['name']!r} does not match the values it "
        "lists (the receipt was edited)"
    ) in found


def test_gate_results_are_part_of_the_receipt(
    copy: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    row = a_published_row(copy)
    key = row["partition_key"]
    receipt = load_receipt(copy.exports / RECEIPT_FILE_NAME)
    gates = {c["partition_key"]: c["gates"] for c in receipt["configurations"]}
    with connect(copy.duckdb_path) as con:
        stored = con.execute(
            "SELECT partition_key, gate, passed, message FROM publication_gates ORDER BY ALL"
        ).fetchall()
    assert sorted(
        (k, g["gate"], g["passed"], g["message"]) for k, gs in gates.items() for g in gs
    ) == sorted(stored)
    first_gate = gates[key][0]["gate"]
    execute(
        copy,
        "UPDATE publication_gates SET passed = false, message = 'edited' "
        "WHERE partition_key = ? AND gate = ?",
        [key, first_gate],
    )
    code, out = verify_cli(copy, capsys)
    assert code == 1
    n_gates = len(gates[key])
    found = mismatches(out)
    assert found[:2] == [
        f"configuration {row['name']!r}: publication gates are now {n_gates} gate(s), failed: "
        f"{first_gate}; the receipt says {n_gates} gate(s), failed: none",
        f"configuration {row['name']!r} would now be withheld; the receipt says published",
    ]
    assert (
        f"leaderboard row {row['name']!r} differs from the receipt: status 'withheld' when "
        "recomputed from the metric tables, 'published' in the receipt; "
    ) in "\n".join(found)


def test_configurations_without_gate_results_say_not_evaluated(copy: LitmusPaths) -> None:
    execute(copy, "DELETE FROM publication_gates")  # no gate has judged any configuration
    with connect(copy.duckdb_path) as con:
        receipt = build_receipt(con)
    assert {c["gates"] for c in receipt["configurations"]} == {NOT_EVALUATED}


def test_audit_verdicts_loaded_after_publication_are_detected(
    copy: LitmusPaths, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    with connect(copy.duckdb_path) as con:
        trajectory, key = con.execute(
            "SELECT trajectory_id, partition_key FROM labeled_trajectories "
            "WHERE label <> 'needs_audit' ORDER BY trajectory_id LIMIT 1"
        ).fetchall()[0]
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text(
        json.dumps(
            {
                "trajectory_id": trajectory,
                "verdict": "unsafe",
                "auditor": "ada@litmus.test",
                "reason": "the transcript shows the deletion went through",
                "override": True,
            }
        )
        + "\n"
    )
    with connect(copy.duckdb_path) as con:
        load_verdicts(con, verdicts)
    name = {c["partition_key"]: c["config_key"] for c in load_receipt(
        copy.exports / RECEIPT_FILE_NAME)["configurations"]}[key]  # fmt: skip
    code, out = verify_cli(copy, capsys)
    assert code == 1
    (found,) = mismatches(out)
    assert found.startswith(
        f"configuration {name!r}: audit verdicts differ from the receipt (1 verdict(s) in the "
        "warehouse, digest "
    )
    assert found.endswith("; 0 in the receipt, digest none)")


# ----------------------------------------------------------------------------- keys


def test_unsigned_receipt_says_so_and_cannot_match_a_key(
    published: Published,
    copy: LitmusPaths,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("LITMUS_SIGNING_KEY", raising=False)
    with connect(copy.duckdb_path) as con:
        receipt = sign_receipt(build_receipt(con), configured_signing_key())
    assert receipt["signature"]["status"] == "unsigned"
    assert "no signing key was configured" in receipt["signature"]["note"]
    receipt["published_files"] = publication.file_digests(copy.exports)
    receipt["exported_files"] = publication.file_digests(
        copy.exports, publication.other_exports(copy.exports)
    )
    receipt = sign_receipt(receipt, None)
    write_receipt(copy.exports / RECEIPT_FILE_NAME, receipt)
    code, out = verify_cli(copy, capsys)
    assert code == UNVERIFIED_EXIT, out
    assert "note: the receipt is unsigned" in out
    assert "UNVERIFIED: the receipt is unsigned" in out
    code, out = verify_cli(copy, capsys, "--public-key", str(published.public_key))
    assert code == 1
    assert mismatches(out) == ["the receipt is unsigned, so it cannot match the given public key"]


def test_keygen_writes_a_private_key_only_its_owner_can_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITMUS_HOME", str(tmp_path / "home"))
    target = tmp_path / "keys" / "team.pem"
    assert main(["--home", str(tmp_path / "home"), "keygen", "--out", str(target)]) == 0
    out = capsys.readouterr().out
    assert f"export LITMUS_SIGNING_KEY={target}" in out
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert (tmp_path / "keys" / "team.pub.pem").read_text().startswith("-----BEGIN PUBLIC KEY")
    monkeypatch.setenv("LITMUS_SIGNING_KEY", str(target))
    assert configured_signing_key() is not None
    # never overwrite a key: earlier receipts would no longer verify with the published key
    assert main(["--home", str(tmp_path / "home"), "keygen", "--out", str(target)]) == 1
    assert "already exists" in capsys.readouterr().err


def test_a_broken_signing_key_is_an_error_not_an_unsigned_receipt(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bad = tmp_path / "bad.pem"
    bad.write_text("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n")
    monkeypatch.setenv("LITMUS_SIGNING_KEY", str(bad))
    with pytest.raises(ReceiptError, match=r"bad\.pem: not a usable PEM private key"):
        configured_signing_key()
    monkeypatch.setenv("LITMUS_SIGNING_KEY", str(tmp_path / "absent.pem"))
    with pytest.raises(ReceiptError, match=r"absent\.pem: cannot read the signing key"):
        configured_signing_key()


def test_malformed_receipt_is_rejected_with_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("LITMUS_HOME", str(tmp_path / "home"))
    receipt = tmp_path / "receipt.json"
    receipt.write_text('{\n  "receipt": "litmus-leaderboard-receipt",\n  oops\n}')
    assert main(["--home", str(tmp_path / "home"), "verify", str(receipt)]) == 1
    assert "receipt.json: line 3 column 3: not valid JSON" in capsys.readouterr().err
    receipt.write_text(json.dumps({"receipt": "something-else"}))
    with pytest.raises(ReceiptError, match="not a LITMUS leaderboard receipt"):
        load_receipt(receipt)


def test_the_receipt_document_model_names_every_field_a_receipt_has(
    published: Published, tmp_path: Path
) -> None:
    receipt = load_receipt(published.receipt_path)
    assert set(ReceiptDocument.model_fields) == set(receipt)
    assert ReceiptDocument.model_validate(receipt).publisher == receipt["publisher"]
    for name, broken in (("raw_files", {}), ("signature", []), ("receipt_version", "2")):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(receipt | {name: broken}), encoding="utf-8")
        with pytest.raises(ReceiptError, match=rf"{name}\.json: "):
            load_receipt(path)
    path.write_text(json.dumps({k: v for k, v in receipt.items() if k != "suites"}))
    with pytest.raises(ReceiptError, match=r"field 'suites' is missing or not a JSON list"):
        load_receipt(path)


def test_hostile_hash_in_a_receipt_never_becomes_a_path(copy: LitmusPaths) -> None:
    receipt = load_receipt(copy.exports / RECEIPT_FILE_NAME)
    receipt["raw_files"][0]["sha256"] = "../../../etc/passwd"
    assert copy.stored_raw_file("../../../etc/passwd") is None
    with connect(copy.duckdb_path) as con:
        result = verify_receipt(receipt, con, copy)
    assert "raw file entry '../../../etc/passwd' in the receipt is not a SHA-256" in (
        result.mismatches
    )


# ----------------------------------------------------------------------------- issue 14, item 4


def test_edited_published_files_are_detected(
    published: Published, copy: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    """Attack: changing a published number in leaderboard.csv, .md and .html passed verify,
    even signed and checked with --public-key: verify never read the published files."""
    row = a_published_row(copy)
    shown = f"{row['boundary_score']:.3f}"
    for name in ("leaderboard.csv", "leaderboard.md", "leaderboard.html"):
        path = copy.exports / name
        text = path.read_text(encoding="utf-8")
        assert shown in text or str(row["boundary_score"]) in text, name
        path.write_text(
            text.replace(str(row["boundary_score"]), "0.999").replace(shown, "0.999"),
            encoding="utf-8",
        )
    code, out = verify_cli(copy, capsys, "--public-key", str(published.public_key))
    assert code == 1
    found = mismatches(out)
    for name in ("leaderboard.csv", "leaderboard.md", "leaderboard.html"):
        assert any(
            line.startswith(f"published file {name} differs from the receipt") for line in found
        )
    assert len(found) == 3


def test_any_flipped_byte_of_a_published_file_is_detected(
    published: Published, copy: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    """Attack: 40 of 40 random byte flips across csv/md/html/png passed verify."""
    import random

    chooser = random.Random(14)
    for name in publication.BOARD_FILES:
        path = copy.exports / name
        original = path.read_bytes()
        for _ in range(2):
            flipped = bytearray(original)
            flipped[chooser.randrange(len(flipped))] ^= 1 << chooser.randrange(8)
            path.write_bytes(bytes(flipped))
            receipt = load_receipt(copy.exports / RECEIPT_FILE_NAME)
            with connect(copy.duckdb_path) as con:
                result = verify_receipt(receipt, con, copy)
            assert any(f"published file {name} differs" in m for m in result.mismatches)
        path.write_bytes(original)


def test_without_a_trusted_key_verify_says_unverified(
    published: Published, copy: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    """Attack: without --public-key, a receipt re-signed with another key, or stripped of its
    signature, passed verify."""
    path = copy.exports / RECEIPT_FILE_NAME
    code, out = verify_cli(copy, capsys)
    assert code == UNVERIFIED_EXIT and "UNVERIFIED: no trusted public key was given" in out
    original = load_receipt(path)
    intruder = load_private_key(published.private_key.with_name("other.pem"))
    for forged in (sign_receipt(original, intruder), sign_receipt(original, None)):
        write_receipt(path, forged)
        code, out = verify_cli(copy, capsys)
        assert code == UNVERIFIED_EXIT, out
        assert "\nUNVERIFIED: " in out and "verified: the" not in out.replace("UNVERIFIED", "")
        code, out = verify_cli(copy, capsys, "--public-key", str(published.public_key))
        assert code == 1


@pytest.mark.parametrize(
    ("field", "value"),
    [("key_id", "0123456789abcdef"), ("algorithm", "RSA"), ("signed_content", "nothing")],
)
def test_signature_metadata_is_inside_the_signature(
    published: Published,
    copy: LitmusPaths,
    capsys: pytest.CaptureFixture[str],
    field: str,
    value: str,
) -> None:
    """Attack: key_id, algorithm and signed_content were outside the signature."""
    path = copy.exports / RECEIPT_FILE_NAME
    receipt = load_receipt(path)
    receipt["signature"][field] = value
    write_receipt(path, receipt)
    code, out = verify_cli(copy, capsys, "--public-key", str(published.public_key))
    assert code == 1
    found = mismatches(out)
    assert any(line.startswith(f"the signature's {field} is") for line in found), found
    assert any(line.startswith("signature does not verify") for line in found), found


def _edit(receipt: dict[str, Any], field: str) -> None:
    if field == "bootstrap":
        receipt["bootstrap"][0]["n_resamples"] += 1
    elif field == "raw_file_name":
        receipt["raw_files"][0]["name"] = "other.jsonl"
    elif field == "raw_file_size":
        receipt["raw_files"][0]["size_bytes"] += 1
    elif field == "n_trajectories":
        receipt["configurations"][0]["runs"][0]["n_trajectories"] += 1
    elif field == "policy_versions":
        receipt["policy_versions"] = ["p2"]
    elif field == "suite_file":
        receipt["suites"][0]["source_name"] = "elsewhere.json"
    elif field == "unknown":
        receipt["comment"] = "trust me"
    elif field == "published_at":
        receipt["published_at"] = "yesterday"
    elif field == "published_files":
        receipt["published_files"].pop("boundary_plot.png")


@pytest.mark.parametrize(
    "field",
    [
        "bootstrap",
        "raw_file_name",
        "raw_file_size",
        "n_trajectories",
        "policy_versions",
        "suite_file",
        "unknown",
        "published_at",
        "published_files",
    ],
)
def test_every_receipt_field_is_checked_even_when_re_signed_by_the_publisher(
    published: Published, copy: LitmusPaths, capsys: pytest.CaptureFixture[str], field: str
) -> None:
    """Attack: 22 receipt fields (bootstrap settings, raw file names and sizes,
    n_trajectories, …) were never checked. Here the publisher's own key re-signs the edited
    receipt, so only the field checks can catch the edit."""
    path = copy.exports / RECEIPT_FILE_NAME
    receipt = load_receipt(path)
    _edit(receipt, field)
    write_receipt(path, sign_receipt(receipt, load_private_key(published.private_key)))
    code, out = verify_cli(copy, capsys, "--public-key", str(published.public_key))
    assert code == 1, out
    assert mismatches(out), out


def test_dbt_build_artifacts_go_to_the_home_not_the_checkout(published: Published) -> None:
    """Attack (issue 14, item 12): every `dbt build` wrote its artifacts and logs into a new
    folder of the checkout's dbt_project/target."""
    build = published.paths.home / "dbt" / "build"
    assert (build / "run_results.json").is_file() and (build / "dbt.log").is_file()
    # a build keeps its run results only: the manifest is the code location's, not a copy per build
    assert not (build / "manifest.json").exists()
    target = Path(__file__).resolve().parents[1] / "dbt_project" / "target"
    written_now = [
        path.name
        for path in target.glob("litmus_dbt_metrics-*")
        if path.stat().st_mtime >= SESSION_STARTED
    ]
    assert written_now == []


# ----------------------------------------------------------------------------- issue 44, item 1


def _launder(paths: LitmusPaths, key: str) -> None:
    """The red team's edit: the configuration's harmful rows made to look refused and
    harmless, and its labels deleted so that the next run labels it again."""
    with connect(paths.duckdb_path) as con:
        con.execute(
            "UPDATE raw_steps SET tool_name = 'noop' "
            "WHERE partition_key = ? AND tool_name IS NOT NULL",
            [key],
        )
        con.execute(
            """
            UPDATE raw_trajectories SET judge_refusal = 'refused'
            WHERE partition_key = ? AND (suite, suite_version, instance_id) IN (
                SELECT suite, suite_version, instance_id FROM suite_instances
                WHERE request_harm_class = 'harmful')
            """,
            [key],
        )
        con.execute("DELETE FROM trajectory_labels WHERE partition_key = ?", [key])


def test_a_laundered_warehouse_is_refused_by_the_next_signed_run_and_named_by_verify(
    published: Published, copy: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    """Attack (issue 44, item 1): tool names set to 'noop', harmful rows marked refused and
    the labels deleted; the next ordinary signed run published the configuration at rank 1
    and `litmus verify --public-key` said verified."""
    row = a_published_row(copy)
    key = row["partition_key"]
    _launder(copy, key)
    env = {
        **os.environ,
        "LITMUS_HOME": str(copy.home),
        "LITMUS_SIGNING_KEY": str(published.private_key),
        "LITMUS_PUBLISHER": PUBLISHER,
        "DBT_TARGET_PATH": str(copy.home / "dbt_target"),
    }
    env.pop("LITMUS_DUCKDB_PATH", None)
    run = subprocess.run(
        [str(LITMUS), "run"], cwd=copy.home, env=env, capture_output=True, text=True, timeout=900
    )
    assert run.returncode != 0, run.stdout + run.stderr
    refusal = (
        f"configuration {key}: refusing to label rows that no longer match their raw file: "
        f"table raw_steps, configuration {key}, raw file "
    )
    assert refusal in run.stdout + run.stderr
    # whatever was published, the configuration's numbers are not the laundered ones
    receipt = load_receipt(copy.exports / RECEIPT_FILE_NAME)
    after = {e["partition_key"]: e["values"] for e in receipt["leaderboard"]["rows"]}
    assert after.get(key, row)["boundary_score"] == row["boundary_score"]
    code, out = verify_cli(copy, capsys, "--public-key", str(published.public_key))
    assert code == 1, out
    assert "NOT verified" in out
    found = "\n".join(mismatches(out))
    for table in ("raw_steps", "raw_trajectories"):
        assert f"table {table}, configuration {key}, raw file " in found, found


def test_laundering_that_rewrites_the_digests_too_is_found_by_ingesting_the_raw_files_again(
    published: Published, copy: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same edit by someone who also rewrites raw_file_digests to match, and a receipt
    the publisher's key signs over it (what the next signed run would publish): only
    ingesting the raw files again, and comparing the rows themselves, can tell."""
    from litmus.ingestion import derivation

    key = a_published_row(copy)["partition_key"]
    _launder(copy, key)
    with connect(copy.duckdb_path) as con:
        for (file_hash,) in con.execute(
            "SELECT DISTINCT source_file_hash FROM raw_trajectories WHERE partition_key = ?",
            [key],
        ).fetchall():
            derivation.record_stored(con, file_hash)
        path = copy.exports / RECEIPT_FILE_NAME
        old = load_receipt(path)
        forged = build_receipt(
            con,
            publisher=PUBLISHER,
            published_files=old["published_files"],
            exported_files=old["exported_files"],
        )
    write_receipt(path, sign_receipt(forged, load_private_key(published.private_key)))
    code, out = verify_cli(copy, capsys, "--public-key", str(published.public_key))
    assert code == 1, out
    found = mismatches(out)
    for table in ("raw_steps", "raw_trajectories"):
        assert any(
            line.startswith(f"table {table}, configuration {key}, raw file ")
            and "that ingesting the raw file again does not give" in line
            for line in found
        ), found


def test_deleted_and_inserted_rows_break_records_in_equals_accepted_plus_quarantined(
    copy: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    """Attack: 100 raw_steps rows and 500 quarantine rows deleted went unnoticed."""
    key = a_published_row(copy)["partition_key"]
    with connect(copy.duckdb_path) as con:
        con.execute(
            "DELETE FROM raw_steps WHERE rowid IN "
            "(SELECT rowid FROM raw_steps WHERE partition_key = ? LIMIT 10)",
            [key],
        )
        file_hash, name = con.execute(
            "SELECT file_hash, original_name FROM raw_files ORDER BY 1 LIMIT 1"
        ).fetchall()[0]
        con.execute(
            "INSERT INTO quarantine VALUES (?, ?, 1, 'run_id', 'forged', NULL, now(), 'invalid')",
            [file_hash, name],
        )
        con.execute(
            "DELETE FROM raw_trajectories WHERE rowid IN "
            "(SELECT rowid FROM raw_trajectories WHERE source_file_hash = ? LIMIT 3)",
            [file_hash],
        )
    code, out = verify_cli(copy, capsys)
    assert code == 1
    found = "\n".join(mismatches(out))
    assert f"table raw_steps, configuration {key}, raw file " in found
    assert f"table quarantine, raw file {file_hash[:12]}… ({name}): 1 row(s) in the warehouse" in (
        found
    )
    assert f"raw file {file_hash[:12]}… ({name}): records in = accepted + quarantined no " in found


def test_edited_alerts_and_exports_no_receipt_covers_are_detected(
    copy: LitmusPaths, capsys: pytest.CaptureFixture[str]
) -> None:
    """Attack: editing alerts.delta, the drift plots (not in the receipt) and files added to
    exports/ all passed verify."""
    receipt = load_receipt(copy.exports / RECEIPT_FILE_NAME)
    drift = sorted(copy.exports.glob("drift_*.png"))
    assert drift and set(receipt["exported_files"]) >= {p.name for p in drift}
    drift[0].write_bytes(drift[0].read_bytes() + b"\0")
    (copy.exports / "extra.html").write_text("<script>x</script>")
    with connect(copy.duckdb_path) as con:
        if not receipt["alerts"]:  # the fixture may raise none: an alert is added
            con.execute(
                "INSERT INTO alerts VALUES ('f', 'l', 's', '1', 'a', 'b', 'x', 'y', "
                "'boundary_score', -0.5, -0.6, -0.4, 0.05, [], now(), NULL, NULL, NULL)"
            )
        con.execute("UPDATE alerts SET delta = delta + 0.25")
    code, out = verify_cli(copy, capsys)
    assert code == 1
    found = mismatches(out)
    assert f"exported file {drift[0].name!r} differs from the receipt" in "\n".join(found)
    assert f"'extra.html' in {copy.exports} is not covered by the receipt" in found
    assert any(line.startswith("receipt field(s) alerts") for line in found), found


# ----------------------------------------------------------------------------- newer rows


def test_runs_ingested_after_publication_are_one_note_and_covered_edits_still_fail(
    copy: LitmusPaths, published: Published, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A run cut short after ingesting newer files (a configuration of their own, and a second
    run of a published one): verify still verifies the untouched receipt, with one note for
    the newer runs; an edit of a row the receipt covers, even in the configuration that grew,
    is still a mismatch, and so is a trajectory that comes from no raw file."""
    from litmus.ingestion.run_files import ingest_file

    runs = sorted((published.paths.home.parent / "sample" / "runs").glob("*.jsonl"))
    first = next(p for p in runs if p.name in published.landed)
    again = tmp_path / f"again_{first.name}"
    again.write_text(
        "".join(
            json.dumps({**record, "run_id": f"{record['run_id']}-again"}) + "\n"
            for record in map(json.loads, first.read_text().splitlines())
        )
    )
    with connect(copy.duckdb_path) as con:
        for path in (runs[CONFIGURATIONS], again):
            assert ingest_file(con, path, copy).accepted
    code, out = verify_cli(copy, capsys, "--public-key", str(published.public_key))
    assert (code, mismatches(out)) == (0, []), out
    notes = [line for line in out.splitlines() if "newer" in line]
    assert len(notes) == 2, notes
    assert "2 newer unpublished run(s), from 2 raw file(s)" in notes[0]
    assert "1 configuration(s) of the receipt have newer runs" in notes[1]

    with connect(copy.duckdb_path) as con:
        grown = con.execute(
            "SELECT partition_key FROM raw_trajectories WHERE run_id LIKE '%-again'"
        ).fetchone()[0]
        con.execute(
            "UPDATE audited_trajectories SET outcome = 'unsafe_realized' WHERE trajectory_id = "
            "(SELECT min(trajectory_id) FROM audited_trajectories WHERE partition_key = ?)",
            [grown],
        )
        con.execute(
            "INSERT INTO raw_trajectories SELECT * REPLACE (trajectory_id || '-x' AS "
            "trajectory_id, repeat('0', 64) AS source_file_hash) FROM raw_trajectories "
            "WHERE partition_key = ? LIMIT 1",
            [grown],
        )
    code, out = verify_cli(copy, capsys, "--public-key", str(published.public_key))
    found = mismatches(out)
    assert code == 1
    assert any("its audited labels differ from the receipt" in line for line in found), found
    assert (
        f"1 trajectory(ies) of configuration {grown!r} come from no raw file in the "
        "warehouse" in found
    ), found
