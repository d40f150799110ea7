"""What a browser, or a cache between it and the dashboard, may keep (ADR 0044).

Nothing the dashboard answers may outlive what its viewer may see: a page, an API
document or an error is never stored (``no-store``: each names one viewer's photos, items
and configs, as they are now); a proxy is kept by the viewer's browser alone and asked
for again each time it is shown (``private, no-cache`` with its ETag: a 304 costs one
look-up, and a photo deleted, disabled or no longer the viewer's is a 404 the next time,
not a year later). The static files (scripts, styles, the icon) are the same for
everyone and change only with safelight's version, which the pages put in their URLs
(``?v=``): such a URL may be kept a year; any other asks again each time.
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.responses import Response
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from safelight import __version__

NO_STORE = "no-store"
PROXY = "private, no-cache"
API_PREFIX = "/api/"
VERSIONED = "public, max-age=31536000, immutable"
"""A static file asked for at this version's URL: it cannot change under it."""
UNVERSIONED = "no-cache"
"""A static file asked for without the version: kept, but asked again (its ETag)."""
ICON = "public, max-age=86400"
"""``/favicon.ico``, which browsers ask for on their own: for a day."""


class StaticAssets(StaticFiles):
    """The static files, each with what a browser may keep of it."""

    async def get_response(self, path: str, scope: Scope) -> Response:
        response = await super().get_response(path, scope)
        if response.status_code in (200, 304):
            query = scope.get("query_string", b"").decode("latin-1")
            versioned = f"v={__version__}" in query.split("&")
            response.headers["Cache-Control"] = VERSIONED if versioned else UNVERSIONED
        return response


class NoStoreApi:
    """Every answer under ``/api/`` says ``no-store``, whoever made it: a route, an error
    handler, or Starlette's own middleware (the 500 of a bug, the 413 of a large body)
    and the Host guard, which no route's code reaches; so it wraps them all."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not str(scope.get("path", "")).startswith(API_PREFIX):
            await self.app(scope, receive, send)
            return

        async def send_no_store(message: Message) -> None:
            if message["type"] == "http.response.start":
                MutableHeaders(scope=message)["cache-control"] = NO_STORE
            await send(message)

        await self.app(scope, receive, send_no_store)
