"""``litmus schemas``: the JSON Schemas of the native formats."""

from __future__ import annotations

import argparse

from litmus.errors import LitmusError
from litmus.settings import LitmusPaths
from litmus_dagster.cli.common import say


def cmd_schemas(args: argparse.Namespace, paths: LitmusPaths) -> int:
    from litmus.schemas import write_schemas

    changed = write_schemas(check=args.check)
    if args.check and changed:
        raise LitmusError(f"shipped JSON Schemas are out of date: {', '.join(changed)}")
    say("JSON Schemas up to date" if not changed else f"wrote {', '.join(changed)}")
    return 0


def register(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add this family's subcommands (each sets ``handler=fn(args, paths) -> int``)."""
    schemas = commands.add_parser("schemas", help="write the JSON Schemas of the native formats")
    schemas.add_argument("--check", action="store_true", help="fail if they are out of date")
    schemas.set_defaults(handler=cmd_schemas)
