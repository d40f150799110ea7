"""Accounts on PostgreSQL: users, their passwords, their personal API tokens.

Every name that enters is an owner name (``users.user_name_problem``) and
every new password meets :func:`~safelight.accounts.passwords.password_problem`; both
refusals, a taken name and an unknown user raise :class:`AccountError`. Hashing and
verifying run in a thread (argon2id takes tens of milliseconds of one core) and at most
``KDF_AT_ONCE`` at a time per store, which bounds the memory a flood of sign-ins takes
(64 MiB each) whatever the rate limiter lets through.

Adds take turns under a transaction-scoped advisory lock, so the first admin is made
only while no user exists, even against an add or another first-admin whose row is
written but not yet committed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from safelight.accounts.passwords import (
    hash_password,
    needs_rehash,
    password_problem,
    verify_password,
)
from safelight.accounts.tokens import is_token_shaped, new_token, token_digest
from safelight.accounts.users import AccountError, User, user_name_problem
from safelight.core.clock import Clock
from safelight.core.sql import load_queries

QUERIES = load_queries("safelight.accounts", "queries.sql")

# A fixed key for pg_advisory_xact_lock, under which adds take turns: "safelight user
# add" as an arbitrary 63-bit number (configs' adds and the migrations have others).
ADD_LOCK_KEY = 0x5AFE_0028_0A0D

KDF_AT_ONCE = 2
"""argon2id hashes or verifications one store runs at once (64 MiB of memory each)."""

DEFAULT_TOKEN_DAYS = 365
MAX_TOKEN_DAYS = 3650

UNKNOWN_USER = "there is no user of that name (see 'safelight user list')"
NAME_TAKEN = "a user of that name already exists (see 'safelight user list')"


@dataclass(frozen=True, slots=True)
class TokenSummary:
    """A user's unexpired personal tokens: how many, and when one was last used."""

    tokens: int
    last_used_at: datetime | None


def _user(row: Mapping[str, Any]) -> User:
    return User(
        id=row["id"],
        name=row["name"],
        is_admin=row["is_admin"],
        has_password=row["has_password"],
        created_at=row["created_at"],
    )


def _check_name(name: str) -> None:
    problem = user_name_problem(name)
    if problem is not None:
        raise AccountError(problem)


def _check_password(name: str, password: str) -> None:
    problem = password_problem(name, password)
    if problem is not None:
        raise AccountError(problem)


