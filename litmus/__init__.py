"""LITMUS: scoring agentic safety benchmarks with the refusal–harm decomposition.

The package is grouped by the domains its Dagster wiring (``litmus_dagster/``) shows:
``ingestion``, ``labeling``, ``audit``, ``gates``, ``metrics``, ``releases``, ``trust`` and
``importers``, with ``planning`` (what must run, and why) above them all. The modules at the
top are what every domain shares: formats, settings, the warehouse, errors, the neutralization
of hostile text, the bootstrap statistics and run fingerprints.
"""

from pathlib import Path

# The checkout that holds litmus/, expectations/ and dbt_project/; the development data lives
# beside it in ../shared/data.
PROJECT_DIR = Path(__file__).resolve().parent.parent
SHARED_DATA_DIR = PROJECT_DIR.parent / "shared" / "data"
