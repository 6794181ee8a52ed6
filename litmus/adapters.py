"""Every use of a dependency's private API in ``litmus/``, and only here.

Each is a speed-up or a parse no public API gives, and each has a test that fails loudly when
an upgrade of the dependency breaks it (tests/test_adapters.py). A speed-up whose hook is
gone is skipped at run time (the results are the same, only slower) while its test fails.
The Dagster, dbt and interpreter-exit ones are in ``litmus_dagster/adapters/``.
"""

from __future__ import annotations

import re._constants as _regex_constants
import re._parser as _regex_parser
from typing import Any

# --------------------------------------------------------------------------- Python's re
# fnmatch translates a bracket set into a regex; Python's own parse of that regex gives the
# set's ranges exactly as fnmatch means them (litmus.globmatch).
REGEX_LITERAL = _regex_constants.LITERAL
REGEX_NOT_LITERAL = _regex_constants.NOT_LITERAL
REGEX_ANY = _regex_constants.ANY
REGEX_ASSERT_NOT = _regex_constants.ASSERT_NOT
REGEX_IN = _regex_constants.IN
REGEX_NEGATE = _regex_constants.NEGATE
REGEX_RANGE = _regex_constants.RANGE


def parse_regex(pattern: str) -> list[tuple[Any, Any]]:
    """Python's parse of a regex: its (opcode, argument) pairs, as ``re`` compiles them."""
    return list(_regex_parser.parse(pattern))


# --------------------------------------------------------------------------- Great Expectations


def skip_batch_fingerprints() -> None:
    """GE fingerprints every in-memory batch under ``HASH_THRESHOLD`` bytes (pandas' hash of
    every cell, then MD5) for a batch marker nothing here reads: a quarter of a gating step's
    CPU. Frames above it already go without one; this puts every frame above it."""
    from great_expectations.execution_engine import pandas_execution_engine

    if hasattr(pandas_execution_engine, "HASH_THRESHOLD"):
        pandas_execution_engine.HASH_THRESHOLD = 0


def keep_project_config_unwritten(context: Any) -> None:
    """Adding, changing or deleting a data source makes a GE context write its whole project
    config as YAML (four times per frame: a tenth of the gates' CPU on small frames). An
    ephemeral context writes it to an in-memory store nothing here reads; the data sources
    themselves are kept in the context's own registry either way."""
    if callable(getattr(context, "_save_project_config", None)):
        context._save_project_config = _leave_project_config_unwritten


def _leave_project_config_unwritten() -> None:
    """What a context does instead of writing its config as YAML."""
