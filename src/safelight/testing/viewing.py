"""Who a test's requests are read for, without a sign-in: an ASGI wrapper that puts a
:class:`~safelight.web.viewer.Viewer` in every request's scope, where the sign-in
middleware puts the signed-in one. For the tests of what a viewer sees (the owner
filter, ADR 0044) apart from how they signed in; production code never imports it.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

from safelight.web.viewer import SCOPE_KEY, Viewer


class AsViewer:
    def __init__(self, app: ASGIApp, viewer: Viewer) -> None:
        self.app = app
        self.viewer = viewer

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] in ("http", "websocket"):
            scope = {**scope, SCOPE_KEY: self.viewer}
        await self.app(scope, receive, send)
