"""Trust assets (SPEC §10): run fingerprints and the signed receipt of each publication."""

import os

import dagster as dg

from litmus.faults import crash_point
from litmus.fingerprint import (
    compute_run_fingerprints,
    group_by_configuration,
    store_run_fingerprints,
)
from litmus.ingestion import derivation
from litmus.metrics.leaderboard import Leaderboard
from litmus.trust import publication
from litmus.trust.receipts import (
    RECEIPT_FILE_NAME,
    build_receipt,
    configured_signing_key,
    sign_receipt,
    write_receipt,
)
from litmus.trust.receipts.digests import leaderboard_table_rows, plain_rows
from litmus_dagster import stop
from litmus_dagster.ingestion.assets import suite_catalog
from litmus_dagster.labeling.assets import audited_trajectories
from litmus_dagster.metrics.assets import NOTHING_SCORED, leaderboard, render_board_pages
from litmus_dagster.partitions import WAREHOUSE_POOL
from litmus_dagster.releases.assets import release_drift
from litmus_dagster.resources import LitmusWarehouse

TRUST_GROUP = "trust"


@dg.asset(
    deps=[audited_trajectories, suite_catalog],
    group_name=TRUST_GROUP,
    pool=WAREHOUSE_POOL,
    kinds={"python", "duckdb"},
    description=(
        "One fingerprint per ingested run: a hash of its suite (name, version, content), "
        "configuration, judges, labeler and classifier versions and raw file hashes."
    ),
)
def run_fingerprints(warehouse: LitmusWarehouse) -> dg.MaterializeResult:
    with warehouse.get_connection() as con:
        fingerprints = compute_run_fingerprints(con)
        store_run_fingerprints(con, fingerprints)
    by_configuration = group_by_configuration(fingerprints)
    return dg.MaterializeResult(
        metadata={
            "runs": len(fingerprints),
            "configurations": dg.MetadataValue.json(by_configuration),
        }
    )


@dg.asset(
    deps=[leaderboard, run_fingerprints, release_drift],
    group_name=TRUST_GROUP,
    pool=WAREHOUSE_POOL,
    kinds={"python"},
    description=(
        "The receipt of the published leaderboard (<home>/exports/receipt.json): input, suite "
        "and code hashes, gate results, a digest of every row; Ed25519-signed when "
        "LITMUS_SIGNING_KEY names a key. Check it with `litmus verify`."
    ),
)
def leaderboard_receipt(warehouse: LitmusWarehouse) -> dg.MaterializeResult:
    key = configured_signing_key()  # before any work: a broken key fails the publication
    exports = warehouse.paths.exports
    staging = publication.staging_dir(exports)
    with warehouse.get_connection() as con:
        if not (staging / "leaderboard.csv").is_file():
            if leaderboard_table_rows(con) is None:  # nothing scored, nothing ever published
                return dg.MaterializeResult(metadata={"published": False, "reason": NOTHING_SCORED})
            raise dg.Failure("no staged leaderboard to publish: materialize `leaderboard` first")
        derivation.record_pending(con)  # files of a warehouse from before digests: listed
        staged_rows = publication.staged_table(staging)
        if staged_rows is None:
            raise dg.Failure("the staged leaderboard has no table: materialize `leaderboard`")
        # the pages show the very rows the receipt digests and the table receives
        render_board_pages(con, staging, Leaderboard.from_arrow(staged_rows))
        receipt = sign_receipt(
            build_receipt(
                con,
                published_files=publication.file_digests(staging),
                exported_files=publication.exported_digests(exports),
                rows=plain_rows(staged_rows),
            ),
            key,
        )
    write_receipt(staging / RECEIPT_FILE_NAME, receipt)
    crash_point("receipt.staged")
    # one transaction and a few renames: an interrupt waits for them, never splits them
    with stop.held_signals():
        # board, plots, table and receipt: together or not at all
        publication.commit(exports, warehouse.get_connection)
    path = exports / RECEIPT_FILE_NAME
    signature = receipt["signature"]
    return dg.MaterializeResult(
        metadata={
            "path": dg.MetadataValue.path(os.fspath(path)),
            "signed": signature["status"] == "signed",
            "key_id": signature.get("key_id", "unsigned"),
            "leaderboard_digest": receipt["leaderboard"]["digest"],
            "raw_files": len(receipt["raw_files"]),
            "configurations": len(receipt["configurations"]),
            "git_commit": receipt["code"].get("git_commit", "not a git checkout"),
            "verify": dg.MetadataValue.md(f"`litmus verify {os.fspath(path)}`"),
        }
    )


trust_assets = [run_fingerprints, leaderboard_receipt]
