"""A user of the dashboard, and the error an account operation reports to a person."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from safelight.library.catalogue.owners import owner_name_problem


@dataclass(frozen=True, slots=True)
class User:
    """One account. ``name`` is a storage config owner's name (``library/catalogue/owners.py``):
    the user sees the configs of that owner (an admin sees every config).
    ``has_password`` is false for an account no password signs in to yet (the first
    admin, made by serve's one-time link). The password's hash never leaves the store."""

    id: int
    name: str
    is_admin: bool
    has_password: bool
    created_at: datetime


class AccountError(Exception):
    """An account cannot be made, found or changed. The message is one sentence for the
    user, saying what is expected; it never quotes a password, a token or the name."""


def user_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a user's name (a sentence for the user), or None. A user's
    name is an owner's name: the owner rule, in its own words, said of a user."""
    problem = owner_name_problem(name)
    return None if problem is None else problem.replace("an owner name", "a user's name", 1)
