"""Sessions in ``web_sessions`` on real PostgreSQL: what ``signin.signed_in`` opens (the
cookie named with the port, the row keeping only digests, the origin, the lifetime), the
CSRF token given only to a script, and a session found only at its own origin, for its
lifetime, while it is not idle too long."""

from __future__ import annotations

import hashlib
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from psycopg_pool import AsyncConnectionPool
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from safelight.accounts.store import Accounts
from safelight.accounts.users import User
from safelight.testing.fakeclock import FakeClock
from safelight.web.sessions import IDLE, LIFETIME, Sessions
from safelight.web.signin import signed_in

pytestmark = pytest.mark.integration


async def new_user(pool: AsyncConnectionPool[Any], name: str) -> User:
    return await Accounts(pool, FakeClock()).add(name, password=None, admin=False)


def app_signing_in(sessions: Sessions, account: User) -> Starlette:
    """A route that signs ``account`` in, as the sign-in and the first-admin link do."""

    async def sign_in(request: Request) -> Response:
        return await signed_in(request, account, request.query_params["next"])

    app = Starlette(routes=[Route("/in", sign_in, methods=["POST"])])
    app.state.web = SimpleNamespace(sessions=sessions)
    return app


async def rows(pool: AsyncConnectionPool[Any]) -> list[tuple[Any, ...]]:
    async with pool.connection() as conn:
        cur = await conn.execute(
            "SELECT id_digest, user_id, origin, csrf_digest, created_at, last_seen_at,"
            " expires_at FROM web_sessions"
        )
        return list(await cur.fetchall())


async def test_signed_in_opens_a_session_bound_to_the_origin_and_names_the_cookie_by_port(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    account = await new_user(pool, "alice")
    sessions = Sessions(pool, clock)
    transport = httpx.ASGITransport(app=app_signing_in(sessions, account))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1:8470") as client:
        answer = await client.post("/in?next=/queue", headers={"Accept": "application/json"})
    assert answer.status_code == 200
    assert answer.headers["cache-control"] == "no-store"
    assert answer.json()["next"] == "/queue"
    csrf = answer.json()["csrf"]
    cookie = next(c for c in client.cookies.jar if c.name == "safelight_session_8470")
    assert cookie.has_nonstandard_attr("HttpOnly") and not cookie.secure
    assert cookie.get_nonstandard_attr("SameSite", "").lower() == "strict"
    assert cookie.path == "/"
    assert cookie.value is not None and len(cookie.value) == 43  # 256 random bits
    assert "max-age=2592000" in answer.headers["set-cookie"].lower()

    ((id_digest, user_id, origin, csrf_digest, created, seen, expires),) = await rows(pool)
    assert bytes(id_digest) == hashlib.sha256(cookie.value.encode()).digest()
    assert bytes(csrf_digest) == hashlib.sha256(csrf.encode()).digest()
    assert (user_id, origin) == (account.id, "http://127.0.0.1:8470")
    assert created == seen == clock.now() and expires == clock.now() + LIFETIME

    found = await sessions.find(cookie.value, "http://127.0.0.1:8470")
    assert found is not None and found.viewer.user_id == account.id
    assert found.viewer.name == "alice" and not found.viewer.is_admin
    assert found.csrf_matches(csrf) and not found.csrf_matches(cookie.value)
    # The same id at another port, another host, another scheme: no session.
    for other in ("http://127.0.0.1:9000", "http://localhost:8470", "https://127.0.0.1:8470"):
        assert await sessions.find(cookie.value, other) is None


async def test_a_form_post_is_sent_on_and_https_gets_a_secure_host_cookie(
    pool: AsyncConnectionPool[Any],
) -> None:
    account = await new_user(pool, "bob")
    app = app_signing_in(Sessions(pool, FakeClock()), account)
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="https://nas.example") as client:
        answer = await client.post("/in?next=//evil.example/")
    assert (answer.status_code, answer.headers["location"]) == (303, "/")
    assert "csrf" not in answer.text
    header = answer.headers["set-cookie"]
    assert header.startswith("__Host-safelight_session_443=")
    assert "; secure" in header.lower() and "domain" not in header.lower()
    ((_, _, origin, *_),) = await rows(pool)
    assert origin == "https://nas.example:443"


async def test_a_session_ends_with_its_lifetime_or_when_idle_and_is_seen_once_a_minute(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    sessions = Sessions(pool, clock)
    account = await new_user(pool, "carol")
    origin = "http://127.0.0.1:8470"
    opened = await sessions.open(account.id, origin)
    start = clock.now()

    clock.jump(30)
    assert await sessions.find(opened.id, origin) is not None
    assert [r[5] for r in await rows(pool)] == [start]  # not written within the minute
    clock.jump(31)
    assert await sessions.find(opened.id, origin) is not None
    assert [r[5] for r in await rows(pool)] == [start + timedelta(seconds=61)]

    # Seen every 6 days, it lives until its lifetime ends, and not a second longer.
    while clock.now() + timedelta(days=6) < start + LIFETIME:
        clock.jump(timedelta(days=6).total_seconds())
        assert await sessions.find(opened.id, origin) is not None
    clock.jump((start + LIFETIME - clock.now()).total_seconds())
    assert await sessions.find(opened.id, origin) is None

    idle = await sessions.open(account.id, origin)
    clock.jump(IDLE.total_seconds() - 1)
    assert await sessions.find(idle.id, origin) is not None
    clock.jump(IDLE.total_seconds())
    assert await sessions.find(idle.id, origin) is None
    # Ended sessions' rows go at the next sign-in.
    fresh = await sessions.open(account.id, origin)
    assert [r[0] for r in await rows(pool)] == [hashlib.sha256(fresh.id.encode()).digest()]

    found = await sessions.find(fresh.id, origin)
    assert found is not None
    await sessions.end(found)
    assert await sessions.find(fresh.id, origin) is None and await rows(pool) == []
