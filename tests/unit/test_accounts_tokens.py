"""Personal API tokens (``accounts.tokens``): their format and their digest."""

from __future__ import annotations

import hashlib
import re

from safelight.accounts.tokens import TOKEN_PREFIX, is_token_shaped, new_token, token_digest


def test_a_token_is_the_prefix_and_256_random_bits() -> None:
    tokens = {new_token() for _ in range(200)}
    assert len(tokens) == 200
    for token in tokens:
        assert re.fullmatch(r"sl_[A-Za-z0-9_-]{43}", token)
        assert token.startswith(TOKEN_PREFIX)
        assert is_token_shaped(token)


def test_the_digest_is_the_sha256_hex_of_the_token() -> None:
    token = new_token()
    digest = token_digest(token)
    assert digest == hashlib.sha256(token.encode()).hexdigest()
    assert re.fullmatch(r"[0-9a-f]{64}", digest)
    assert token not in digest
    assert token_digest(new_token()) != digest


def test_texts_of_another_shape_are_no_tokens() -> None:
    token = new_token()
    for text in (
        "",
        "aaaaaaaaaaaaaaaa",
        token[3:],
        token + "a",
        token[:-1],
        "SL_" + token[3:],
        token[:-1] + "=",
        token[:-1] + "é",
        token + "\n",
    ):
        assert not is_token_shaped(text), text
    # A text of the wrong shape still has a digest (nothing raises on odd input).
    assert len(token_digest("\ud800 odd")) == 64
