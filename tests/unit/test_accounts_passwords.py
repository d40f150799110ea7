"""Passwords (``accounts.passwords``, ADR 0040): argon2id with parameters at or above
OWASP's minimum, a dummy verification for an absent hash, and the minimum strength."""

from __future__ import annotations

from typing import Literal

import pytest
from argon2 import PasswordHasher, Type, extract_parameters

from safelight.accounts import passwords
from safelight.accounts.passwords import (
    COMMON_PASSWORDS,
    MAX_PASSWORD_LENGTH,
    MIN_DISTINCT_CHARACTERS,
    MIN_PASSWORD_LENGTH,
    hash_password,
    needs_rehash,
    password_problem,
    verify_password,
)


class CountingHasher(PasswordHasher):
    """Today's hasher, noting every hash it verifies against."""

    def __init__(self, verified: list[str]) -> None:
        h = passwords._HASHER
        super().__init__(h.time_cost, h.memory_cost, h.parallelism, h.hash_len, h.salt_len)
        self.verified = verified

    def verify(self, hash: str | bytes, password: str | bytes) -> Literal[True]:
        self.verified.append(str(hash))
        return super().verify(hash, password)


GOOD = "correct horse battery"


def test_the_kdf_parameters_meet_owasps_minimum_and_are_the_chosen_ones() -> None:
    assert passwords.MIN_MEMORY_KIB == 19 * 1024 and passwords.MIN_TIME_COST == 2
    assert passwords.MEMORY_KIB >= passwords.MIN_MEMORY_KIB
    assert passwords.TIME_COST >= passwords.MIN_TIME_COST
    assert (passwords.TIME_COST, passwords.MEMORY_KIB, passwords.PARALLELISM) == (3, 65536, 1)


def test_a_hash_is_argon2id_with_the_chosen_parameters_in_it() -> None:
    stored = hash_password(GOOD)
    params = extract_parameters(stored)
    assert stored.startswith("$argon2id$v=19$m=65536,t=3,p=1$")
    assert params.type is Type.ID
    assert (params.time_cost, params.memory_cost, params.parallelism) == (3, 65536, 1)
    assert params.salt_len >= 16 and params.hash_len >= 32
    assert GOOD not in stored
    assert hash_password(GOOD) != stored  # a fresh salt each time


def test_verify_accepts_the_password_only() -> None:
    stored = hash_password(GOOD)
    assert verify_password(stored, GOOD)
    assert not verify_password(stored, GOOD + " ")
    assert not verify_password(stored, "")
    longest = "abcde" * (MAX_PASSWORD_LENGTH // 5) + "x" * (MAX_PASSWORD_LENGTH % 5)
    assert len(longest) == MAX_PASSWORD_LENGTH
    assert verify_password(hash_password(longest), longest)  # the longest accepted one


def test_an_absent_or_broken_hash_or_an_overlong_password_verifies_against_the_dummy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    verified: list[str] = []
    monkeypatch.setattr(passwords, "_HASHER", CountingHasher(verified))
    dummy = passwords._dummy_hash()

    assert not verify_password(None, GOOD)
    assert not verify_password("not a hash", GOOD)
    assert not verify_password(hash_password(GOOD), GOOD + "x" * MAX_PASSWORD_LENGTH)
    assert verified == [dummy, "not a hash", dummy, dummy]


def test_needs_rehash_is_true_for_weaker_or_broken_hashes_only() -> None:
    weaker = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)
    assert not needs_rehash(hash_password(GOOD))
    assert needs_rehash(weaker.hash(GOOD))
    assert needs_rehash("not a hash")


@pytest.mark.parametrize(
    ("name", "password", "problem"),
    [
        ("alice", "short", f"a password needs at least {MIN_PASSWORD_LENGTH} characters"),
        ("alice", "x" * 9, f"a password needs at least {MIN_PASSWORD_LENGTH} characters"),
        (
            "alice",
            "ab" * 600,
            f"a password has at most {MAX_PASSWORD_LENGTH} characters",
        ),
        ("alice", "Alice-and-more", "a password must not contain the user's name"),
        ("alice", "xxALICExxyz", "a password must not contain the user's name"),
        ("Bob", "bobbobbobbob1", "a password must not contain the user's name"),
        (
            "alice",
            "abababababab",
            f"a password needs at least {MIN_DISTINCT_CHARACTERS} different characters",
        ),
        (
            "alice",
            "abcdabcdabcd",
            f"a password needs at least {MIN_DISTINCT_CHARACTERS} different characters",
        ),
        (
            "alice",
            "QWERTYUIOP",
            "a password must not be one of the most common ones; choose a less guessable one",
        ),
        (
            "alice",
            "Password123",
            "a password must not be one of the most common ones; choose a less guessable one",
        ),
    ],
)
def test_a_weak_password_is_refused_with_what_is_expected(
    name: str, password: str, problem: str
) -> None:
    found = password_problem(name, password)
    assert found == problem
    assert password not in found and password.lower() not in found.lower()


@pytest.mark.parametrize(
    ("name", "password"),
    [
        ("alice", GOOD),
        ("alice", "abcde12345"),
        ("alice", "abcdeabcde"),  # five different characters are enough
        ("al", "my pal al says hi"),  # a name this short may appear
        ("alice", "x" * (MAX_PASSWORD_LENGTH - 5) + "abcde"),
        ("渡辺", "ひまわりの咲く庭で" + "!"),
    ],
)
def test_a_good_enough_password_passes(name: str, password: str) -> None:
    assert password_problem(name, password) is None


def test_the_common_list_holds_only_what_the_other_rules_let_through() -> None:
    # Each entry is there because nothing else refuses it; and each is refused.
    for common in COMMON_PASSWORDS:
        assert len(common) >= MIN_PASSWORD_LENGTH
        assert len(set(common)) >= MIN_DISTINCT_CHARACTERS
        assert common == common.casefold()
        assert password_problem("zed", common) is not None
