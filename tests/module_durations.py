"""Longest module first, by measured time (a pytest plugin loaded by tests/conftest.py).

``./dev.sh test`` hands whole modules to two workers in collection order (``--dist loadfile``:
a module's fixtures, often a whole pipeline run, are built once). A long module handed out
last keeps one worker busy while the other sits idle, so modules are collected longest first
(the longest-processing-time rule), by the seconds each took in a measured whole run
(``module_durations.json`` beside this file). A module that is not measured yet goes first:
its cost is unknown, and a short module early costs nothing. Within a module the order stays
as written.

``./dev.sh test --store-durations`` measures the modules it runs and writes their seconds
into the file (the others keep theirs; a deleted module's go): a module's seconds are the
sum of its tests' setup, call and teardown (its module fixtures included), as the controller
receives them from the workers.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pytest

DURATIONS_FILE = Path(__file__).with_name("module_durations.json")
_measured: defaultdict[str, float] = defaultdict(float)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--store-durations",
        action="store_true",
        help=f"write each module's measured seconds to {DURATIONS_FILE.name}",
    )


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def known_durations() -> dict[str, float]:
    return json.loads(DURATIONS_FILE.read_text()) if DURATIONS_FILE.is_file() else {}


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    seconds = known_durations()
    # unmeasured modules first; then the measured ones, longest first (the sort is stable)
    items.sort(key=lambda item: -seconds.get(module_of(item.nodeid), float("inf")))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _measured[module_of(report.nodeid)] += report.duration


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    config = session.config
    if not config.getoption("store_durations") or hasattr(config, "workerinput"):
        return  # only the controller sees every worker's reports
    if exitstatus != pytest.ExitCode.OK:
        return  # a partial or failed run measures something else
    root = Path(str(config.rootpath))
    seconds = {
        module: value
        for module, value in {**known_durations(), **_measured}.items()
        if (root / module).is_file()  # a module run now, or one of the last measurement's
    }
    ordered = sorted(seconds.items(), key=lambda entry: -entry[1])
    rounded = {module: round(value, 1) for module, value in ordered}
    DURATIONS_FILE.write_text(json.dumps(rounded, indent=1) + "\n")
