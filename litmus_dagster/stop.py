"""Whether the person running ``litmus`` asked it to stop (Ctrl-C or SIGTERM), and where the
request may interrupt the process.

Kept apart from the pipeline so that the signal handler imports nothing: the handler calls
:func:`interrupt`, which records the request and raises ``KeyboardInterrupt`` unless the main
thread is inside a :func:`deferred` section; the pipeline also checks the request between its
runs (:func:`check`), because an interrupt raised while Python runs a finalizer or a
garbage-collection callback is swallowed there and would otherwise let the run go on.

A :func:`deferred` section is code an exception must not cut in half: the run history's
connection handling, which takes a lock and a pooled connection and gives both back when its
caller is done. An interrupt raised in the instant between taking them and the caller's
``with`` block starting would leave both taken forever, and the next write of the same process
(Dagster recording that the run stopped) would wait for that lock for good. Inside a deferred
section the request is recorded and raised as soon as the section ends.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

requested = False
_deferring = 0  # deferred sections the main thread is in
_pending = False  # a request that arrived inside a deferred section, not raised yet


def request() -> None:
    global requested
    requested = True


def check() -> None:
    """Raise KeyboardInterrupt once a stop was requested."""
    if requested:
        raise KeyboardInterrupt


def interrupt() -> None:
    """What a stop signal does: record the request, then raise ``KeyboardInterrupt`` here, or
    where the deferred section the main thread is in ends."""
    global _pending
    request()
    if _deferring:
        _pending = True
        return
    raise KeyboardInterrupt


@contextmanager
def deferred() -> Iterator[None]:
    """A section a stop signal does not cut into; a stop requested inside it is raised as the
    outermost such section ends (signal handlers run on the main thread only, so only the
    main thread's sections defer)."""
    global _deferring, _pending
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _deferring += 1
    try:
        yield
    finally:
        _deferring -= 1
    if not _deferring and _pending:
        _pending = False
        raise KeyboardInterrupt


STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


@contextmanager
def held_signals() -> Iterator[None]:
    """A short section no stop signal cuts, whoever handles the signal (the CLI's handler, or
    Dagster's while a run executes, which raises its interrupt error inside the step): a
    SIGINT or SIGTERM arriving inside is held and sent again, to the handler that was
    installed, once the section ends. Main thread only (where Python runs signal handlers)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held: list[int] = []
    previous = {signum: signal.getsignal(signum) for signum in STOP_SIGNALS}
    for signum in STOP_SIGNALS:
        signal.signal(signum, lambda signum, frame: held.append(signum))
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        for signum in dict.fromkeys(held):
            signal.raise_signal(signum)
