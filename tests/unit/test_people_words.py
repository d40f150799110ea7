"""How people are named in a sentence ("with Grandma and Ana", ``words.listed``) and
what a person's name may be (``catalogue.people.name_problem``)."""

from __future__ import annotations

import pytest

from safelight.library.catalogue.people import MAX_NAME_LENGTH, name_problem
from safelight.words import listed


@pytest.mark.parametrize(
    ("names", "expected"),
    [
        ([], ""),
        (["Ana"], "Ana"),
        (["Grandma", "Ana"], "Grandma and Ana"),
        (["A", "B", "C"], "A, B and C"),
        (["A", "B", "C", "D", "E"], "A, B, C, D and E"),
        (["A", "B", "C", "D", "E", "F", "G"], "A, B, C, D, E and 2 more"),
    ],
)
def test_names_are_listed_as_a_sentence_lists_them(names: list[str], expected: str) -> None:
    assert listed(names) == expected


@pytest.mark.parametrize(
    "name",
    ["Ana", "Grandma 👵", "Zoë", "x" * MAX_NAME_LENGTH, "👨\u200d👩\u200d👧"],
    ids=["plain", "emoji", "accent", "longest", "joined-emoji"],
)
def test_a_name_may_be_any_visible_text_up_to_its_length(name: str) -> None:
    assert name_problem(name) is None


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "must not be blank"),
        ("x" * (MAX_NAME_LENGTH + 1), "at most 200 characters"),
        ("Ana\x1b[31m", "control or format characters (\\x1b)"),
        ("\u202eAna", "control or format characters (\\u202e)"),
    ],
    ids=["blank", "too-long", "escape", "bidi"],
)
def test_a_name_that_is_not_visible_text_is_refused(name: str, problem: str) -> None:
    found = name_problem(name)
    assert found is not None and problem in found
