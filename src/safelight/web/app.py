"""The composition root of the web dashboard: :func:`create_app` builds the Starlette
app on an open database, with the clock "today", leases and sessions are read from.
Every request is signed in first (``auth``). Nothing is started: uvicorn serves it
(``safelight.web.server``), a test drives it through httpx's ASGI transport."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import date, tzinfo
from pathlib import Path
from typing import Any

from psycopg_pool import AsyncConnectionPool
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.types import ASGIApp

from safelight.accounts.guessing import Guesses
from safelight.accounts.store import Accounts
from safelight.app import app_store
from safelight.core.clock import Clock, SystemClock
from safelight.db.database import Database
from safelight.settings import Settings
from safelight.web import account, api, auth, failedfiles, pages, people, signin, welcome
from safelight.web.auth import SignIn
from safelight.web.caching import NoStoreApi, StaticAssets
from safelight.web.guard import Guard, answered_hosts
from safelight.web.proxies import serve_proxy
from safelight.web.sessions import Sessions
from safelight.web.welcome import Welcome, WelcomeLink
from safelight.work.store import WorkStore

HERE = Path(__file__).resolve().parent
# Bodies the app reads are a sign-in form; nothing larger is ever needed.
MAX_BODY_BYTES = 16 * 1024


@dataclass(frozen=True, slots=True)
class WebContext:
    """What every route reads, as ``request.app.state.web``."""

    pool: AsyncConnectionPool[Any]
    store: WorkStore
    settings: Settings
    clock: Clock
    zone: tzinfo | None
    """The zone "today" is read in; None: this machine's local zone."""
    proxy_root: Path
    accounts: Accounts
    sessions: Sessions
    guesses: Guesses
    """Wrong passwords and tokens counted per client and per account."""
    read_only: bool
    """Started ``--read-only``: signed-in users read, nobody acts."""

    def today(self) -> date:
        """The clock's date where the dashboard runs (a test's fake clock decides)."""
        return self.clock.now().astimezone(self.zone).date()


def routes() -> list[Route | Mount]:
    return [
        Route("/", pages.on_this_day, name="on_this_day"),
        Route("/queue", pages.queue, name="queue"),
        Route("/items/{item_id:int}", pages.item, name="item"),
        Route("/configs", pages.configs, name="configs"),
        Route("/failed", failedfiles.failed_page, name="failed"),
        Route("/login", signin.login_form, methods=["GET"], name="login"),
        Route("/login", signin.login, methods=["POST"]),
        Route("/logout", signin.logout, methods=["POST"], name="logout"),
        *welcome.routes(),
        *account.routes(),
        *people.routes(),
        Route(auth.HEALTH_PATH, auth.healthz, name="healthz"),
        Route("/api/status", api.status),
        Route("/api/items", api.items),
        Route("/api/items/{item_id:int}", api.item),
        Route("/api/items/{item_id:int}/cancel", api.cancel, methods=["POST"]),
        Route("/api/items/{item_id:int}/retry", api.retry, methods=["POST"]),
        Route("/api/configs", api.configs),
        Route("/api/configs/{config_id}/crawl", api.crawl, methods=["POST"]),
        Route("/api/configs/{config_id}/purge", api.purge, methods=["POST"]),
        Route("/api/configs/{config_id}/retry-failed", api.retry_failed, methods=["POST"]),
        Route("/api/failed-files", failedfiles.failed_files),
        Route(
            "/api/configs/{config_id}/remake-proxies/{mode}", api.remake_proxies, methods=["POST"]
        ),
        # Pause and resume (ADR 0060).
        Route("/api/configs/{config_id}/pause", api.pause_config, methods=["POST"]),
        Route("/api/configs/{config_id}/resume", api.resume_config, methods=["POST"]),
        Route("/api/kinds/{kind}/pause", api.pause_kind, methods=["POST"]),
        Route("/api/kinds/{kind}/resume", api.resume_kind, methods=["POST"]),
        Route("/api/on-this-day", api.on_this_day),
        Route("/proxies/{asset_id:int}/{proxy_type}/{version}", serve_proxy, name="proxy"),
        Route(pages.FAVICON_PATH, pages.favicon, name="favicon"),
        Mount("/static", StaticAssets(directory=HERE / "static"), name="static"),
    ]


async def _http_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    return auth.error_response(request, exc)


class Dashboard(Starlette):
    """Starlette with the :class:`Guard` outside everything else. Starlette puts its own
    middleware (the 500 of an error, the 413 of a body over ``max_body_size``) outside
    any it is given: there, their answers would lack the security headers. Outermost,
    the Guard also refuses a foreign ``Host`` before any of them reads the request.
    Outside it, :class:`NoStoreApi` marks every API answer, the Guard's too, not to be
    stored."""

    def __init__(self, *, hosts: Iterable[str], **options: Any) -> None:
        self._hosts = hosts
        super().__init__(**options)

    def build_middleware_stack(self) -> ASGIApp:
        return NoStoreApi(Guard(super().build_middleware_stack(), self._hosts))


def create_app(
    database: Database,
    settings: Settings,
    *,
    clock: Clock | None = None,
    zone: tzinfo | None = None,
    read_only: bool = False,
    welcome: WelcomeLink | None = None,
) -> Starlette:
    """The dashboard on ``database`` (open, migrated), its proxies read from the
    settings' proxy root and the ``Host`` names it answers to from ``web_host`` and
    ``web_allowed_hosts`` (``guard.answered_hosts``). Users sign in (``safelight user
    add``); ``read_only``: nobody acts, whoever signs in."""
    clock = clock or SystemClock()
    context = WebContext(
        pool=database.pool,
        store=app_store(database, settings, clock),
        settings=settings,
        clock=clock,
        zone=zone,
        proxy_root=settings.proxies,
        accounts=Accounts(database.pool, clock),
        sessions=Sessions(database.pool, clock),
        guesses=Guesses(clock.monotonic, logging.getLogger("safelight.web.signin")),
        read_only=read_only,
    )
    app = Dashboard(
        hosts=answered_hosts(settings),
        routes=routes(),
        # Inside Starlette's own error middleware: a failure here is its 500, with the
        # Guard's headers; outside the routes' exception handlers, so it answers its own.
        middleware=[Middleware(SignIn)],
        exception_handlers={HTTPException: _http_error},
        max_body_size=MAX_BODY_BYTES,
    )
    app.state.web = context
    # The one-time link serve printed (ADR 0045); None: it printed none.
    app.state.welcome = Welcome(welcome)
    return app
