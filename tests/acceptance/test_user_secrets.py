"""Passwords and tokens never reach a log record (issue #28, "Tests and checks"): every
record of every logger is captured at DEBUG, as it is made, while the CLI adds a user,
changes their password and makes a token, and while the store signs in and checks the
token; neither secret is in any record, nor on stderr, and the password not on stdout."""

from __future__ import annotations

import asyncio
import logging
import traceback
from collections.abc import Iterator

import pytest

from safelight.accounts.store import Accounts
from safelight.core.clock import SystemClock
from safelight.db.pool import open_pool
from safelight.testing.invoking import Invoke

pytestmark = pytest.mark.acceptance

FIRST = "first secret Pa55word"
SECOND = "second secret Pa55word"


def _texts(record: logging.LogRecord) -> list[str]:
    """Everything of a record a handler could write: its message, its arguments, the
    formatted line with any traceback, and every other attribute."""
    texts = [str(record.msg), repr(record.args), repr(vars(record))]
    texts.append(record.getMessage())
    if record.exc_info:
        texts.append("".join(traceback.format_exception(*record.exc_info)))
    texts.append(logging.Formatter().format(record))
    texts.append(str(record.exc_text))
    return texts


@pytest.fixture
def every_record(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, list[str]]]]:
    """Each record of any logger and level, as (logger, texts), taken before any filter
    or handler (the masking filter changes records in place) could change it."""
    seen: list[tuple[str, list[str]]] = []
    handle = logging.Logger.handle

    def capturing(self: logging.Logger, record: logging.LogRecord) -> None:
        seen.append((record.name, _texts(record)))
        handle(self, record)

    monkeypatch.setattr(logging.Logger, "isEnabledFor", lambda self, level: True)
    monkeypatch.setattr(logging.Logger, "handle", capturing)
    yield seen


def test_passwords_and_tokens_never_reach_a_log_record_or_stderr(
    invoke: Invoke, database_url: str, every_record: list[tuple[str, list[str]]]
) -> None:
    debug = ("--log-level", "debug")
    added = invoke(*debug, "user", "add", "alice", "--password-stdin", input=FIRST + "\n")
    assert added.exit_code == 0, added.output
    changed = invoke(*debug, "user", "passwd", "alice", input=f"{SECOND}\n{SECOND}\n")
    assert changed.exit_code == 0, changed.output
    made = invoke(*debug, "user", "token", "alice")
    assert made.exit_code == 0, made.output
    token = made.stdout.strip()
    assert token.startswith("sl_")

    async def sign_in() -> None:
        pool = await open_pool(database_url, min_size=1, max_size=2)
        try:
            accounts = Accounts(pool, SystemClock())
            assert await accounts.sign_in("alice", SECOND) is not None
            assert await accounts.sign_in("alice", FIRST) is None
            assert await accounts.sign_in("nobody", FIRST) is None
            assert await accounts.user_of_token(token) is not None
        finally:
            await pool.close()

    asyncio.run(sign_in())

    # The capture sees every logger at DEBUG: the CLI's own, and the libraries' (asyncio
    # logs its selector when a loop starts; psycopg's pool its connections).
    loggers = {name for name, _ in every_record}
    assert "asyncio" in loggers and any(n.startswith("psycopg") for n in loggers), loggers
    assert len(every_record) > 20
    for name, texts in every_record:
        for text in texts:
            for secret in (FIRST, SECOND, token):
                assert secret not in text, f"a record of {name} holds a secret"
    for result in (added, changed, made):
        for secret in (FIRST, SECOND, token):
            assert secret not in result.stderr
        assert FIRST not in result.stdout and SECOND not in result.stdout
    assert made.stdout == token + "\n"  # the token's one line, and nothing else
