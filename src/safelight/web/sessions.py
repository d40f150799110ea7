"""Signed-in browsers: sessions in ``web_sessions``, bound to the origin they were
opened at (ADR 0041).

The cookie carries a session id of 256 random bits; the table keeps only its SHA-256,
with the user, the origin (``scheme://host:port`` as the request named it, the default
port written out), the SHA-256 of the session's CSRF token and its times, all from the
dashboard's clock. A session lives :data:`LIFETIME` at most and ends after
:data:`IDLE` unseen.

Browsers do not keep cookies apart by port: a cookie set by ``127.0.0.1:8470`` is sent
to ``127.0.0.1:9000`` too. So the cookie's name carries the port
(``safelight_session_8470``; ``__Host-safelight_session_8443`` with ``Secure`` over
HTTPS), a dashboard on another port looks for another name, and a session is found
only at its own origin whatever name its id is presented under.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from psycopg_pool import AsyncConnectionPool
from starlette.requests import HTTPConnection
from starlette.responses import Response

from safelight.core.clock import Clock
from safelight.core.sql import load_queries
from safelight.web.viewer import Viewer

QUERIES: Mapping[str, str] = load_queries("safelight.web", "sessions.sql")

LIFETIME = timedelta(days=30)
IDLE = timedelta(days=7)
# A session's last_seen_at is written at most this often: reading pages costs no write.
TOUCH_EVERY = timedelta(minutes=1)
COOKIE_PREFIX = "safelight_session_"
SECURE_PREFIX = "__Host-"
DEFAULT_PORTS = {"http": 80, "https": 443}
SESSION_KEY = "safelight.session"
"""The scope key of the :class:`Session` a request's viewer came from (absent for a
Bearer token, whose actions need no CSRF token)."""


def digest(secret: str) -> bytes:
    """SHA-256 of a session id or a CSRF token: 256 random bits need no KDF, and a
    lookup by digest stays one index probe."""
    return hashlib.sha256(secret.encode("utf-8")).digest()


def origin_of(conn: HTTPConnection) -> str:
    """``scheme://host:port`` as the request names it, the port always written."""
    url = conn.url
    host = (url.hostname or "").lower()
    shown = f"[{host}]" if ":" in host else host
    return f"{url.scheme}://{shown}:{port_of(conn)}"


def port_of(conn: HTTPConnection) -> int:
    url = conn.url
    return url.port or DEFAULT_PORTS.get(url.scheme, 80)


def cookie_name(conn: HTTPConnection) -> str:
    """The session cookie's name at the request's origin: its port in the name, and
    over HTTPS the ``__Host-`` prefix (the browser then keeps it only if it is
    ``Secure``, for this host alone, for every path)."""
    name = f"{COOKIE_PREFIX}{port_of(conn)}"
    return SECURE_PREFIX + name if conn.url.scheme == "https" else name


def set_cookie(response: Response, conn: HTTPConnection, session_id: str) -> None:
    response.set_cookie(
        cookie_name(conn),
        session_id,
        max_age=int(LIFETIME.total_seconds()),
        path="/",
        secure=conn.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )


def clear_cookie(response: Response, conn: HTTPConnection) -> None:
    response.delete_cookie(
        cookie_name(conn),
        path="/",
        secure=conn.url.scheme == "https",
        httponly=True,
        samesite="strict",
    )


@dataclass(frozen=True, slots=True)
class Opened:
    """A session just opened: its id (the cookie's value) and its CSRF token, each
    handed out once and kept nowhere but as digests."""

    id: str
    csrf: str


@dataclass(frozen=True, slots=True)
class Session:
    """A live session found by its cookie at its own origin."""

    id_digest: bytes
    viewer: Viewer
    csrf_digest: bytes
    has_password: bool = True
    """False for a user who has none yet (the first admin, ADR 0045): the pages ask them
    to set one."""

    def csrf_matches(self, given: str) -> bool:
        """Whether ``given`` is this session's CSRF token: the digests compared in
        constant time."""
        return bool(given) and hmac.compare_digest(digest(given), self.csrf_digest)


class Sessions:
    """The ``web_sessions`` table, on the dashboard's pool and clock."""

    def __init__(self, pool: AsyncConnectionPool[Any], clock: Clock) -> None:
        self._pool = pool
        self._clock = clock

    async def open(self, user_id: int, origin: str) -> Opened:
        opened = Opened(secrets.token_urlsafe(32), secrets.token_urlsafe(32))
        now = self._clock.now()
        async with self._pool.connection() as conn:
            await conn.execute(QUERIES["sessions_delete_ended"], self._bounds(now))
            await conn.execute(
                QUERIES["session_insert"],
                {
                    "id_digest": digest(opened.id),
                    "user_id": user_id,
                    "origin": origin,
                    "csrf_digest": digest(opened.csrf),
                    "now": now,
                    "expires_at": now + LIFETIME,
                },
            )
        return opened

    async def find(self, session_id: str, origin: str) -> Session | None:
        """The live session ``session_id`` names at ``origin``; None for none (never
        opened, ended, expired, idle too long, or opened at another origin)."""
        if not session_id:
            return None
        now = self._clock.now()
        id_digest = digest(session_id)
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                QUERIES["session_of_cookie"],
                {"id_digest": id_digest, "origin": origin, **self._bounds(now)},
            )
            row = await cur.fetchone()
            if row is None:
                return None
            csrf_digest, last_seen_at, user_id, name, is_admin, has_password = row
            if now - last_seen_at >= TOUCH_EVERY:
                await conn.execute(QUERIES["session_touch"], {"id_digest": id_digest, "now": now})
        return Session(id_digest, Viewer(user_id, name, is_admin), bytes(csrf_digest), has_password)

    async def end(self, session: Session) -> None:
        """Sign-out: the row goes, and the cookie names nothing from here on."""
        async with self._pool.connection() as conn:
            await conn.execute(QUERIES["session_delete"], {"id_digest": session.id_digest})

    @staticmethod
    def _bounds(now: datetime) -> dict[str, datetime]:
        return {"now": now, "idle_since": now - IDLE}
