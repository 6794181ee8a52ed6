"""Command-line subcommands of this domain, registered into ``litmus``."""

import argparse


def register(commands: "argparse._SubParsersAction[argparse.ArgumentParser]") -> None:
    """Add this domain's subcommands (each sets ``handler=fn(args, paths) -> int``)."""
