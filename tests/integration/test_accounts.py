"""Accounts on PostgreSQL (``accounts.store``, ADR 0040): users, passwords, sessions
ended with a new password, tokens, removal cascading, and the first admin made once."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any, Literal

import psycopg
import pytest
from argon2 import PasswordHasher
from psycopg_pool import AsyncConnectionPool

from safelight.accounts import passwords, store
from safelight.accounts.store import ADD_LOCK_KEY, QUERIES, Accounts
from safelight.accounts.tokens import token_digest
from safelight.accounts.users import AccountError, User
from safelight.testing.fakeclock import FakeClock


class CountingHasher(PasswordHasher):
    """Today's hasher, noting every hash it verifies against."""

    def __init__(self, verified: list[str]) -> None:
        h = passwords._HASHER
        super().__init__(h.time_cost, h.memory_cost, h.parallelism, h.hash_len, h.salt_len)
        self.verified = verified

    def verify(self, hash: str | bytes, password: str | bytes) -> Literal[True]:
        self.verified.append(str(hash))
        return super().verify(hash, password)


pytestmark = pytest.mark.integration

PASSWORD = "correct horse battery"
OTHER = "a different staple 42"


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def accounts(pool: AsyncConnectionPool[Any], clock: FakeClock) -> Accounts:
    return Accounts(pool, clock)


async def rows(pool: AsyncConnectionPool[Any], sql: str, *args: Any) -> list[tuple[Any, ...]]:
    async with pool.connection() as conn:
        cur = await conn.execute(sql, args or None)
        return list(await cur.fetchall())


async def add_session(pool: AsyncConnectionPool[Any], user: User, digest: bytes) -> None:
    async with pool.connection() as conn:
        await conn.execute(
            "INSERT INTO web_sessions (id_digest, user_id, origin, csrf_digest, created_at,"
            " last_seen_at, expires_at) VALUES (%s, %s, 'http://127.0.0.1:8080', %s,"
            " now(), now(), now() + interval '1 day')",
            (digest, user.id, b"csrf" + digest),
        )


async def test_add_get_list_and_count(accounts: Accounts, clock: FakeClock) -> None:
    alice = await accounts.add("alice", password=PASSWORD, admin=True)
    clock.jump(5)
    bob = await accounts.add("bob", password=None, admin=False)

    assert alice.name == "alice" and alice.is_admin and alice.has_password
    assert alice.created_at == clock.now() - timedelta(seconds=5)
    assert not bob.is_admin and not bob.has_password
    assert await accounts.get("alice") == alice
    assert await accounts.get("Alice") is None
    assert await accounts.list() == [alice, bob]
    assert await accounts.count() == 2
    [(stored, changed)] = await accounts_rows(accounts, "alice")
    assert stored.startswith("$argon2id$") and PASSWORD not in stored
    assert changed == alice.created_at


async def accounts_rows(accounts: Accounts, name: str) -> list[tuple[Any, ...]]:
    return await rows(
        accounts._pool, "SELECT password_hash, password_changed_at FROM users WHERE name = %s", name
    )


async def test_add_refuses_a_taken_name_a_bad_name_and_a_weak_password(
    accounts: Accounts,
) -> None:
    await accounts.add("alice", password=None, admin=False)
    with pytest.raises(AccountError, match=r"^a user of that name already exists"):
        await accounts.add("alice", password=PASSWORD, admin=True)
    with pytest.raises(AccountError, match="must not be blank"):
        await accounts.add(" ", password=None, admin=False)
    with pytest.raises(AccountError, match="control or format characters"):
        await accounts.add("ev\x1bil", password=None, admin=False)
    with pytest.raises(AccountError, match=r"^a password needs at least 10 characters$"):
        await accounts.add("bob", password="short", admin=False)
    with pytest.raises(AccountError, match="must not contain the user's name"):
        await accounts.add("bobby", password="hello-BOBBY-99", admin=False)
    assert [u.name for u in await accounts.list()] == ["alice"]


async def test_sign_in_with_the_password_only(accounts: Accounts) -> None:
    alice = await accounts.add("alice", password=PASSWORD, admin=False)
    await accounts.add("nopass", password=None, admin=False)

    assert await accounts.sign_in("alice", PASSWORD) == alice
    assert await accounts.sign_in("alice", OTHER) is None
    assert await accounts.sign_in("ALICE", PASSWORD) is None
    assert await accounts.sign_in("nobody", PASSWORD) is None
    assert await accounts.sign_in("nopass", "") is None
    assert await accounts.sign_in("nopass", PASSWORD) is None


