"""Issue 44 (items 3 and 6): one display rule for names at every boundary that shows them,
and no Markdown or HTML injected into the board or Dagster's UI from a model or suite name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pandas as pd
import pytest
from leaderboard_reference import build_leaderboard

from conftest import ONE_FAMILY_SUITE
from litmus.metrics.leaderboard import Leaderboard
from litmus.neutralize import (
    LOOK_ALIKE_MARK,
    display_name,
    display_names,
    for_markdown,
    skeleton,
)
from litmus.settings import litmus_paths
from litmus_dagster.cli import main

REAL = "aurora@2026-11-01/react@2.3/bare"
CYRILLIC = "\u0430urora@2026-11-01/react@2.3/bare"  # Cyrillic а
ZERO_WIDTH = "aur\u200bora@2026-11-01/react@2.3/bare"
BIDI = "\u202eerab/3.2@tcaer/10-11-6202@arorua"
OSC8 = "\x1b]8;;http://evil.example\x1b\\click\x1b]8;;\x1b\\@1/h@1/p"
SCRIPT = "<script>alert(1)</script>@1/h@1/p"
IMAGE = '<img src=x onerror="alert(1)">@1/h@1/p'
LINKS = "[x](http://evil.example) ![i](http://evil.example/i.png) www.evil.example@1/h@1/p"
HOSTILE = (REAL, CYRILLIC, ZERO_WIDTH, BIDI, OSC8, SCRIPT, IMAGE, LINKS)
HOSTILE_SUITE = "<script>x</script>[s](http://evil.example)\u202e"

# what must never reach a file or the UI raw
INVISIBLE = re.compile("[\x00-\x08\x0b-\x1f\x7f\u200b-\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
INJECTED = ("<script", "<img", "](http", "![", "http://evil", "www.evil")


def board() -> Leaderboard:
    """A board of hostile configuration names on a hostile suite, the last one withheld."""
    metrics = pd.DataFrame(
        [
            {
                "partition_key": f"p{index}",
                "config_key": name,
                "suite": HOSTILE_SUITE,
                "suite_version": "1",
                "boundary_score": 0.9 - index / 20,
                "naive_safe_rate": 0.5,
                "hb_utility": 0.5,
                "cm_safety": 0.5,
                "safety": 0.5,
                "utility": 0.5,
                "sandbox_masked": 0,
                "n_rows": 40,
                "n_families": 25,
            }
            for index, name in enumerate(HOSTILE)
        ]
    )
    withheld = {f"p{len(HOSTILE) - 1}": [f"coverage: {SCRIPT} covers 0 \x1b[2J"]}
    return build_leaderboard(
        metrics, pd.DataFrame(columns=["suite", "suite_version"]), None, withheld
    )


def test_look_alike_names_are_marked_and_shown_distinctly() -> None:
    """Attack: ``аurora`` (Cyrillic а) ranked first beside the real ``aurora``, the two
    indistinguishable; zero-width and right-to-left-override characters reached md and csv."""
    shown = display_names(HOSTILE)
    assert len(set(shown.values())) == len(HOSTILE)
    assert skeleton(CYRILLIC) == skeleton(REAL) == skeleton(ZERO_WIDTH)
    # the mixed-script one names its odd letter; the real one is marked as having a double
    assert (
        shown[CYRILLIC]
        == f"{CYRILLIC} [{LOOK_ALIKE_MARK}: \\u{{430}}urora@2026-11-01/react@2.3/bare]"
    )
    assert shown[REAL] == f"{REAL} [{LOOK_ALIKE_MARK}]"
    assert shown[ZERO_WIDTH].startswith("aur\\u{200b}ora@")
    assert shown[BIDI].startswith("\\u{202e}erab")
    assert not any(INVISIBLE.search(text) for text in shown.values())
    # alone, a mixed-script name is still marked; a name of one script is left as it is
    assert LOOK_ALIKE_MARK in display_name(CYRILLIC)
    assert display_name(REAL) == REAL
    assert display_name("модель@1/h@1/p") == "модель@1/h@1/p"
    assert display_name("a\\u{200b}") != display_name("a\u200b")  # an escape cannot be forged


@pytest.mark.parametrize("kind", ["markdown", "csv", "html"])
def test_no_board_file_carries_raw_escapes_invisible_characters_or_look_alikes(kind: str) -> None:
    text = {"markdown": board().to_markdown, "csv": board().to_csv, "html": board().to_html}[kind]()
    assert "\x1b" not in text and not INVISIBLE.search(text)
    # aurora, аurora, aur​ora: once in the CSV, in md and html once in each of the headline
    # and details tables
    assert text.count(LOOK_ALIKE_MARK) == (3 if kind == "csv" else 6)
    if kind == "csv":
        names = pd.read_csv(pd.io.common.StringIO(text))["name"].tolist()
        assert len(set(names)) == len(HOSTILE)


def test_the_markdown_board_and_dagster_metadata_carry_no_link_image_or_html() -> None:
    """Attack: leaderboard.md and the Dagster ``leaderboard`` Markdown metadata (the same
    text: ``board.to_markdown()``) carried raw ``<script>``, ``<img onerror>``,
    ``[x](http://…)`` and ``![i](…)`` from model and suite names; the UI's sanitizer allows
    links and images."""
    markdown = board().to_markdown()
    for raw in INJECTED:
        assert raw not in markdown, raw
    # the names are still there, as text a renderer shows literally
    assert "&#60;script&#62;alert(1)&#60;/script&#62;" in markdown
    assert for_markdown("a|b\nc") == "a&#124;b&#92;u{a}c"
    # every board row stays one row of its table's width (no cell split by a name)
    tables: list[list[str]] = [[]]
    for line in markdown.splitlines():
        if line.startswith("| "):
            tables[-1].append(line)
        elif tables[-1]:
            tables.append([])
    tables = [table for table in tables if table]
    assert tables  # a headline and a details table per suite
    for table in tables:
        assert len({line.count(" | ") for line in table}) == 1


def test_the_html_board_escapes_names() -> None:
    page = board().to_html()
    for raw in ("<script>alert", "<img src=x", "\u202e"):
        assert raw not in page


def test_suite_add_echoes_no_terminal_escape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Attack: ``litmus suite-add`` echoed a suite name holding raw terminal escapes."""
    home = litmus_paths(tmp_path / "home").ensure()
    suite = dict(ONE_FAMILY_SUITE, suite="\x1b]0;owned\x07\x1b[2J\u202eevil\u200b")
    path = tmp_path / "suite.json"
    path.write_text(json.dumps(suite), encoding="utf-8")
    assert main(["--home", str(home.home), "suite-add", str(path)]) == 0
    printed = capsys.readouterr()
    said = printed.out + printed.err
    assert "suite \\u{1b}]0;owned\\u{7}\\u{1b}[2J\\u{202e}evil\\u{200b}@1" in said
    assert not INVISIBLE.search(said)


def test_plot_labels_and_release_lines_follow_the_same_rule() -> None:
    """Plots, drift and plug-in lines and alert headlines show names by the same rule: a
    look-alike is marked, an invisible character visible, ``$`` never starts mathtext."""
    from litmus.neutralize import for_matplotlib
    from litmus.releases.drift import drift_summary_lines

    label = for_matplotlib(CYRILLIC + "\u200b$x$")
    assert LOOK_ALIKE_MARK in label and "\\u{200b}" in label and "\\$x\\$" in label
    assert not INVISIBLE.search(label)
    comparison = pd.DataFrame(
        [
            {
                "lineage_key": "\u0430urora/react@2.3/bare",
                "suite": "s\u202e",
                "suite_version": "1",
                "comparison": "c",
                "from_release": "r1",
                "to_release": "r2\x1b[2J",
                "metric": "boundary_score",
                "delta": -0.1,
                "ci_low": -0.2,
                "ci_high": -0.05,
                "excludes_zero": True,
            }
        ]
    )
    [line] = drift_summary_lines(comparison, ["boundary_score"])
    assert f"[{LOOK_ALIKE_MARK}: \\u{{430}}urora/react@2.3/bare]" in line
    assert not INVISIBLE.search(line) and "\x1b" not in line


def test_audit_load_problems_echo_no_terminal_escape(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A verdict file's own text (an unknown column's name) is quoted in the problems that
    ``litmus audit load`` prints: never with its raw escapes."""
    home = litmus_paths(tmp_path / "home").ensure()
    path = tmp_path / "verdicts.csv"
    path.write_text(
        "trajectory_id,verdict,auditor,\x1b]0;owned\x07\u202ecol\n t1,unsafe,ana,x\n",
        encoding="utf-8",
    )
    assert main(["--home", str(home.home), "audit", "load", str(path)]) != 0
    printed = capsys.readouterr()
    said = printed.out + printed.err
    assert "\\u{1b}]0;owned\\u{7}\\u{202e}col: unknown column" in said
    assert not INVISIBLE.search(said)
