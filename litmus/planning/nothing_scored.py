"""Why there is nothing to score yet, in one sentence that says what to do next.

A home with no run file, one holding only a suite (``litmus suite-add``, ``litmus
convert-agentharm``) and one whose every landed record was quarantined all hold no
configuration: there is no board to build, and ``litmus run`` (or the landing sensor's run)
says so instead of publishing an empty one. Plain Python over the landing folder, the suites
folder and the warehouse's counts.
"""

from __future__ import annotations

import duckdb

from litmus.runs import landed_files, not_ingested, suite_files
from litmus.settings import LitmusPaths

LAND_HINT = (
    "land run files with `litmus land FILE` (or `litmus import-inspect LOG`, "
    "`litmus import-transcripts FILE`; `litmus sample` stages example data), then `litmus run`"
)


NOTHING_SCORED = "nothing was scored: "


def configurations_stored(con: duckdb.DuckDBPyConnection) -> int:
    return int(
        con.execute("SELECT count(DISTINCT partition_key) FROM raw_trajectories").fetchone()[0]
    )


def nothing_labeled(paths: LitmusPaths) -> str | None:
    """Why no configuration can be audited, re-scored or compared yet, saying what to do next
    (:func:`nothing_scored` without its "nothing was scored: "); None when one is stored.
    Reads only, and creates nothing."""
    from litmus.warehouse import connect_read_only, warehouse_exists

    if not warehouse_exists(paths.duckdb_path):
        why = nothing_scored(paths)
    else:
        with connect_read_only(paths.duckdb_path) as con:
            why = nothing_scored(paths, con)
    return None if why is None else why.removeprefix(NOTHING_SCORED)


def nothing_scored(paths: LitmusPaths, con: duckdb.DuckDBPyConnection | None = None) -> str | None:
    """Why nothing can be scored (starting "nothing was scored: "), or None when the warehouse
    (``con``; None: not created yet) holds a configuration. Call it once the landed files were
    ingested: a landed file that waits is counted as not scored."""
    quarantined = curable = quarantined_files = 0
    if con is not None:
        if configurations_stored(con):
            return None
        from litmus.ingestion.run_files import CURABLE_QUARANTINE_SQL

        quarantined, curable, quarantined_files = (
            int(value or 0)
            for value in con.execute(
                f"SELECT count(*), count(*) FILTER ({CURABLE_QUARANTINE_SQL}), "
                "count(DISTINCT source_name) FROM quarantine"
            ).fetchone()
        )
    if quarantined:
        waiting = (
            f" ({curable} wait for a suite that is not loaded: add it with `litmus suite-add "
            "FILE` and run again)"
            if curable
            else ""
        )
        return (
            f"nothing was scored: every one of the {quarantined} record(s) in "
            f"{quarantined_files} landed file(s) was quarantined{waiting}; "
            "`litmus quarantine` lists each with its file, line and reason"
        )
    refused = not_ingested(paths) if paths.landing.is_dir() else []
    if refused:
        return (
            f"nothing was scored: {len(refused)} landed file(s) hold no record ingestion reads "
            f"(`litmus quarantine` says why for each); {LAND_HINT}"
        )
    landed = landed_files(paths) if paths.landing.is_dir() else []
    if landed:
        return (
            f"nothing was scored: {len(landed)} landed file(s) yielded no trajectory; "
            "`litmus status` and `litmus quarantine` say why"
        )
    suites = suite_files(paths) if paths.suites.is_dir() else []
    if suites:
        names = ", ".join(path.name for path in suites[:3]) + (", …" if len(suites) > 3 else "")
        return (
            f"nothing was scored: suite file(s) {names} loaded, but no run file landed; {LAND_HINT}"
        )
    return f"nothing was scored: {paths.home} holds no run file or suite yet; {LAND_HINT}"
