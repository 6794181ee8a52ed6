"""``litmus eval-refusal``: the refusal judgment scored against human labels."""

from __future__ import annotations

import argparse
from pathlib import Path

from litmus.errors import LitmusError
from litmus.settings import LitmusPaths
from litmus_dagster.cli.common import default_shared_data, say


def cmd_eval_refusal(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.labeling.refusal_eval import evaluate_refusal_classifier, format_report

    if args.folder is None and not args.judge:
        from litmus.labeling.refusal_train import evaluate_dev_sources

        print(format_report(evaluate_dev_sources()))
        return 0
    folder = Path(args.folder or default_shared_data("xstest_dev"))
    if not folder.is_dir():
        raise LitmusError(f"{folder}: not a folder of XSTest completion CSV files")
    if args.judge:
        from litmus.labeling.refusal_judge import judge_eval_options

        options = judge_eval_options(args.judge, paths.home, progress=say)
        print(format_report(evaluate_refusal_classifier(folder, **options)))
        return 0
    print(format_report(evaluate_refusal_classifier(folder)))
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add this family's subcommands (each sets ``handler=fn(args, paths) -> int``)."""

    refusal = commands.add_parser(
        "eval-refusal", help="score the refusal judgment against human labels"
    )
    refusal.add_argument(
        "folder",
        nargs="?",
        help="a folder of XSTest-format completions (default: every labelled development "
        "source in ../shared/data, per source and leave-one-source-out)",
    )
    refusal.add_argument(
        "--judge", metavar="MODEL", help="score this LLM refusal judge instead of the classifier"
    )
    refusal.set_defaults(handler=cmd_eval_refusal)
