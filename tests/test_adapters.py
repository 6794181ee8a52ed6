"""Every private API of a dependency LITMUS uses is reached through one adapter module
(``litmus/adapters.py``, ``litmus_dagster/adapters/``), and each of them fails here, loudly,
on an upgrade that moves or drops what the adapter builds on."""

from __future__ import annotations

import ast
import fnmatch
import inspect
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import litmus
from litmus import adapters

REPO = Path(litmus.__file__).resolve().parents[1]
ADAPTERS = {
    "litmus/adapters.py",
    "litmus/labeling/re2_binding.py",  # google-re2's re2._re2 (tests/test_re2_binding.py)
    "litmus_dagster/adapters/dagster_storage.py",
    "litmus_dagster/adapters/dbt.py",
    "litmus_dagster/adapters/process_exit.py",
}
DEPENDENCIES = (
    "dagster",
    "dagster_dbt",
    "dbt",
    "great_expectations",
    "duckdb",
    "xdist",
    "atexit",
    "re",
    "pandas",
    "pyarrow",
    "inspect_ai",
    "re2",
)


def _private_uses(path: Path) -> list[str]:
    """The places a module imports a private module of a dependency, or reads or writes a
    private attribute of something it imported from one (``atexit._run_exitfuncs``)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported: set[str] = set()
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in DEPENDENCIES:
                    imported.add((alias.asname or alias.name).split(".")[0])
                    if any(part.startswith("_") for part in alias.name.split(".")):
                        found.append(f"{path.name}:{node.lineno} import {alias.name}")
        elif (
            isinstance(node, ast.ImportFrom)
            and node.level == 0
            and (node.module or "").split(".")[0] in DEPENDENCIES
        ):
            names = [str(node.module), *(alias.name for alias in node.names)]
            imported.update(alias.asname or alias.name for alias in node.names)
            if any(part.startswith("_") for name in names for part in name.split(".")):
                found.append(f"{path.name}:{node.lineno} from {node.module}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and isinstance(node.value, ast.Name)
            and node.value.id in imported
        ):
            found.append(f"{path.name}:{node.lineno} {node.value.id}.{node.attr}")
    return found


def test_private_apis_of_dependencies_are_used_in_the_adapters_only() -> None:
    outside = {
        str(path.relative_to(REPO)): uses
        for package in ("litmus", "litmus_dagster")
        for path in sorted((REPO / package).rglob("*.py"))
        if str(path.relative_to(REPO)) not in ADAPTERS and (uses := _private_uses(path))
    }
    assert outside == {}
    assert all(_private_uses(REPO / adapter) for adapter in ADAPTERS)  # the finder sees them


# --------------------------------------------------------------------------- Python's re


def test_python_parses_an_fnmatch_set_into_the_opcodes_globmatch_reads() -> None:
    """The shape ``globmatch._parse_set`` unpacks: one group around the set, then the end."""
    assert adapters.parse_regex("[^xy]") == [
        (
            adapters.REGEX_IN,
            [
                (adapters.REGEX_NEGATE, None),
                (adapters.REGEX_LITERAL, 120),
                (adapters.REGEX_LITERAL, 121),
            ],
        )
    ]
    (_op, (_group, _add, _del, inner)), _end = adapters.parse_regex(fnmatch.translate("[!a-c]"))
    assert list(inner) == [
        (adapters.REGEX_IN, [(adapters.REGEX_NEGATE, None), (adapters.REGEX_RANGE, (97, 99))])
    ]
    assert adapters.parse_regex("x") == [(adapters.REGEX_LITERAL, 120)]
    assert {adapters.REGEX_ANY, adapters.REGEX_ASSERT_NOT, adapters.REGEX_NOT_LITERAL} == {
        opcode for opcode, _ in (adapters.parse_regex(p)[0] for p in (".", "(?!)", "[^x]"))
    }


# --------------------------------------------------------------------------- Great Expectations


def test_great_expectations_still_reads_the_hooks_the_gates_set() -> None:
    from great_expectations.data_context.data_context import abstract_data_context
    from great_expectations.execution_engine import pandas_execution_engine

    adapters.skip_batch_fingerprints()
    assert pandas_execution_engine.HASH_THRESHOLD == 0
    assert "HASH_THRESHOLD" in inspect.getsource(pandas_execution_engine.PandasExecutionEngine)
    assert "self._save_project_config(" in inspect.getsource(abstract_data_context)


def test_an_ephemeral_context_takes_the_unwritten_project_config() -> None:
    import great_expectations as gx

    context = gx.get_context(mode="ephemeral")
    assert callable(context._save_project_config)
    adapters.keep_project_config_unwritten(context)
    context.data_sources.add_pandas("adapter_check")
    context.data_sources.delete("adapter_check")
    assert context._save_project_config() is None


# --------------------------------------------------------------------------- Dagster storage


def test_the_local_instance_uses_the_litmus_storage_built_on_dagster_internals(
    tmp_path: Path,
) -> None:
    import dagster as dg

    from litmus_dagster.adapters.dagster_storage import (
        LitmusSqliteRunStorage,
        LitmusSqliteStorage,
        instance_ref,
    )

    ref = instance_ref(str(tmp_path))
    assert ref.storage_data.class_name == LitmusSqliteStorage.__name__
    with dg.DagsterInstance.from_ref(ref) as instance:
        assert isinstance(instance.run_storage, LitmusSqliteRunStorage)
        assert instance.get_runs() == []
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "dagster.yaml").write_text(
        "storage:\n  sqlite:\n    base_dir: " + str(tmp_path / "other" / "history") + "\n"
    )
    assert instance_ref(str(tmp_path / "other")).storage_data.class_name != (
        LitmusSqliteStorage.__name__
    )


# --------------------------------------------------------------------------- dbt


def test_dagster_dbt_still_calls_the_two_methods_litmus_overrides() -> None:
    import dagster_dbt.core.resource as resource

    from litmus_dagster.adapters.dbt import LitmusDbtCli

    source = inspect.getsource(resource)
    assert "self._cli_version" in source
    assert "self._initialize_dbt_core_adapter(" in source
    assert set(
        inspect.signature(resource.DbtCliResource._initialize_dbt_core_adapter).parameters
    ) == {
        "self",
        "args",
    }
    dbt = LitmusDbtCli(project_dir=str(REPO / "dbt_project"), dbt_executable=_dbt_beside_python())
    import importlib.metadata

    assert str(dbt._cli_version) == importlib.metadata.version("dbt-core")


def _dbt_beside_python() -> str:
    return str(Path(sys.executable).with_name("dbt"))


def test_dbt_duckdb_still_keeps_its_database_behind_the_class_lock() -> None:
    from dbt.adapters.duckdb.connections import DuckDBConnectionManager

    from litmus_dagster.adapters.dbt import release_dbt_connections

    assert hasattr(DuckDBConnectionManager._LOCK, "__enter__")
    assert "_ENV" in vars(DuckDBConnectionManager)
    release_dbt_connections()
    assert DuckDBConnectionManager._ENV is None or not DuckDBConnectionManager._ENV.conn


# --------------------------------------------------------------------------- interpreter exit


def test_a_quick_exit_still_runs_the_exit_handlers(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import atexit
        from litmus_dagster.adapters.process_exit import exit_without_teardown
        atexit.register(print, "handler ran")
        exit_without_teardown(3)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert (done.returncode, done.stdout) == (3, "handler ran\n"), done.stderr


@pytest.mark.parametrize("module", sorted(ADAPTERS))
def test_each_adapter_says_what_it_adapts(module: str) -> None:
    assert ast.get_docstring(ast.parse((REPO / module).read_text(encoding="utf-8")))
