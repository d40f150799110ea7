"""Named queries: one file of ``-- name --`` blocks, only the description sent."""

from __future__ import annotations

import pytest

from safelight.core.sql import parse_queries, text_array


def test_a_block_keeps_its_description_and_drops_the_notes_after_it() -> None:
    text = (
        "-- preamble, not a query\n\n"
        "-- first --\n-- What it does.\n-- A note for readers.\n"
        "SELECT 1\n    -- an indented note\nFROM t\n\n"
        "-- second --\nSELECT 2 -- a trailing comment stays\n"
        "-- third --\n-- Described.\nSELECT 3\nFROM u\n"
    )
    assert dict(parse_queries(text)) == {
        "first": "-- What it does.\nSELECT 1\nFROM t",
        "second": "SELECT 2 -- a trailing comment stays",
        "third": "-- Described.\nSELECT 3\nFROM u",
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("-- a --\nSELECT 1\n-- a --\nSELECT 2\n", "defined twice"),
        ("-- a --\n\n-- b --\nSELECT 1\n", "'a' is empty"),
        ("-- a --\n-- Only a description.\n-- And a note.\n", "'a' is empty"),
    ],
)
def test_a_malformed_file_is_refused(text: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_queries(text)


@pytest.mark.parametrize(
    ("values", "literal"),
    [
        ([], "{}"),
        (["noop"], '{"noop"}'),
        (["a", "b"], '{"a","b"}'),
        ([""], '{""}'),
        (["NULL"], '{"NULL"}'),  # quoted: the text NULL, not a null
        (['say "hi"'], '{"say \\"hi\\""}'),
        (["back\\slash"], '{"back\\\\slash"}'),
        (['\\"'], '{"\\\\\\""}'),
        (["{a,b}", " sp ", "x,y"], '{"{a,b}"," sp ","x,y"}'),
    ],
)
def test_a_text_array_quotes_every_element(values: list[str], literal: str) -> None:
    assert text_array(values) == literal


def test_a_text_array_takes_any_iterable() -> None:
    assert text_array(iter(("b", "a"))) == '{"b","a"}'
