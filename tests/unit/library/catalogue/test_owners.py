"""What an owner name may be (``library.catalogue.owners``, issue #27 item 7): short, plain and
visible, refused with the reason wherever it enters."""

from __future__ import annotations

import pytest

from safelight.library.catalogue.owners import MAX_OWNER_NAME_LENGTH, owner_name_problem


@pytest.mark.parametrize(
    "name", ["alice", "marie-hélène", "渡辺", "o'brien", "a b", "x" * MAX_OWNER_NAME_LENGTH]
)
def test_ordinary_names_are_owner_names(name: str) -> None:
    assert owner_name_problem(name) is None


@pytest.mark.parametrize(
    ("name", "problem"),
    [
        ("", "an owner name must not be blank"),
        ("   ", "an owner name must not be blank"),
        (
            "x" * (MAX_OWNER_NAME_LENGTH + 1),
            f"an owner name has at most {MAX_OWNER_NAME_LENGTH} characters (65 given)",
        ),
        ("x" * 100_000, "an owner name has at most 64 characters (100000 given)"),
        ("al\x1b[2Jice", "an owner name must not hold control or format characters (\\x1b)"),
        ("alice\n", "an owner name must not hold control or format characters (\\n)"),
        ("\u202eecila", "an owner name must not hold control or format characters (\\u202e)"),
        ("al\u2066ice\u2069", "control or format characters (\\u2066, \\u2069)"),
        ("al\u200bice", "control or format characters (\\u200b)"),
        (" alice", "an owner name must not begin or end with a space"),
        ("alice ", "an owner name must not begin or end with a space"),
    ],
)
def test_a_name_that_is_not_an_owner_name_is_refused_with_why(name: str, problem: str) -> None:
    found = owner_name_problem(name)
    assert found is not None and problem in found