class Accounts:
    """Users, passwords and tokens, on a pool of autocommit connections; time from ``clock``."""

    def __init__(self, pool: AsyncConnectionPool[Any], clock: Clock) -> None:
        self._pool = pool
        self._clock = clock
        self._kdf = asyncio.Semaphore(KDF_AT_ONCE)

    async def _hash(self, password: str) -> str:
        async with self._kdf:
            return await asyncio.to_thread(hash_password, password)

    async def _verify(self, stored: str | None, password: str) -> bool:
        async with self._kdf:
            return await asyncio.to_thread(verify_password, stored, password)

    async def add(self, name: str, *, password: str | None, admin: bool) -> User:
        """A new user, with ``password`` (None: none yet, so no password signs in)."""
        _check_name(name)
        if password is not None:
            _check_password(name, password)
        hashed = None if password is None else await self._hash(password)
        now = self._clock.now()
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(QUERIES["users_lock_for_add"], {"key": ADD_LOCK_KEY})
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(
                QUERIES["user_insert"],
                {
                    "name": name,
                    "is_admin": admin,
                    "password_hash": hashed,
                    "now": now,
                    "password_changed_at": None if hashed is None else now,
                },
            )
            row = await cur.fetchone()
        if row is None:
            raise AccountError(NAME_TAKEN)
        return _user(row)

    async def add_first_admin(self, name: str) -> User | None:
        """An admin with no password yet, made only if there is no user at all; None
        when there is one (made before, or by a concurrent add that committed first)."""
        _check_name(name)
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(QUERIES["users_lock_for_add"], {"key": ADD_LOCK_KEY})
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(
                QUERIES["user_insert_first_admin"], {"name": name, "now": self._clock.now()}
            )
            row = await cur.fetchone()
        return None if row is None else _user(row)

    async def get(self, name: str) -> User | None:
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(QUERIES["user_get"], {"name": name})
            row = await cur.fetchone()
        return None if row is None else _user(row)

    async def list(self) -> list[User]:
        """Every user, oldest first."""
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(QUERIES["users_list"])
            return [_user(row) for row in await cur.fetchall()]

    async def count(self) -> int:
        async with self._pool.connection() as conn:
            cur = await conn.execute(QUERIES["users_count"])
            row = await cur.fetchone()
        return 0 if row is None else int(row[0])

    async def sign_in(self, name: str, password: str) -> User | None:
        """The user whose password this is, or None.

        An unknown name, a user with no password and a wrong password cost one argon2id
        verification each (``verify_password`` checks a dummy hash for the first two),
        so the answer's time does not tell them apart. A hash made with older
        parameters is replaced by one made with today's.
        """
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(QUERIES["user_for_sign_in"], {"name": name})
            row = await cur.fetchone()
        stored: str | None = None if row is None else row["password_hash"]
        if not await self._verify(stored, password) or row is None or stored is None:
            return None
        if needs_rehash(stored):
            fresh = await self._hash(password)
            async with self._pool.connection() as conn:
                await conn.execute(
                    QUERIES["user_rehash_password"],
                    {"id": row["id"], "password_hash": fresh, "old_hash": stored},
                )
        return _user({**row, "has_password": True})

    async def set_password(self, name: str, password: str) -> None:
        """Give ``name`` a new password, and end every web session they have: a changed
        password signs every browser out (personal tokens stay; revoke them apart)."""
        _check_password(name, password)
        hashed = await self._hash(password)
        async with self._pool.connection() as conn, conn.transaction():
            cur = await conn.execute(
                QUERIES["user_set_password"],
                {"name": name, "password_hash": hashed, "now": self._clock.now()},
            )
            row = await cur.fetchone()
            if row is None:
                raise AccountError(UNKNOWN_USER)
            await conn.execute(QUERIES["sessions_delete_of_user"], {"user_id": row[0]})

    async def remove(self, name: str) -> bool:
        """Remove a user with their tokens and sessions; False if there was none. Their
        storage configs stay, and stay theirs: the owner is a name, not an account."""
        async with self._pool.connection() as conn:
            cur = await conn.execute(QUERIES["user_delete"], {"name": name})
            return await cur.fetchone() is not None

    async def new_token(self, name: str, *, days: int = DEFAULT_TOKEN_DAYS) -> str:
        """A new personal API token of ``name``, valid ``days`` days. The token itself is
        returned once and never stored: show it now or never."""
        if not 1 <= days <= MAX_TOKEN_DAYS:
            raise AccountError(f"a token lasts from 1 to {MAX_TOKEN_DAYS} days")
        token = new_token()
        now = self._clock.now()
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                QUERIES["token_insert"],
                {
                    "name": name,
                    "token_hash": token_digest(token),
                    "now": now,
                    "expires_at": now + timedelta(days=days),
                },
            )
            if await cur.fetchone() is None:
                raise AccountError(UNKNOWN_USER)
        return token

    async def revoke_tokens(self, name: str) -> int:
        """Delete every personal token of ``name``; how many there were."""
        if await self.get(name) is None:
            raise AccountError(UNKNOWN_USER)
        async with self._pool.connection() as conn:
            cur = await conn.execute(QUERIES["tokens_delete_of_user"], {"name": name})
            return int(cur.rowcount)

    async def user_of_token(self, token: str) -> User | None:
        """The user of an unexpired ``token`` (noting it as used now), or None. A text
        that is no token's shape is refused without a query."""
        if not is_token_shaped(token):
            return None
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(
                QUERIES["token_use"],
                {"token_hash": token_digest(token), "now": self._clock.now()},
            )
            row = await cur.fetchone()
        return None if row is None else _user(row)

    async def token_summaries(self) -> dict[str, TokenSummary]:
        """Per user name, their unexpired tokens (users with none are absent)."""
        async with self._pool.connection() as conn:
            cur = conn.cursor(row_factory=dict_row)
            await cur.execute(QUERIES["tokens_summary"], {"now": self._clock.now()})
            return {
                row["user_name"]: TokenSummary(row["tokens"], row["last_used_at"])
                for row in await cur.fetchall()
            }
