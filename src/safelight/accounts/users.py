"""A user of the dashboard, and the error an account operation reports to a person."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime


@dataclass(frozen=True, slots=True)
class User:
    """One account. ``name`` is a storage config owner's name (``library/owners.py``):
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
