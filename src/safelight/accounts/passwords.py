"""Password hashing (argon2id through argon2-cffi) and the minimum strength of a password.

The parameters are OWASP's argon2id advice with room to spare (ADR 0040): 64 MiB of
memory and 3 passes, one lane. OWASP's floor is 19 MiB with 2 passes (``MIN_*`` below,
checked by a unit test); more memory is what makes a guessing rig's every try costly,
and 64 MiB for the length of one sign-in is little for the machine that serves photos.
A hash is a PHC string (``$argon2id$v=19$m=65536,t=3,p=1$...``) that carries its own
parameters, so raising them later only makes :func:`needs_rehash` true for older
hashes, which a successful sign-in then replaces.

Nothing here logs, and no message quotes a password.
"""

from __future__ import annotations

import contextlib
import functools
import secrets

from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError

TIME_COST = 3
"""Passes over the memory."""
MEMORY_KIB = 64 * 1024
"""Memory of one hash, in KiB (64 MiB)."""
PARALLELISM = 1
"""Lanes: one, so a hash takes one core of the server and never more."""
HASH_BYTES = 32
SALT_BYTES = 16

MIN_TIME_COST = 2
MIN_MEMORY_KIB = 19 * 1024
"""OWASP's minimum for argon2id (Password Storage Cheat Sheet): m=19 MiB, t=2, p=1."""

MIN_PASSWORD_LENGTH = 10
MAX_PASSWORD_LENGTH = 1024
"""Longer is no stronger, and would make each try cost the server more to hash."""
MIN_DISTINCT_CHARACTERS = 5
MIN_NAME_IN_PASSWORD = 3
"""A user's name of this many characters or more must not appear in their password
(case-insensitively); a shorter one would refuse most passwords for no gain."""

# The most used passwords that the rules above do not already refuse (at least 10
# characters, 5 different ones), from the public lists of leaked passwords; compared
# case-insensitively. A short list on purpose: it stops the first guesses of every
# guessing tool, and the lockout (guessing.py) stops the rest.
COMMON_PASSWORDS = frozenset(
    {
        "0123456789",
        "0987654321",
        "1029384756",
        "1234567890",
        "12345678910",
        "123456789a",
        "123456789q",
        "1234567890q",
        "1234qwerty",
        "123qweasdzxc",
        "1q2w3e4r5t",
        "1q2w3e4r5t6y",
        "1qaz2wsx3edc",
        "abcdefghij",
        "abc1234567",
        "asdfghjkl;",
        "azertyuiop",
        "baseball123",
        "football123",
        "iloveyou123",
        "letmein123",
        "monkey1234",
        "password01",
        "password12",
        "password123",
        "password1234",
        "password1!",
        "passw0rd123",
        "princess123",
        "q1w2e3r4t5",
        "q1w2e3r4t5y6",
        "qazwsxedc123",
        "qazwsxedcrfv",
        "qwerty12345",
        "qwerty123456",
        "qwertyuiop",
        "qwertyuiop123",
        "sunshine123",
        "trustno1234",
        "welcome123",
        "zaq12wsxcde3",
        "zxcvbnm123",
    }
)

_HASHER = PasswordHasher(
    time_cost=TIME_COST,
    memory_cost=MEMORY_KIB,
    parallelism=PARALLELISM,
    hash_len=HASH_BYTES,
    salt_len=SALT_BYTES,
    type=Type.ID,
)


def hash_password(password: str) -> str:
    """The PHC string to store for ``password`` (a fresh salt each time)."""
    return _HASHER.hash(password)


@functools.cache
def _dummy_hash() -> str:
    # A hash of a random password no one knows, made with the same parameters, so that
    # verifying against it costs what a real verification costs.
    return _HASHER.hash(secrets.token_urlsafe(32))


def verify_password(stored: str | None, password: str) -> bool:
    """Whether ``password`` is the one ``stored`` was made from.

    ``stored`` None (no such user, or a user with no password yet), a stored value that
    is no hash, and a password longer than any accepted one are all checked against a
    dummy hash first and answer False: every refusal costs one argon2id verification,
    so the time taken does not tell which it was.
    """
    if stored is None or len(password) > MAX_PASSWORD_LENGTH:
        _burn(password[:MAX_PASSWORD_LENGTH])
        return False
    try:
        return _HASHER.verify(stored, password)
    except InvalidHashError:
        _burn(password[:MAX_PASSWORD_LENGTH])
        return False
    except VerificationError:  # VerifyMismatchError is one
        return False


def _burn(password: str) -> None:
    with contextlib.suppress(VerificationError):
        _HASHER.verify(_dummy_hash(), password)


def needs_rehash(stored: str) -> bool:
    """Whether ``stored`` was made with other parameters than today's."""
    try:
        return _HASHER.check_needs_rehash(stored)
    except (InvalidHashError, ValueError):
        return True


def password_problem(name: str, password: str) -> str | None:
    """Why ``password`` is too weak for the user ``name`` (a sentence saying what is
    expected, never quoting the password), or None."""
    if len(password) < MIN_PASSWORD_LENGTH:
        return f"a password needs at least {MIN_PASSWORD_LENGTH} characters"
    if len(password) > MAX_PASSWORD_LENGTH:
        return f"a password has at most {MAX_PASSWORD_LENGTH} characters"
    folded = password.casefold()
    if len(name.strip()) >= MIN_NAME_IN_PASSWORD and name.strip().casefold() in folded:
        return "a password must not contain the user's name"
    if len(set(password)) < MIN_DISTINCT_CHARACTERS:
        return f"a password needs at least {MIN_DISTINCT_CHARACTERS} different characters"
    if folded in COMMON_PASSWORDS:
        return "a password must not be one of the most common ones; choose a less guessable one"
    return None
