"""Ingesting raw files again, with the production ingestion code, into a scratch warehouse:
what ``litmus verify`` compares the stored rows with (SPEC §10)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from litmus.ingestion.derivation import Digests, recorded_digests
from litmus.ingestion.run_files import ingest_items, iter_jsonl_lines
from litmus.ingestion.suites import store_suite_file
from litmus.warehouse import connect


@dataclass(frozen=True)
class Rederived:
    """What ingesting raw files again gave: its warehouse, digests and record counts."""

    db_path: Path
    digests: Digests
    counts: dict[str, tuple[int, int, int]]  # file hash → (records in, accepted, quarantined)


def rederive(
    files: Sequence[tuple[str, str, str, Path]],
    suite_files: Sequence[Path],
    scratch: Path,
    *,
    inspect_items: Any = None,
) -> Rederived:
    """Ingest ``files`` — (sha256, name landed under, format, stored path), in the order they
    were ingested — into a new warehouse in the folder ``scratch`` holding ``suite_files``,
    with the production ingestion code (the bulk path and the per-record validator)."""
    db_path = scratch / "rederived.duckdb"
    with connect(db_path) as con:
        for path in suite_files:
            store_suite_file(con, path)
        for sha, name, file_format, stored in files:
            items = (
                iter_jsonl_lines(stored) if file_format == "native-jsonl" else inspect_items(stored)
            )
            ingest_items(
                con,
                items,
                source_name=name,
                file_hash=sha,
                stored_path=stored,
                file_format=file_format,
                size_bytes=stored.stat().st_size,
            )
        counts = {
            row[0]: (int(row[1]), int(row[2]), int(row[3]))
            for row in con.execute(
                "SELECT file_hash, records_total, records_accepted, records_quarantined "
                "FROM raw_files"
            ).fetchall()
        }
        return Rederived(db_path, recorded_digests(con), counts)
