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


WORKSPACE_QUERY = """
{ workspaceOrError { __typename ... on Workspace { locationEntries { name loadStatus
  locationOrLoadError { __typename ... on PythonError { message }
    ... on RepositoryLocation { repositories { name jobs { name } } } } } } } }
"""
ASSETS_QUERY = "{ assetNodes { assetKey { path } description } }"


def _graphql(port: int, query: str) -> dict:
    import json
    import urllib.request

    request = urllib.request.Request(
        f"http://127.0.0.1:{port}/graphql",
        data=json.dumps({"query": query}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read())["data"]


def test_dagster_dev_loads_the_code_location_without_the_venv_on_path(tmp_path: Path) -> None:
    """`./dev.sh ui` on a fresh clone: `dagster dev` on loopback, the venv's bin NOT on PATH
    (the code location used to fail: "The dbt executable 'dbt' was not found on PATH")."""
    import signal
    import socket
    import time

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    dagster = Path(sys.executable).with_name("dagster")
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV",)},
        "PATH": "/usr/bin:/bin",
        "DAGSTER_HOME": str(tmp_path),
        "LITMUS_HOME": str(tmp_path / "home"),
    }
    (tmp_path / "dagster.yaml").write_text("telemetry:\n  enabled: false\n")
    server = subprocess.Popen(
        [str(dagster), "dev", "-w", "workspace.yaml", "-h", "127.0.0.1", "-p", str(port)],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # its webserver and code server stop with it
    )
    try:
        entry = None
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline and server.poll() is None:
            try:
                entries = _graphql(port, WORKSPACE_QUERY)["workspaceOrError"]["locationEntries"]
            except OSError:
                entries = []
            if entries and entries[0]["loadStatus"] == "LOADED":
                entry = entries[0]
                break
            time.sleep(2)
        assert entry is not None, "the code location did not load"
        location = entry["locationOrLoadError"]
        assert location["__typename"] == "RepositoryLocation", location
        jobs = {job["name"] for repo in location["repositories"] for job in repo["jobs"]}
        assert {"score_configuration", "publish_leaderboard", "ingest_landed_files"} <= jobs
        nodes = {
            "/".join(node["assetKey"]["path"]): node["description"] or ""
            for node in _graphql(port, ASSETS_QUERY)["assetNodes"]
        }
        assert nodes["configuration_metrics"].startswith("SPEC §6 metrics per configuration")
        assert not any("Raw SQL" in description for description in nodes.values())
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
