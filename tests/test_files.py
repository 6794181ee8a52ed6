"""One atomic whole-file write (litmus.files), on the real file system."""

from __future__ import annotations

from pathlib import Path

import pytest

from litmus.files import write_atomically


def test_text_and_bytes_replace_the_file_and_leave_nothing_else(tmp_path: Path) -> None:
    target = tmp_path / "new" / "folder" / "board.md"
    assert write_atomically(target, "héllo\n") == target
    assert target.read_bytes() == "héllo\n".encode()
    write_atomically(target, b"\x89PNG")
    assert target.read_bytes() == b"\x89PNG"
    assert [p.name for p in target.parent.iterdir()] == ["board.md"]
    # created with the usual permissions, as a plain write makes them (not a temp file's 0600)
    plain = tmp_path / "plain"
    plain.write_bytes(b"")
    assert target.stat().st_mode == plain.stat().st_mode


def test_a_failed_write_keeps_the_previous_file_and_leaves_no_partial(tmp_path: Path) -> None:
    target = tmp_path / "receipt.json"
    target.write_text("old", encoding="utf-8")
    with pytest.raises(UnicodeEncodeError):
        write_atomically(target, "\ud800")  # a lone surrogate: no UTF-8 for it
    taken = tmp_path / "taken"
    (taken / "inside").mkdir(parents=True)  # a non-empty folder cannot be replaced by a file
    with pytest.raises(OSError):
        write_atomically(taken, "new")
    assert target.read_text(encoding="utf-8") == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["receipt.json", "taken"]
    assert [p.name for p in taken.iterdir()] == ["inside"]
