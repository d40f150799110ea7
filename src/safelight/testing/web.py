"""The web dashboard on a test's own database: the app on httpx's ASGI transport, with a
fake clock ("today" is its date, in UTC) and a generated library; and signing in, as
the sign-in page does (:func:`sign_in_as`) or, for a test about something else, with a
session opened directly (:func:`session_for` for the web's own client, :func:`as_viewer`
for a client of another user's). A client signed in with a session opened directly
sends its CSRF token with every request, as the pages' script does."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, tzinfo
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import httpx
from psycopg_pool import AsyncConnectionPool
from starlette.applications import Starlette

from safelight.accounts.store import Accounts
from safelight.accounts.users import User
from safelight.db.database import Database
from safelight.settings import Settings
from safelight.testing.fakeclock import FakeClock
from safelight.testing.weblibrary import WebLibrary, make_web_library
from safelight.web.acting import CSRF_HEADER
from safelight.web.app import create_app
from safelight.work.store import WorkStore

TODAY = date(2026, 6, 15)
BASE_URL = "http://127.0.0.1:8470"
ORIGIN = "http://127.0.0.1:8470"
COOKIE = "safelight_session_8470"
PASSWORD = "a long family password, 28 June"
ADMIN = "admin"


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
    client: httpx.AsyncClient
    clock: FakeClock
    settings: Settings
    pool: AsyncConnectionPool[Any]
    clients: AsyncExitStack = field(default_factory=AsyncExitStack)
    """Clients made for the test (:func:`as_viewer`), closed with the dashboard."""

    @property
    def accounts(self) -> Accounts:
        accounts: Accounts = self.app.state.web.accounts
        return accounts

    def client_at(
        self, base_url: str = BASE_URL, address: tuple[str, int] = ("127.0.0.1", 50000)
    ) -> httpx.AsyncClient:
        """Another client of the same app: no cookies, its own URL and address."""
        transport = httpx.ASGITransport(app=self.app, client=address)
        return httpx.AsyncClient(transport=transport, base_url=base_url)


def clock_on(day: date, hour: int = 9) -> FakeClock:
    return FakeClock(start=datetime(day.year, day.month, day.day, hour, tzinfo=UTC))


@asynccontextmanager
async def open_web(
    pool: AsyncConnectionPool[Any],
    settings: Settings,
    *,
    clock: FakeClock,
    read_only: bool = False,
    zone: tzinfo = UTC,
) -> AsyncIterator[Web]:
    """The app, and a client that has no session yet."""
    app = create_app(
        Database(url=str(settings.database_url), pool=pool),
        settings,
        clock=clock,
        read_only=read_only,
        zone=zone,
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url=BASE_URL) as client:
        web = Web(app, client, clock, settings, pool)
        async with web.clients:
            yield web


async def library_of(web: Web, day: date = TODAY) -> WebLibrary:
    return await make_web_library(web.pool, web.settings.proxies, day)


async def user_named(web: Web, name: str, *, admin: bool = False, password: str | None) -> User:
    """The user ``name``, added (with ``password``) if there is none yet."""
    found = await web.accounts.get(name)
    if found is not None:
        return found
    return await web.accounts.add(name, password=password, admin=admin)


async def sign_in_as(
    web: Web,
    name: str,
    *,
    admin: bool = False,
    password: str = PASSWORD,
    client: httpx.AsyncClient | None = None,
) -> str:
    """Sign ``client`` (the web's own by default) in as ``name`` (added if needed) as the
    sign-in page's script does; the session's CSRF token. The client keeps the cookie."""
    await user_named(web, name, admin=admin, password=password)
    client = client or web.client
    response = await client.post(
        "/login",
        content=urlencode({"username": name, "password": password, "next": "/queue"}),
        headers={**FORM, "Accept": "application/json"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["next"] == "/queue"
    csrf: str = response.json()["csrf"]
    return csrf


async def session_for(
    web: Web, name: str = ADMIN, *, admin: bool = True, client: httpx.AsyncClient | None = None
) -> str:
    """A session of ``name`` (added, without a password, if needed) opened directly and
    given to ``client`` (the web's own by default) with its CSRF token as a header of
    every request, for a test about what a signed-in user sees and does: no password
    hashed. The session's CSRF token."""
    user = await user_named(web, name, admin=admin, password=None)
    opened = await web.app.state.web.sessions.open(user.id, ORIGIN)
    client = client or web.client
    client.cookies.set(COOKIE, opened.id, domain="127.0.0.1", path="/")
    client.headers[CSRF_HEADER] = opened.csrf
    csrf: str = opened.csrf
    return csrf


async def as_viewer(web: Web, name: str, *, is_admin: bool = False) -> httpx.AsyncClient:
    """A client of the dashboard signed in as the user ``name`` (made if absent): the
    owner of the configs of that name, or an admin. Its cookies are its own; it sends its
    session's CSRF token with every request. Closed with the dashboard."""
    client = await web.clients.enter_async_context(web.client_at())
    await session_for(web, name, admin=is_admin, client=client)
    return client


FORM = {"Content-Type": "application/x-www-form-urlencoded"}


def store_of(web: Web) -> WorkStore:
    """The dashboard's own store (the one its actions call)."""
    store: WorkStore = web.app.state.web.store
    return store
