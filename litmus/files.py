"""Writing a whole file so that no reader, and no crash, ever leaves half of it in place."""

from __future__ import annotations

import os
import threading
from pathlib import Path


def write_atomically(path: Path, data: str | bytes) -> Path:
    """Replace ``path`` with ``data`` (text is written as UTF-8) in one step.

    A reader sees the previous file or the new one, never part of either; a write that fails
    leaves the previous file and no temporary one. The temporary file is a hidden name beside
    ``path`` (the landing and suite folders skip dot-files), unique to this process and
    thread, created with the usual permissions. Not synced to disk: a publication that must
    survive a power cut syncs its own commit point (``litmus.trust.publication``).
    """
    content = data.encode("utf-8") if isinstance(data, str) else data
    path.parent.mkdir(parents=True, exist_ok=True)
    partial = path.with_name(f".{path.name}.partial-{os.getpid()}-{threading.get_ident()}")
    try:
        partial.write_bytes(content)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)
    return path
