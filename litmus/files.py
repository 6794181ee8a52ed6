"""Writing a whole file so that no reader, and no crash, ever leaves half of it in place."""

from __future__ import annotations

import os
import threading
from pathlib import Path


def write_atomically(path: Path, data: str | bytes, *, durable: bool = False) -> Path:
    """Replace ``path`` with ``data`` (text is written as UTF-8) in one step.

    A reader sees the previous file or the new one, never part of either; a write that fails
    leaves the previous file and no temporary one. The temporary file is a hidden name beside
    ``path`` (the landing and suite folders skip dot-files), unique to this process and
    thread, created with the usual permissions. ``durable``: its content is synced to disk
    before it replaces ``path`` (a publication's commit point, ``litmus.trust.publication``,
    must survive a power cut).
    """
    content = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}-{threading.get_ident()}")
    try:
        with partial.open("wb") as handle:
            handle.write(content)
            if durable:
                handle.flush()
                os.fsync(handle.fileno())
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path
