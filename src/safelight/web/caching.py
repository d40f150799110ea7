"""What a browser, or a cache between it and the dashboard, may keep (ADR 0044).

Nothing the dashboard answers may outlive what its viewer may see: a page, an API
document or an error is never stored (``no-store``: each names one viewer's photos, items
and configs, as they are now); a proxy is kept by the viewer's browser alone and asked
for again each time it is shown (``private, no-cache`` with its ETag: a 304 costs one
look-up, and a photo deleted, disabled or no longer the viewer's is a 404 the next time,
not a year later).
"""

from __future__ import annotations

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

NO_STORE = "no-store"
PROXY = "private, no-cache"
API_PREFIX = "/api/"


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
