"""Whether the person running ``litmus`` asked it to stop (Ctrl-C or SIGTERM).

Kept apart from the pipeline so that the signal handler imports nothing: the handler sets
``requested`` and raises ``KeyboardInterrupt``; the pipeline also checks the flag between its
runs, because an interrupt raised while Python runs a finalizer or a garbage-collection
callback is swallowed there and would otherwise let the run go on.
"""

requested = False


def request() -> None:
    global requested
    requested = True


def check() -> None:
    """Raise KeyboardInterrupt once a stop was requested."""
    if requested:
        raise KeyboardInterrupt
