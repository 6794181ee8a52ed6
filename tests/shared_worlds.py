"""Expensive test worlds built once per test run, whichever worker asks first.

Under ``pytest-xdist`` each worker has its own base temporary folder; their common parent is
the run's own folder, so a world built there (under a file lock, marked done when finished)
is seen by every worker of this run and by no other run. Serially, the base folder itself
serves. The world's builder runs exactly once; every later caller gets the finished folder
and must treat it as read-only (copy it first to change anything).
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from filelock import FileLock

DONE_MARKER = ".built"


def run_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The temporary folder this test run's workers share."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if base.name.startswith("popen-gw") else base


def shared_world(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]
) -> Path:
    """``run_root/name``, built by ``build(folder)`` the first time any worker asks for it.

    A builder that fails leaves no marker: the folder is cleared and the next caller (in
    another worker) builds it again, so its failure shows in every test that needs it.
    """
    folder = run_root(tmp_path_factory) / name
    with FileLock(str(folder.with_name(f"{name}.lock"))):
        if (folder / DONE_MARKER).exists():
            return folder
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        build(folder)
        (folder / DONE_MARKER).touch()
    return folder
