"""Text that is safe to show on a terminal: the one owner of what gets escaped, and how.

A file name, an error from a library or the database, a config root: any of it can
carry characters a terminal acts on instead of showing (an ``ESC [2J`` clears the
screen, ``\\r`` and ``\\b`` overwrite what came before, C1 controls such as U+009B are
escape sequences of their own, U+202E reverses the rest of the line). Every human
output (the ``run`` summary, tables, progress lines, text logs, error lines) passes its
text through :func:`printable`; JSON output passes through :func:`json_text`, which
keeps the document exact. The dashboard shows text as :func:`printable` does, in its
pages and in the JSON its scripts show (``web.pages``, ``web.api``); owner names may
hold none of what it escapes (``library.catalogue.owners``).

Escaped: control characters (C0, DEL, C1), format characters (bidi embeddings,
overrides and isolates, zero-width spaces, the BOM, tag characters), line and paragraph
separators, and lone surrogates (an undecodable byte of a file name). Each becomes the
visible form Python's ``repr`` uses (``\\x1b``, ``\\n``, ``\\u202e``, ``\\U000e0041``).
Kept as they are: every printable character of any script (é, 日本, emoji), and the
zero-width joiner and non-joiner, which are part of ordinary words (Persian, Indic
scripts) and of emoji sequences. A backslash is not escaped: a name that spells
``\\x1b`` literally reads the same as one holding the character, which misleads no
terminal; the JSON output tells them apart.
"""

from __future__ import annotations

import re
import unicodedata

# Format characters that ordinary text needs: zero-width non-joiner and joiner.
_KEPT_FORMAT = frozenset("\u200c\u200d")
_UNSAFE_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})
_SHORT_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}

# Candidates only: everything outside printable ASCII. Each is then judged by its
# Unicode category, so the common case (ASCII, or letters of any script) costs a scan.
_NOT_PRINTABLE_ASCII = re.compile(r"[^\x20-\x7e]")
# In JSON text: json.dumps already escapes C0 controls inside strings, and the only C0
# characters left outside them are the indentation's newlines, which must stay.
_JSON_CANDIDATES = re.compile(r"[^\x00-\x7e]")


def is_unsafe(char: str) -> bool:
    """Whether a terminal could act on ``char`` (or hide it) rather than show it."""
    category = unicodedata.category(char)
    if category in _UNSAFE_CATEGORIES:
        return True
    return category == "Cf" and char not in _KEPT_FORMAT


def _visible(char: str) -> str:
    short = _SHORT_ESCAPES.get(char)
    if short is not None:
        return short
    code = ord(char)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def _escape_match(match: re.Match[str]) -> str:
    char = match.group()
    return _visible(char) if is_unsafe(char) else char


def printable(text: str) -> str:
    """``text`` with every character a terminal would act on in its visible escaped
    form; one line (a newline becomes ``\\n``). Idempotent."""
    # Everything escaped is also not printable to str.isprintable (which also refuses
    # spaces other than " ", private use and unassigned characters): when it accepts the
    # whole text, at C speed, nothing needs a look of its own.
    if text.isprintable():
        return text
    return _NOT_PRINTABLE_ASCII.sub(_escape_match, text)


def text_lines(text: str) -> list[str]:
    """``text`` split at line feeds only. ``str.splitlines`` also splits at ``\\r``,
    ``\\x1c``-``\\x1e``, ``\\x85`` and U+2028, which a file name can hold: cut there, an
    error's "first line" would lose the rest of the name :func:`printable` can show."""
    return text.split("\n")


def first_line(text: str) -> str:
    """The first non-blank line of ``text`` (see :func:`text_lines`), stripped."""
    return next((line.strip() for line in text_lines(text) if line.strip()), "")


def printable_lines(text: str) -> str:
    """:func:`printable` line by line, keeping the line breaks (for a traceback)."""
    return "\n".join(printable(line) for line in text_lines(text))


def _json_escape_match(match: re.Match[str]) -> str:
    char = match.group()
    if not is_unsafe(char):
        return char
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    # JSON spells a character beyond the BMP as its UTF-16 surrogate pair.
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def json_text(document: str) -> str:
    """A JSON text (as ``json.dumps(..., ensure_ascii=False)`` writes it) with the
    characters :func:`printable` escapes written as ``\\uXXXX`` escapes: the same
    document once parsed, safe on a terminal. ``json.dumps`` escapes only C0 controls
    itself, leaving DEL, C1 controls and bidi overrides raw."""
    if document.replace("\n", " ").isprintable():  # as in printable(), at C speed
        return document
    return _JSON_CANDIDATES.sub(_json_escape_match, document)
