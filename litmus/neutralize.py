"""Text from run logs is hostile: one helper per boundary it can reach.

Model names, agent messages, auditor names and suite names come from files LITMUS does not
control. Each boundary where such text becomes something other than data has exactly one
function here, and the code writing to that boundary calls it:

- a **terminal** (:func:`for_terminal`, :func:`terminal_name`): control characters (ESC/CSI/OSC
  sequences that clear the screen or retitle the window), bidi overrides and zero-width or
  other invisible format characters are printed as visible ``\\u{…}`` escapes; names
  (configurations, models, auditors) are additionally printed in ASCII, with every other
  character escaped, so two different names can never look the same (a Cyrillic ``а`` prints
  as ``\\u{430}``, a zero-width space as ``\\u{200b}``);
- a **CSV cell** (:func:`for_csv_cell`): a text cell a spreadsheet would run as a formula
  (starting with ``=``, ``+``, ``-``, ``@``, TAB or CR) gets a leading apostrophe; numbers
  are left alone;
- **matplotlib** (:func:`for_matplotlib`): ``$`` is escaped, so a name is never parsed as
  mathtext (``$\\foo$`` would raise and fail the plot);
- a **file name** (:func:`safe_file_name`): only ``A-Z a-z 0-9 . _ - @``, never a path
  separator, never leading dots, and a hash of the original whenever anything was replaced,
  so two different names never map to one file.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata

# Characters no terminal should receive raw: C0/C1 controls and DEL, plus every Unicode
# "format" character (bidi overrides and isolates, zero-width joiners/spaces, BOM, …), line
# and paragraph separators.
_INVISIBLE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp", "Cs", "Co", "Cn"})


def _escape(char: str) -> str:
    return f"\\u{{{ord(char):x}}}"


def _invisible(char: str) -> bool:
    return unicodedata.category(char) in _INVISIBLE_CATEGORIES


def for_terminal(text: object, *, keep_newlines: bool = False) -> str:
    """``text`` safe to print: controls, bidi and invisible characters made visible.

    ``keep_newlines`` lets multi-line text (a Markdown table) keep its line breaks.
    """
    out = []
    for char in str(text):
        if keep_newlines and char == "\n":
            out.append(char)
        elif _invisible(char):
            out.append(_escape(char))
        else:
            out.append(char)
    return "".join(out)


def terminal_name(text: object) -> str:
    """A name (configuration, model, auditor) for a terminal: ASCII only, every other
    character escaped (and a backslash doubled, so an escape cannot be forged by the name
    itself), so look-alike names print differently."""
    out = []
    for char in str(text):
        if char == "\\":
            out.append("\\\\")
        elif " " <= char <= "~":
            out.append(char)
        else:
            out.append(_escape(char))
    return "".join(out)


_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def for_csv_cell(value: object) -> object:
    """A value for a CSV cell: text a spreadsheet would evaluate gets a leading apostrophe."""
    if isinstance(value, str) and value.startswith(_FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


def for_matplotlib(text: object) -> str:
    """Text for a matplotlib label or title: never parsed as mathtext (``$`` would start it,
    and a malformed expression aborts the render); control characters become spaces."""
    cleaned = "".join(ch if ch.isprintable() else " " for ch in str(text))
    return cleaned.replace("$", r"\$")


_UNSAFE_FILE_CHARS = re.compile(r"[^A-Za-z0-9._@-]+")
_MAX_FILE_STEM = 80


def safe_file_name(stem: str, suffix: str = "") -> str:
    """A file name made from untrusted ``stem`` (and a trusted ``suffix`` such as ``.json``).

    The result has no path separator and no leading dot; if anything had to be replaced or
    cut, a hash of the exact ``stem`` is appended so different stems stay different files.
    """
    cleaned = _UNSAFE_FILE_CHARS.sub("_", stem).lstrip(".")[:_MAX_FILE_STEM] or "unnamed"
    if cleaned != stem:
        cleaned += "-" + hashlib.sha256(stem.encode("utf-8", "surrogatepass")).hexdigest()[:10]
    return cleaned + suffix
