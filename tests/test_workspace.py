"""`dagster dev` loads the code location through workspace.yaml: the same check, headless."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_workspace_yaml_loads_the_definitions(tmp_path: Path) -> None:
    dagster = Path(sys.executable).with_name("dagster")
    env = {**os.environ, "DAGSTER_HOME": str(tmp_path), "LITMUS_HOME": str(tmp_path / "home")}
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    result = subprocess.run(
        [str(dagster), "definitions", "validate", "-w", "workspace.yaml"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "Validation successful for code location litmus_dagster.definitions" in output
