"""The web dashboard on a test's own database: the app on httpx's ASGI transport, with a
fake clock ("today" is its date, in UTC) and a generated library.

``web.client`` reads as the admin ``admin``; :func:`as_viewer` gives a client that
reads as another user (every request carries its Viewer, as a sign-in would set it)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, tzinfo
from pathlib import Path
from typing import Any

import httpx
from psycopg_pool import AsyncConnectionPool
from starlette.applications import Starlette

from safelight.db.database import Database
from safelight.settings import Settings
from safelight.testing.fakeclock import FakeClock
from safelight.testing.viewing import AsViewer
from safelight.testing.weblibrary import WebLibrary, make_web_library
from safelight.web.app import create_app
from safelight.web.viewer import Viewer
from safelight.work.store import WorkStore

TOKEN = "a-test-token-of-the-dashboard"
TODAY = date(2026, 6, 15)
BASE_URL = "http://127.0.0.1:8470"
ADMIN_NAME = "admin"
ADMIN = Viewer(user_id=0, name=ADMIN_NAME, is_admin=True)
"""An admin with no row, for a server a test starts without a database of its own."""


def web_settings(database_url: str, tmp_path: Path, **changes: Any) -> Settings:
    return Settings(
        database_url=database_url,
        home=tmp_path / "home",
        proxy_root=tmp_path / "proxies",
        decode_processes=0,
        **changes,
    )


@dataclass
class Web:
    app: Starlette
    clock: FakeClock
    settings: Settings
    pool: AsyncConnectionPool[Any]
    clients: AsyncExitStack = field(default_factory=AsyncExitStack)
    client: httpx.AsyncClient = field(init=False)
    """The admin's client."""


def clock_on(day: date, hour: int = 9) -> FakeClock:
    return FakeClock(start=datetime(day.year, day.month, day.day, hour, tzinfo=UTC))


@asynccontextmanager
async def open_web(
    pool: AsyncConnectionPool[Any],
    settings: Settings,
    *,
    clock: FakeClock,
    token: str | None = TOKEN,
    zone: tzinfo = UTC,
) -> AsyncIterator[Web]:
    app = create_app(
        Database(url=str(settings.database_url), pool=pool),
        settings,
        clock=clock,
        token=token,
        zone=zone,
    )
    web = Web(app, clock, settings, pool)
    async with web.clients:
        web.client = await as_viewer(web, ADMIN_NAME, is_admin=True)
        yield web


async def as_viewer(web: Web, name: str, *, is_admin: bool = False) -> httpx.AsyncClient:
    """A client of the dashboard whose every request is read and acted for the user
    ``name`` (made if absent): the owner of the configs of that name, or an admin. Its
    cookies are its own. Closed with the dashboard."""
    async with web.pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO users (name, is_admin, created_at) VALUES (%s, %s, %s)"
            " ON CONFLICT (name) DO UPDATE SET is_admin = EXCLUDED.is_admin RETURNING id",
            (name, is_admin, web.clock.now()),
        )
        row = await cur.fetchone()
    assert row is not None
    viewer = Viewer(user_id=int(row[0]), name=name, is_admin=is_admin)
    transport = httpx.ASGITransport(app=AsViewer(web.app, viewer))
    client = httpx.AsyncClient(transport=transport, base_url=BASE_URL)
    return await web.clients.enter_async_context(client)


async def library_of(web: Web, day: date = TODAY) -> WebLibrary:
    return await make_web_library(web.pool, web.settings.proxies, day)


async def signed_in(web: Web) -> str:
    """Sign the client in with the token; the session's CSRF token, from a page's meta."""
    response = await web.client.post("/login", content=f"token={TOKEN}&next=/queue", headers=FORM)
    assert response.status_code == 303, response.text
    page = await web.client.get("/queue")
    marker = '<meta name="csrf-token" content="'
    start = page.text.index(marker) + len(marker)
    return page.text[start : page.text.index('"', start)]


FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def store_of(web: Web) -> WorkStore:
    """The dashboard's own store (the one its actions call)."""
    store: WorkStore = web.app.state.web.store
    return store
