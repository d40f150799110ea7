"""Text safe for a terminal: what is escaped, what is kept, and that JSON stays exact;
the tables every listing command prints escape their cells and never read markup."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from safelight.cli.output import cell, key_values, table, to_json
from safelight.terminal import is_unsafe, json_text, printable, printable_lines

# A file name that tries everything: clear the screen, return and overwrite, backspace,
# an 8-bit CSI, a right-to-left override, a zero-width space, a forged line, a tab,
# rich markup (one tag unbalanced), and ordinary accented and CJK letters.
HOSTILE = "é日本\x1b[2J\r\bX\x9b31m\u202egpj.exe\u200b\nFORGED\t[bold]x[/] [/]\x7f"
HOSTILE_SHOWN = "é日本\\x1b[2J\\r\\x08X\\x9b31m\\u202egpj.exe\\u200b\\nFORGED\\t[bold]x[/] [/]\\x7f"


def raw_controls(text: str) -> list[str]:
    """Every character of ``text`` a terminal would act on, other than line breaks."""
    return [c for c in text if c != "\n" and is_unsafe(c)]


@pytest.mark.parametrize(
    ("char", "shown"),
    [
        ("\x1b", "\\x1b"),
        ("\x00", "\\x00"),
        ("\r", "\\r"),
        ("\n", "\\n"),
        ("\t", "\\t"),
        ("\b", "\\x08"),
        ("\x7f", "\\x7f"),
        ("\x85", "\\x85"),  # NEL, a C1 line break
        ("\x9b", "\\x9b"),  # CSI
        ("\u061c", "\\u061c"),  # Arabic letter mark
        ("\u200e", "\\u200e"),
        ("\u202a", "\\u202a"),
        ("\u202e", "\\u202e"),
        ("\u2066", "\\u2066"),
        ("\u2069", "\\u2069"),
        ("\u200b", "\\u200b"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
        ("\ufeff", "\\ufeff"),
        ("\udcff", "\\udcff"),  # an undecodable byte of a file name (surrogateescape)
        ("\U000e0041", "\\U000e0041"),  # a tag character, invisible
    ],
)
def test_each_control_becomes_its_visible_escape(char: str, shown: str) -> None:
    assert printable(f"a{char}b") == f"a{shown}b"


@pytest.mark.parametrize(
    "text",
    [
        "plain ascii ~!@#$%^&*()_+{}|:<>? 0123",
        "Café/été/Ærø.jpg",
        "日本語の写真/東京.heic",
        "Ελληνικά, русский, עברית, العربية",
        "family \U0001f468\u200d\U0001f469\u200d\U0001f467.jpg",  # joined by ZWJ
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",  # Persian, with a ZWNJ
        "no\u00a0break and\u3000ideographic space",
        "back\\slash\\x1b spelt out",
    ],
)
def test_ordinary_text_of_any_script_is_kept_as_it_is(text: str) -> None:
    assert printable(text) == text


def test_printable_escapes_everything_and_is_idempotent() -> None:
    shown = printable(HOSTILE)
    assert shown == HOSTILE_SHOWN
    assert raw_controls(shown) == [] and "\n" not in shown
    assert printable(shown) == shown


def test_printable_lines_keeps_line_breaks_only() -> None:
    text = "Traceback:\n  name '\x1b[31m'\r\nError: \u202ebad"
    assert printable_lines(text) == "Traceback:\n  name '\\x1b[31m'\\r\nError: \\u202ebad"


def test_json_text_is_the_same_document_without_raw_controls() -> None:
    document = {
        "path": HOSTILE,
        "nested": [{"reason": "\x85\u2028\u2029\ufeff\udcff"}],
        "tag \U000e0041 key": "\U000e0041 and \U0001f600",
    }
    dumped = json.dumps(document, ensure_ascii=False, indent=2)
    safe = json_text(dumped)
    assert json.loads(safe) == document
    assert raw_controls(safe) == []
    # Ordinary letters stay letters (not \u escapes); the indentation stays.
    assert "é日本" in safe and "\U0001f600" in safe and safe.count("\n") == dumped.count("\n")
    assert "\\udb40\\udc41" in safe  # beyond the BMP: its UTF-16 pair


def test_the_json_output_of_commands_is_exact_and_safe() -> None:
    out = to_json({"file_path": HOSTILE, "error": "\x9b2J"})
    assert json.loads(out) == {"file_path": HOSTILE, "error": "\x9b2J"}
    assert raw_controls(out) == []


def shown(renderable: object) -> str:
    out = io.StringIO()
    Console(file=out, width=300, highlight=False).print(renderable)
    return out.getvalue()


def test_table_cells_are_escaped_and_never_read_as_markup() -> None:
    text = shown(table("assets", ("id", "path"), [(1, HOSTILE), (2, "[red]plain[/red]")]))
    assert raw_controls(text) == []
    assert HOSTILE_SHOWN in text
    assert "[red]plain[/red]" in text
    # One line per asset: the newline in the name did not start a line of its own.
    plain = shown(table("assets", ("id", "path"), [(1, "a"), (2, "b")]))
    assert len(text.splitlines()) == len(plain.splitlines())


def test_key_values_and_cells_are_escaped() -> None:
    text = shown(key_values({"error": HOSTILE, "none": None}))
    assert raw_controls(text) == [] and HOSTILE_SHOWN in text
    assert shown(cell("[bold]b[/] \x1b[5m")).strip() == "[bold]b[/] \\x1b[5m"
    assert cell(HOSTILE).plain == HOSTILE_SHOWN
