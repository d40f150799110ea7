"""Personal API tokens: what a script sends as ``Authorization: Bearer <token>``.

A token is ``sl_`` and 256 random bits (43 URL-safe characters). Only its SHA-256 (hex)
is stored (``auth_tokens.token_hash``): a KDF adds nothing to a secret of that entropy,
and a lookup by digest stays one index probe (ADR 0040). The prefix makes a leaked
token recognisable to secret scanners and to a person reading a config file; the fixed
shape lets a check refuse a malformed token (``aaaaaaaaaaaaaaaa``) without a query.
"""

from __future__ import annotations

import hashlib
import re
import secrets

TOKEN_PREFIX = "sl_"
TOKEN_BYTES = 32
"""256 bits of randomness: beyond guessing, so one SHA-256 is enough to keep it."""

_TOKEN_SHAPE = re.compile(r"sl_[A-Za-z0-9_-]{43}")


def new_token() -> str:
    """A fresh token, to be shown once and stored only as :func:`token_digest`."""
    return TOKEN_PREFIX + secrets.token_urlsafe(TOKEN_BYTES)


def token_digest(token: str) -> str:
    """What is stored of a token: its SHA-256, as 64 lowercase hex digits."""
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def is_token_shaped(text: str) -> bool:
    """Whether ``text`` could be a token :func:`new_token` made (no lookup needed to
    refuse one that could not)."""
    return _TOKEN_SHAPE.fullmatch(text) is not None
