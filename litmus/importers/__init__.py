"""Importers: foreign run logs and benchmark data → the native LITMUS formats.

- :mod:`litmus.importers.inspect_log` — Inspect AI ``.eval`` / ``.json`` logs → SPEC §4 records.
- :mod:`litmus.importers.agentharm` — AgentHarm behaviour files → a SPEC §3 suite.

Importing this package does not import ``inspect_ai``; the Inspect importer loads it on use.
See ``docs/importers.md``.
"""

from litmus.importers.agentharm import (
    AgentHarmFormatError,
    agentharm_instance_id,
    agentharm_suite,
)
from litmus.importers.inspect_log import (
    ImportMapping,
    ImportProblem,
    ImportSummary,
    InspectLogError,
    import_inspect_log,
    iter_inspect_records,
)

__all__ = [
    "AgentHarmFormatError",
    "ImportMapping",
    "ImportProblem",
    "ImportSummary",
    "InspectLogError",
    "agentharm_instance_id",
    "agentharm_suite",
    "import_inspect_log",
    "iter_inspect_records",
]
