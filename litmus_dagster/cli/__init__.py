"""``litmus``: the command line. Every command exits non-zero with one clear line on error.

One module per command family (each adds its subcommands with ``register``); this module
builds the parser, runs a command and turns an error or an interrupt into one line.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading
from collections.abc import Sequence

from litmus.settings import litmus_paths
from litmus_dagster.cli import importing, lake, quarantine, refusal, run, schemas, status
from litmus_dagster.cli.common import say
from litmus_dagster.cli.importing import ensure_suite_files_fit
from litmus_dagster.cli.quarantine import HELD_BACK_FOR_SUITE, HELD_BACK_NEXT_RUN
from litmus_dagster.cli.run import DEMO_MARKER, prepare_demo_home

__all__ = [
    "BROKEN_PIPE_EXIT",
    "DEMO_MARKER",
    "HELD_BACK_FOR_SUITE",
    "HELD_BACK_NEXT_RUN",
    "INTERRUPTED",
    "build_parser",
    "console_main",
    "ensure_suite_files_fit",
    "main",
    "prepare_demo_home",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="litmus",
        description="Fail-closed scoring of agentic safety benchmarks.",
    )
    parser.add_argument(
        "--home", help="state folder (default: $LITMUS_HOME or ./.litmus)", default=None
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on error")
    commands = parser.add_subparsers(dest="command", required=True)

    from litmus_dagster.audit.cli import register as register_audit_commands
    from litmus_dagster.releases.cli import register as register_release_commands
    from litmus_dagster.trust.cli import register as register_trust_commands

    # the order of `litmus --help`
    for register in (
        run.register,
        importing.register,
        status.register,
        quarantine.register,
        schemas.register,
        refusal.register,
        register_audit_commands,
        register_release_commands,
        register_trust_commands,
        lake.register,
    ):
        register(commands)
    return parser


def console_main() -> None:
    """The ``litmus`` executable: :func:`main`, then a quick exit. Tearing down the
    interpreter's object graph (Dagster, dbt, GE and their imports) costs up to three
    CPU-seconds per command and does nothing for us: every file, connection and run history entry is
    closed or committed by then, and the exit handlers still run. A command that raised, or
    one leaving a non-daemon thread behind, exits the usual way."""
    try:
        code = main()
        sys.stdout.flush()  # a reader that went away shows here at the latest
    except BrokenPipeError:
        code = _reader_gone()
    if any(
        thread is not threading.main_thread() and thread.is_alive() and not thread.daemon
        for thread in threading.enumerate()
    ):
        sys.exit(code)
    from litmus_dagster.adapters.process_exit import exit_without_teardown

    exit_without_teardown(code)  # the exit handlers still run


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    paths = litmus_paths(args.home)
    os.environ.setdefault("LITMUS_HOME", str(paths.home))
    from litmus.warehouse import set_wait_notice

    set_wait_notice(lambda message: say(f"litmus: {message}"))
    # SIGTERM stops a command like Ctrl-C: the current step is abandoned (its transaction
    # rolls back), nothing after it runs, and the last published board stays as it was.
    signal.signal(signal.SIGTERM, _interrupt)
    signal.signal(signal.SIGINT, _interrupt)
    sys.unraisablehook = _quiet_interrupts
    try:
        # the demo first checks whose folder it is; a command that only looks creates nothing
        if getattr(args, "prepare_home", True) and not getattr(args, "read_only", False):
            paths.ensure()
        return int(args.handler(args, paths))
    except KeyboardInterrupt:
        return _interrupted()
    except BrokenPipeError:  # `litmus status | head -1`: the reader has all it wanted
        return _reader_gone()
    except Exception as exc:  # one clear line for people; --debug for the traceback
        from litmus_dagster import stop

        if stop.requested:  # what broke after a stop request (DuckDB's "Query interrupted")
            return _interrupted()
        if args.debug:
            raise
        from litmus.warehouse import out_of_memory_hint

        message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        say(f"litmus: error: {message}{out_of_memory_hint(type(exc).__name__)}")
        return 1
    except BaseException as exc:  # Dagster's interrupt error is a BaseException
        if type(exc).__name__ != "DagsterExecutionInterruptedError":
            raise
        return _interrupted()


# What a shell shows for a command whose output pipe its reader closed (`yes | head -1`):
# 128 + SIGPIPE, said by an exit code rather than by dying of the signal, whose default action
# would also end a run writing to a socket a server closed.
BROKEN_PIPE_EXIT = 128 + signal.SIGPIPE


def _reader_gone() -> int:
    """The reader of stdout (or stderr) went away: nothing more can be said to it, so the
    standard streams point at /dev/null (the flush at exit must not fail again and print
    "Broken pipe"), as the Python documentation's note on SIGPIPE does."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            os.dup2(devnull, stream.fileno())
    os.close(devnull)
    return BROKEN_PIPE_EXIT


# How long a command told to stop may take to stop by itself (roll back its transaction,
# record the stopped run) before it is ended outright: a stop request always ends the process,
# even one that something it runs has left waiting for good. Ending it there is a crash like any
# other, which the warehouse survives (each write is one transaction).
STOP_GRACE_S = 30.0


def _interrupt(signum: int, frame: object) -> None:
    from litmus_dagster import stop

    if not stop.requested:
        _end_unless_stopped_within(STOP_GRACE_S)
    stop.interrupt()  # recorded for the pipeline even where the exception is swallowed


def _end_unless_stopped_within(seconds: float) -> None:
    def end() -> None:
        _say_interrupted()
        os._exit(130)

    deadline = threading.Timer(seconds, end)
    deadline.daemon = True  # a process that stopped in time exits without waiting for it
    deadline.start()


_default_unraisablehook = sys.unraisablehook


def _quiet_interrupts(unraisable: object) -> None:
    """An interrupt that landed in a finalizer is not an error to print: the stop flag
    carries it to the pipeline."""
    if isinstance(getattr(unraisable, "exc_value", None), KeyboardInterrupt):
        return
    _default_unraisablehook(unraisable)  # type: ignore[arg-type]


def _interrupted() -> int:
    # ignore further signals while saying so: a second Ctrl-C must not print a traceback
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    _say_interrupted()
    return 130


# What an interrupted command says, whatever it was doing: a publication already under way
# is finished first (its few renames are not cut), so the board may or may not be new.
INTERRUPTED = (
    "litmus: interrupted; stopped before finishing (`litmus status` shows what is published; "
    "`litmus run` finishes the rest)"
)
_interrupted_told = threading.Lock()  # taken for good by whoever says it first


def _say_interrupted() -> None:
    if _interrupted_told.acquire(blocking=False):  # once, whether it stopped or was ended
        say(INTERRUPTED)
