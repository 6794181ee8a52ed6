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
- **Markdown** (:func:`for_markdown`: the board's ``leaderboard.md``, Dagster's Markdown
  metadata): no link, image, raw HTML, code span, table cell or autolink can be formed;
- **matplotlib** (:func:`for_matplotlib`): ``$`` is escaped, so a name is never parsed as
  mathtext (``$\\foo$`` would raise and fail the plot);
- a **file name** (:func:`safe_file_name`): only ``A-Z a-z 0-9 . _ - @``, never a path
  separator, never leading dots, and a hash of the original whenever anything was replaced,
  so two different names never map to one file.

Names (configurations, models, suites) follow one display rule wherever they are shown
(:func:`display_names`, below): invisible characters visible, look-alikes marked.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections.abc import Iterable

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
    """Text for a matplotlib label or title: shown by the rule for names (:func:`display_name`:
    invisible characters visible, a mixed-script word marked) and never parsed as mathtext
    (``$`` would start it, and a malformed expression aborts the render)."""
    return display_name(text).replace("$", r"\$")


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


# ----------------------------------------------------------------------------- names shown
#
# One display rule for names (configurations, models, suites) at every boundary that shows
# them (terminal, Markdown, CSV, HTML, Dagster metadata, plots, alerts):
#
# - control, bidi and zero-width characters are made visible (``\u{200b}``), and a backslash
#   is doubled, so a name cannot forge such an escape;
# - a name with a word that mixes scripts (Latin letters beside Cyrillic or Greek ones, as in
#   ``аurora`` with a Cyrillic ``а``) and names whose confusable skeletons collide (two names
#   that look alike but differ) carry a visible marker with the name in ASCII escapes, so they
#   never look the same: ``аurora [⚠ look-alike: \u{430}urora]``.
#
# The skeleton is a small version of Unicode TR39's: NFKC, then the Cyrillic and Greek letters
# that look like Latin ones mapped to those (``_CONFUSABLES``: the look-alikes of TR39's
# confusables.txt for Latin letters and digits in those two scripts), invisible characters
# dropped. No package on this machine provides TR39's data (``text_unidecode`` transliterates:
# Cyrillic ``р`` becomes ``r``, not the ``p`` it looks like).

LOOK_ALIKE_MARK = "⚠ look-alike"

_CONFUSABLES = str.maketrans(
    {
        # Cyrillic capitals and small letters that look like Latin ones
        "А": "A", "В": "B", "Е": "E", "К": "K", "М": "M", "Н": "H", "О": "O", "Р": "P",
        "С": "C", "Т": "T", "У": "Y", "Х": "X", "Ѕ": "S", "І": "I", "Ј": "J", "Ԛ": "Q",
        "Ԝ": "W", "Ү": "Y", "Һ": "h", "Ӏ": "l", "а": "a", "в": "b", "е": "e", "о": "o",
        "р": "p", "с": "c", "у": "y", "х": "x", "ѕ": "s", "і": "i", "ј": "j", "ԛ": "q",
        "ԝ": "w", "һ": "h", "ӏ": "l", "ү": "y", "ɡ": "g", "ь": "b", "з": "3",
        # Greek
        "Α": "A", "Β": "B", "Ε": "E", "Ζ": "Z", "Η": "H", "Ι": "I", "Κ": "K", "Μ": "M",
        "Ν": "N", "Ο": "O", "Ρ": "P", "Τ": "T", "Υ": "Y", "Χ": "X", "ο": "o", "ν": "v",
        "α": "a", "ι": "i", "κ": "k", "ρ": "p", "τ": "t", "υ": "u", "χ": "x", "γ": "y",
    }
)  # fmt: skip
_CONFUSABLE_SCRIPTS = frozenset({"LATIN", "CYRILLIC", "GREEK"})


def _visible_name(text: str) -> str:
    """``text`` with every invisible character escaped and a backslash doubled."""
    return "".join(
        "\\\\" if char == "\\" else _escape(char) if _invisible(char) else char for char in text
    )


def skeleton(name: str) -> str:
    """What ``name`` looks like: two names with one skeleton are confusable."""
    folded = unicodedata.normalize("NFKC", name).translate(_CONFUSABLES)
    return "".join(char for char in folded if not _invisible(char))


_WORD = re.compile(r"[^\W\d_]+")


def _mixes_scripts(name: str) -> bool:
    """Whether a word of ``name`` (a run of letters: a configuration name joins several,
    ``модель@1/react@2/bare``) mixes Latin, Cyrillic or Greek letters."""
    for word in _WORD.findall(name):
        scripts = {unicodedata.name(char, "").partition(" ")[0] for char in word}
        if len(scripts & _CONFUSABLE_SCRIPTS) > 1:
            return True
    return False


def display_names(names: Iterable[object]) -> dict[str, str]:
    """Each of ``names`` (shown together: a board, a list) as it is displayed: invisible
    characters visible, and a look-alike marker on a name that mixes Latin with Cyrillic or
    Greek letters or whose skeleton another of ``names`` shares (see the rule above)."""
    distinct = {str(name) for name in names if name is not None}
    by_skeleton: dict[str, set[str]] = {}
    for name in distinct:
        by_skeleton.setdefault(skeleton(name), set()).add(name)
    shown = {}
    for name in distinct:
        text = _visible_name(name)
        if _mixes_scripts(name) or len(by_skeleton[skeleton(name)]) > 1:
            ascii_form = terminal_name(name)
            text += (
                f" [{LOOK_ALIKE_MARK}: {ascii_form}]"
                if ascii_form != name
                else (f" [{LOOK_ALIKE_MARK}]")
            )
        shown[name] = text
    return shown


def display_name(name: object) -> str:
    """One name shown on its own (a message, a plot label): :func:`display_names`' rule."""
    return display_names([name])[str(name)]


def visible(text: object) -> str:
    """Free text from a run log (a gate message naming a configuration) for a file or the UI:
    control, bidi and zero-width characters made visible, as :func:`for_terminal` does."""
    return for_terminal(text)


# Characters Markdown (CommonMark, GFM, Dagster's renderer) could read as a link, an image,
# raw HTML, code or a table cell, written as character references, which render as the
# character and never as structure; so is what starts an autolink (the ``:`` of ``://``, the
# dot of ``www.``). Parentheses stay: with the brackets written as references no link can
# open, and a name such as "refuse-all (suite@1)" stays readable as plain text.
_MARKDOWN_ENTITIES = {char: f"&#{ord(char)};" for char in "&<>[]!`|\\"}
_AUTOLINK = re.compile(r"(?i)(?<=www)\.|:(?=//)")


def for_markdown(text: object) -> str:
    """Untrusted text (a name, a reason) for a Markdown document or Dagster's Markdown
    metadata: no link, image, HTML or autolink can be formed, and no line break (it is
    made visible, as every control character)."""
    escaped = "".join(_MARKDOWN_ENTITIES.get(char, char) for char in visible(text))
    return _AUTOLINK.sub(lambda found: f"&#{ord(found[0])};", escaped)
