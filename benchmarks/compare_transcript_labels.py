"""Label the AgentHarm transcripts (or any turn-list file with a 0/1 ``label``) and compare
with the dataset's own grader, by class, with the SPEC §5 reason for each disagreement.

    python benchmarks/compare_transcript_labels.py [TRANSCRIPTS] [--agentharm FOLDER]
        [--no-suite] [--json]

By default the transcripts are linked to the AgentHarm test_public suite (target functions
as the oracle) and labeled a second time without any suite (oracle-less), so both tables
print. Re-run it after a refusal-classifier change: the classes move, the invariants
(tests/test_import_transcripts.py) must not.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from litmus.formats import Suite
from litmus.importers.agentharm import agentharm_suite
from litmus.labeling.grader_comparison import comparison_json, label_transcript_file

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "transcripts",
        nargs="?",
        default=str(DATA / "agentharm_transcripts" / "agentharm_trajectories.json"),
    )
    parser.add_argument("--agentharm", default=str(DATA / "agentharm"))
    parser.add_argument("--no-suite", action="store_true", help="only the oracle-less run")
    parser.add_argument("--json", action="store_true", help="machine-readable classes")
    args = parser.parse_args()
    source = Path(args.transcripts)
    runs: list[tuple[str, Suite | None]] = []
    if not args.no_suite:
        suite = Suite.model_validate(agentharm_suite(Path(args.agentharm)))
        runs.append((f"with suite {suite.suite}@{suite.suite_version} (oracle)", suite))
    runs.append(("without a suite (oracle-less instances)", None))
    for title, suite in runs:
        comparison = label_transcript_file(source, suite=suite)
        print(f"\n## {source.name}, {title}")
        print(
            f"records in {comparison.records_in}, labeled {comparison.labeled}, "
            f"quarantined {comparison.quarantined}\n"
        )
        print(comparison_json(comparison) if args.json else comparison.to_markdown())


if __name__ == "__main__":
    main()
