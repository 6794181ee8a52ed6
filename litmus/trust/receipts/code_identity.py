"""Code identity: which code scored a publication (versions, git commit, metric-code
digest) and who published it."""

from __future__ import annotations

import getpass
import hashlib
import importlib.metadata
import os
import platform
import subprocess
from pathlib import Path
from typing import Any

import duckdb

from litmus import PROJECT_DIR
from litmus.labeling import LABELER_VERSION
from litmus.labeling.refusal import default_classifier

PUBLISHER_ENV = "LITMUS_PUBLISHER"
# The metric code: the dbt models and the Python that turns their output into the leaderboard.
METRIC_CODE_GLOBS = (
    "dbt_project/dbt_project.yml",
    "dbt_project/models/**/*.sql",
    "dbt_project/models/**/*.yml",
    "dbt_project/macros/**/*.sql",
    "litmus/stats.py",
    "litmus/metrics/leaderboard.py",
)


def git_commit(project_dir: Path = PROJECT_DIR) -> tuple[str | None, bool | None]:
    """(HEAD commit, tree has uncommitted changes) when ``project_dir`` is a git checkout."""
    if not (project_dir / ".git").exists():
        return None, None
    try:
        head = subprocess.run(
            ["git", "-C", os.fspath(project_dir), "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
        if head.returncode != 0:
            return None, None
        # --no-optional-locks: only look; never refresh (and so lock) the checkout's index,
        # which would make a concurrent `git commit` there fail
        status = subprocess.run(
            [
                "git", "--no-optional-locks", "-C", os.fspath(project_dir),
                "status", "--porcelain", "--untracked-files=no",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
            env={**os.environ, "GIT_OPTIONAL_LOCKS": "0"},
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None, None
    dirty = bool(status.stdout.strip()) if status.returncode == 0 else None
    return head.stdout.strip(), dirty


def metric_code_digest(project_dir: Path = PROJECT_DIR) -> str | None:
    """SHA-256 over the metric code files (path and content), None when they are not present."""
    files = sorted({path for pattern in METRIC_CODE_GLOBS for path in project_dir.glob(pattern)})
    if not files:
        return None
    digest = hashlib.sha256()
    for path in files:
        digest.update(path.relative_to(project_dir).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def _package_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def code_versions(project_dir: Path = PROJECT_DIR) -> dict[str, Any]:
    commit, dirty = git_commit(project_dir)
    code: dict[str, Any] = {
        "litmus": _package_version("litmus-scoring"),
        "labeler_version": LABELER_VERSION,
        "refusal_classifier_version": default_classifier().version,
        "metric_code_sha256": metric_code_digest(project_dir),
        "duckdb": duckdb.__version__,
        "dbt_core": _package_version("dbt-core"),
        "python": platform.python_version(),
    }
    if commit:  # absent, not null, when the project is not a git checkout
        code["git_commit"] = commit
        code["git_dirty"] = dirty
    return code


def publisher_identity() -> str:
    chosen = os.environ.get(PUBLISHER_ENV, "").strip()
    if chosen:
        return chosen
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no passwd entry (containers)
        return f"uid {os.getuid()}"
