"""The modules of ``litmus/`` (and of ``litmus_dagster/``) import each other without a cycle:
every import counts, at module level or inside a function, since a cycle through a deferred
import is still a cycle in the design."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import litmus
import litmus_dagster

PACKAGE = Path(litmus.__file__).parent
WIRING = Path(litmus_dagster.__file__).parent


def module_names(package: Path = PACKAGE) -> dict[str, Path]:
    names = {}
    for path in package.rglob("*.py"):
        parts = list(path.relative_to(package.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        names[".".join(parts)] = path
    return names


def _inside(module: str | None, root: str) -> bool:
    return module is not None and (module == root or module.startswith(root + "."))


def import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """module → the modules of ``package`` it imports (a name imported from a package counts
    as its submodule when there is one)."""
    modules = module_names(package)
    root = package.name

    def owner(name: str) -> str | None:
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name or None

    graph: dict[str, set[str]] = {}
    for module, path in modules.items():
        targets: set[str | None] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                targets.update(owner(a.name) for a in node.names if _inside(a.name, root))
            elif (
                isinstance(node, ast.ImportFrom) and node.level == 0 and _inside(node.module, root)
            ):
                for alias in node.names:
                    sub = owner(f"{node.module}.{alias.name}")
                    targets.add(sub if sub != root else owner(str(node.module)))
        graph[module] = {t for t in targets if t and t != module}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[set[str]]:
    """The strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[set[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [{"a", "b", "c"}]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_graph_sees_deferred_imports() -> None:
    graph = import_graph()
    assert "litmus.audit.audited" in graph["litmus.planning.plan"]  # imported inside read_facts
    assert "litmus.warehouse" in graph["litmus.audit.audited"]


def test_litmus_modules_import_each_other_without_a_cycle() -> None:
    assert cycles(import_graph()) == []


def test_the_dagster_wiring_imports_itself_without_a_cycle() -> None:
    graph = import_graph(WIRING)
    assert "litmus_dagster.definitions" in graph["litmus_dagster.executor"]  # deferred import
    assert cycles(graph) == []


def domain_of(module: str) -> str:
    """The domain package a module belongs to; the shared foundation at the top is ``litmus``."""
    parts = module.split(".")
    return ".".join(parts[:2]) if len(parts) > 2 or (PACKAGE / parts[-1]).is_dir() else "litmus"


def domain_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, targets in import_graph().items():
        source = domain_of(module)
        graph.setdefault(source, set()).update(
            domain_of(t) for t in targets if domain_of(t) != source
        )
    return graph


def test_domain_packages_are_layered() -> None:
    """The domains import downward only: the foundation at the top of ``litmus/`` imports no
    domain, and no two domains import each other, however indirectly."""
    graph = domain_graph()
    assert {"litmus.ingestion", "litmus.labeling", "litmus.gates", "litmus.planning"} <= set(graph)
    assert graph["litmus"] == set(), "the shared foundation must not import a domain"
    assert cycles(graph) == []
    assert "litmus.metrics" in graph["litmus.trust"]  # receipts verify the leaderboard


# A SQL statement as Python text: how a statement starts (upper case, as the project writes SQL).
SQL_STATEMENT = re.compile(
    r"^\s*\(?\s*(SELECT|INSERT\s+INTO|UPDATE\s+\w+\s+SET|DELETE\s+FROM|CREATE\s|DROP\s|ALTER\s|"
    r"ATTACH\s|DETACH\s|COPY\s|PRAGMA\s|WITH\s+\w+\s+AS|DESCRIBE\s|SUMMARIZE\s|USE\s)"
)
# What runs SQL on a connection (DuckDB's and DB-API's).
SQL_RUNNERS = {"execute", "executemany", "sql", "query", "read_sql"}
# The one SQL statement the wiring may hold: a setting of Dagster's own SQLite run storage (not
# the warehouse), applied on each connection Dagster's engine opens.
WIRING_SQL_ALLOWED = {
    ("litmus_dagster/adapters/dagster_storage.py", ".execute(…)"),
    ("litmus_dagster/adapters/dagster_storage.py", "PRAGMA synchronous=NORMAL"),
}


def wiring_sql() -> list[tuple[str, int, str]]:
    """(file, line, what) of every SQL statement, SQL fragment or SQL call in the wiring."""
    found = []
    for path in sorted(WIRING.rglob("*.py")):
        name = path.relative_to(WIRING.parent).as_posix()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            text = None
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                text = node.value
            elif isinstance(node, ast.JoinedStr):
                text = "".join(
                    part.value if isinstance(part, ast.Constant) else "{}" for part in node.values
                )
            if text is not None and SQL_STATEMENT.match(text):
                found.append((name, node.lineno, text.strip().split("\n")[0][:60]))
            elif isinstance(node, ast.Name | ast.alias):
                identifier = node.id if isinstance(node, ast.Name) else node.asname or node.name
                if identifier.endswith("_SQL"):
                    found.append((name, getattr(node, "lineno", 0), identifier))
            elif (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in SQL_RUNNERS
            ):
                found.append((name, node.lineno, f".{node.func.attr}(…)"))
    return found


def test_the_sql_finder_finds_sql() -> None:
    assert SQL_STATEMENT.match("SELECT count(*) FROM raw_files")
    assert SQL_STATEMENT.match("\n    INSERT INTO alerts VALUES (?)")
    assert not SQL_STATEMENT.match("Select the configurations to re-score")
    assert not SQL_STATEMENT.match("selected: 3 configurations")


def test_the_dagster_wiring_holds_no_sql() -> None:
    """``litmus_dagster/`` is thin wiring: assets, checks and commands call the domain
    (``litmus/``), which owns every query; the wiring maps the results."""
    found = wiring_sql()
    assert [site for site in found if (site[0], site[2]) not in WIRING_SQL_ALLOWED] == []


def test_no_product_module_imports_a_test_oracle() -> None:
    """The readable references (tests/labeler_reference.py, tests/gates_reference.py, …) are
    oracles the production paths are proven against, never a second product path."""
    test_modules = {path.stem for path in Path(__file__).parent.glob("*.py")}
    assert {"labeler_reference", "labeler_decision", "gates_reference"} <= test_modules
    offenders = []
    for package in (PACKAGE, WIRING):
        for path in package.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
                names = (
                    [a.name for a in node.names]
                    if isinstance(node, ast.Import)
                    else [node.module or ""]
                    if isinstance(node, ast.ImportFrom) and node.level == 0
                    else []
                )
                offenders += [f"{path}: {n}" for n in names if n.split(".")[0] in test_modules]
    assert offenders == []