async def test_every_refusal_costs_one_verification(
    accounts: Accounts, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An unknown user, a user with no password and a wrong password each take one
    argon2id verification (the first two against the dummy hash): the same work."""
    await accounts.add("alice", password=PASSWORD, admin=False)
    await accounts.add("nopass", password=None, admin=False)
    verified: list[str] = []
    monkeypatch.setattr(passwords, "_HASHER", CountingHasher(verified))
    dummy = passwords._dummy_hash()
    [(alices,)] = await rows(accounts._pool, "SELECT password_hash FROM users WHERE name = 'alice'")

    for name in ("nobody", "nopass", "alice"):
        assert await accounts.sign_in(name, OTHER) is None
    assert verified == [dummy, dummy, alices]


async def test_sign_in_rehashes_a_hash_of_older_parameters(accounts: Accounts) -> None:
    alice = await accounts.add("alice", password=PASSWORD, admin=False)
    weaker = PasswordHasher(time_cost=2, memory_cost=19 * 1024, parallelism=1)
    old = weaker.hash(PASSWORD)
    async with accounts._pool.connection() as conn:
        await conn.execute("UPDATE users SET password_hash = %s WHERE id = %s", (old, alice.id))

    assert await accounts.sign_in("alice", OTHER) is None
    [(unchanged, _)] = await accounts_rows(accounts, "alice")
    assert unchanged == old  # a failed sign-in changes nothing

    assert await accounts.sign_in("alice", PASSWORD) == alice
    [(fresh, _)] = await accounts_rows(accounts, "alice")
    assert fresh != old and fresh.startswith("$argon2id$v=19$m=65536,t=3,p=1$")
    assert await accounts.sign_in("alice", PASSWORD) == alice


async def test_set_password_changes_it_and_ends_that_users_sessions_only(
    accounts: Accounts, clock: FakeClock
) -> None:
    alice = await accounts.add("alice", password=PASSWORD, admin=False)
    bob = await accounts.add("bob", password=PASSWORD, admin=False)
    await add_session(accounts._pool, alice, b"a1")
    await add_session(accounts._pool, alice, b"a2")
    await add_session(accounts._pool, bob, b"b1")
    clock.jump(60)

    await accounts.set_password("alice", OTHER)

    assert await accounts.sign_in("alice", PASSWORD) is None
    assert await accounts.sign_in("alice", OTHER) == alice
    assert await rows(accounts._pool, "SELECT id_digest FROM web_sessions") == [(b"b1",)]
    [(_, changed)] = await accounts_rows(accounts, "alice")
    assert changed == clock.now()


async def test_set_password_refuses_a_weak_one_and_an_unknown_user(accounts: Accounts) -> None:
    alice = await accounts.add("alice", password=PASSWORD, admin=False)
    await add_session(accounts._pool, alice, b"a1")
    with pytest.raises(AccountError, match="at least 10 characters"):
        await accounts.set_password("alice", "short")
    with pytest.raises(AccountError, match=r"^there is no user of that name"):
        await accounts.set_password("nobody", OTHER)
    assert await accounts.sign_in("alice", PASSWORD) == alice
    assert len(await rows(accounts._pool, "SELECT 1 FROM web_sessions")) == 1


async def test_remove_takes_the_tokens_and_sessions_along_but_not_the_configs(
    accounts: Accounts, pool: AsyncConnectionPool[Any], tmp_path: Any
) -> None:
    from safelight.library.catalogue.configs import StorageConfigs

    alice = await accounts.add("alice", password=PASSWORD, admin=False)
    bob = await accounts.add("bob", password=PASSWORD, admin=False)
    await accounts.new_token("alice")
    await accounts.new_token("bob")
    await add_session(pool, alice, b"a1")
    await add_session(pool, bob, b"b1")
    await StorageConfigs(pool, FakeClock()).add("alice", tmp_path)

    assert await accounts.remove("alice")
    assert not await accounts.remove("alice")

    assert await accounts.get("alice") is None
    assert await rows(pool, "SELECT user_name FROM auth_tokens") == [("bob",)]
    assert await rows(pool, "SELECT id_digest FROM web_sessions") == [(b"b1",)]
    assert await rows(pool, "SELECT owner FROM storage_configs") == [("alice",)]


async def test_a_token_names_its_user_until_it_expires_and_notes_its_use(
    accounts: Accounts, clock: FakeClock
) -> None:
    alice = await accounts.add("alice", password=None, admin=False)
    start = clock.now()
    token = await accounts.new_token("alice", days=2)

    [(digest, created, expires, used)] = await rows(
        accounts._pool, "SELECT token_hash, created_at, expires_at, last_used_at FROM auth_tokens"
    )
    assert digest == token_digest(token) and token not in digest
    assert (created, expires, used) == (start, start + timedelta(days=2), None)

    clock.jump(3600)
    assert await accounts.user_of_token(token) == alice
    [(used,)] = await rows(accounts._pool, "SELECT last_used_at FROM auth_tokens")
    assert used == start + timedelta(seconds=3600)
    summary = await accounts.token_summaries()
    assert summary == {"alice": store.TokenSummary(1, used)}

    assert await accounts.user_of_token(token[:-1] + ("A" if token[-1] != "A" else "B")) is None
    assert await accounts.user_of_token("aaaaaaaaaaaaaaaa") is None
    assert await accounts.user_of_token(digest) is None

    clock.jump(2 * 86400 - 3600 - 1)
    assert await accounts.user_of_token(token) == alice
    clock.jump(1)
    assert await accounts.user_of_token(token) is None  # expired at its expiry
    assert await accounts.token_summaries() == {}


async def test_new_token_and_revoke_need_a_user_and_revoke_takes_theirs_only(
    accounts: Accounts,
) -> None:
    await accounts.add("alice", password=None, admin=False)
    await accounts.add("bob", password=None, admin=False)
    first = await accounts.new_token("alice")
    second = await accounts.new_token("alice")
    bobs = await accounts.new_token("bob")
    assert first != second
    with pytest.raises(AccountError, match=r"^there is no user of that name"):
        await accounts.new_token("nobody")
    with pytest.raises(AccountError, match="from 1 to 3650 days"):
        await accounts.new_token("alice", days=0)
    with pytest.raises(AccountError, match=r"^there is no user of that name"):
        await accounts.revoke_tokens("nobody")

    assert await accounts.revoke_tokens("alice") == 2
    assert await accounts.revoke_tokens("alice") == 0
    assert await accounts.user_of_token(first) is None
    assert (await accounts.user_of_token(bobs)) is not None


async def test_the_first_admin_is_made_only_while_there_is_no_user(accounts: Accounts) -> None:
    admin = await accounts.add_first_admin("admin")
    assert admin is not None and admin.is_admin and not admin.has_password
    assert await accounts.add_first_admin("another") is None
    assert [u.name for u in await accounts.list()] == ["admin"]


async def test_an_add_committed_while_the_first_admin_waits_wins(
    accounts: Accounts, database_url: str
) -> None:
    """An add holds its transaction open with its row written (under the adds' lock);
    the first-admin call starts then: it waits for the add to commit, and sees its row."""
    async with await psycopg.AsyncConnection.connect(database_url) as held:
        async with held.transaction():
            await held.execute(QUERIES["users_lock_for_add"], {"key": ADD_LOCK_KEY})
            await held.execute(
                "INSERT INTO users (name, is_admin, created_at) VALUES ('bob', false, now())"
            )
            first_admin = asyncio.create_task(accounts.add_first_admin("admin"))
            await _until_an_add_waits(held)
        assert await first_admin is None
    assert [(u.name, u.is_admin) for u in await accounts.list()] == [("bob", False)]


async def test_two_first_admins_at_once_make_one(accounts: Accounts, database_url: str) -> None:
    """One first-admin call holds its transaction open with its admin written; the
    second starts then, waits, and finds a user."""
    async with await psycopg.AsyncConnection.connect(database_url) as held:
        async with held.transaction():
            await held.execute(QUERIES["users_lock_for_add"], {"key": ADD_LOCK_KEY})
            cur = await held.execute(
                QUERIES["user_insert_first_admin"], {"name": "first", "now": FakeClock().now()}
            )
            assert await cur.fetchone() is not None
            second = asyncio.create_task(accounts.add_first_admin("second"))
            await _until_an_add_waits(held)
        assert await second is None
    assert [(u.name, u.is_admin) for u in await accounts.list()] == [("first", True)]


async def test_an_add_of_the_first_admins_name_waits_and_is_refused(
    accounts: Accounts, database_url: str
) -> None:
    async with await psycopg.AsyncConnection.connect(database_url) as held:
        async with held.transaction():
            await held.execute(QUERIES["users_lock_for_add"], {"key": ADD_LOCK_KEY})
            await held.execute(
                QUERIES["user_insert_first_admin"], {"name": "admin", "now": FakeClock().now()}
            )
            add = asyncio.create_task(accounts.add("admin", password=None, admin=False))
            await _until_an_add_waits(held)
        with pytest.raises(AccountError, match="already exists"):
            await add


async def _until_an_add_waits(conn: psycopg.AsyncConnection[Any]) -> None:
    """Until a session of this database waits on an advisory lock (the server's answer,
    polled: not a wait for a deadline)."""
    for _ in range(10_000):
        cur = await conn.execute(
            "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database"
            " WHERE l.locktype = 'advisory' AND NOT l.granted"
            " AND d.datname = current_database()"
        )
        row = await cur.fetchone()
        if row is not None and row[0] > 0:
            return
        await asyncio.sleep(0.005)
    raise AssertionError("the second add never waited on the adds' lock")
