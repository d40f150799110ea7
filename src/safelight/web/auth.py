"""Everything needs a signed-in user (ADR 0041): the middleware that finds who a request
is for, before any route runs.

For every request, the :class:`~safelight.web.viewer.Viewer` comes from one of:

- ``Authorization: Bearer <personal token>`` (``safelight user token``): a script's way
  in. Refused over plain HTTP from a client that is not on this machine, rate-limited
  per client (``Guesses``), a wrong one a 401 and a locked client a 429, with
  ``Retry-After``; never echoed. When the header is there, no cookie is looked at.
- the session cookie of the request's origin (``sessions``): a browser's. Refused, as a
  token is, over plain HTTP from another machine: no session is opened that way.

Open without a viewer: the sign-in page and its POST, sign-out, the first-admin link
(``/welcome``), the static files, ``/favicon.ico`` and the health probe. Anything else
without one: the API answers 401 (``WWW-Authenticate: Bearer``), a proxy 404 exactly as
an absent one (an id is not confirmed to exist), a page is sent to the sign-in page
(GET, HEAD) or answered 401 (any other method).
"""

from __future__ import annotations

import ipaddress
import math
from urllib.parse import quote

from starlette.datastructures import Headers
from starlette.exceptions import HTTPException
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from safelight.web import api, pages
from safelight.web.proxies import NO_PROXY
from safelight.web.sessions import SESSION_KEY, Sessions, cookie_name, origin_of
from safelight.web.viewer import SCOPE_KEY, Viewer

HEALTH_PATH = "/healthz"
# Paths answered to anyone: exact paths by method, and the static files below /static/.
OPEN = frozenset(
    {
        ("GET", "/login"),
        ("HEAD", "/login"),
        ("POST", "/login"),
        ("POST", "/logout"),
        ("GET", "/welcome"),
        ("HEAD", "/welcome"),
        ("POST", "/welcome"),
        ("GET", HEALTH_PATH),
        ("HEAD", HEALTH_PATH),
        ("GET", "/favicon.ico"),
        ("HEAD", "/favicon.ico"),
    }
)
OPEN_PREFIXES = ("/static/",)

PLAIN_HTTP = (
    "signing in over plain HTTP from another machine is refused: serve with "
    "--tls-cert and --tls-key, or behind an HTTPS proxy with --behind-proxy (docs/web.md)"
)
TOKEN_NOT_VALID = "this token is not valid"
SIGN_IN_FIRST = "sign in to see this: as a user at /login, or with a personal token"


def is_open(method: str, path: str) -> bool:
    return (method, path) in OPEN or path.startswith(OPEN_PREFIXES)


def client_of(conn: HTTPConnection) -> str:
    """The client's address: what the rate limits count by."""
    return conn.client.host if conn.client is not None else "unknown"


def on_this_machine(conn: HTTPConnection) -> bool:
    """Whether the client is a loopback address (no client at all is not)."""
    if conn.client is None:
        return False
    try:
        return ipaddress.ip_address(conn.client.host).is_loopback
    except ValueError:
        return False


def in_clear(conn: HTTPConnection) -> bool:
    """Whether a secret sent on this connection crossed the network in clear: plain
    HTTP from a client that is not on this machine."""
    return conn.url.scheme != "https" and not on_this_machine(conn)


def refuse_plain_http(conn: HTTPConnection) -> None:
    """Raise 403 if a secret (a password, a token, a session id) crossed the network in
    clear."""
    if in_clear(conn):
        raise HTTPException(403, PLAIN_HTTP)


def too_many(seconds: float) -> HTTPException:
    """The 429 of a locked client or account; the try was not checked."""
    wait = max(1, math.ceil(seconds))
    return HTTPException(
        429,
        f"too many wrong tries: try again in {wait} seconds",
        headers={"Retry-After": str(wait)},
    )


def error_response(request: Request, exc: HTTPException) -> Response:
    """An error as the app answers it: JSON for the API and the proxies, a page else."""
    if request.url.path.startswith(("/api/", "/proxies/")):
        return api.error(exc)
    return pages.error(request, exc)


def bearer_of(headers: Headers) -> str | None:
    """The token of ``Authorization: Bearer ...``; None without one ("" for an empty
    one, which is then refused as any wrong token)."""
    authorization = headers.get("authorization")
    if authorization is None:
        return None
    scheme, _, given = authorization.partition(" ")
    return given.strip() if scheme.lower() == "bearer" else ""


async def _by_token(request: Request, token: str) -> Viewer:
    refuse_plain_http(request)
    web = api.web(request)
    client = client_of(request)
    wait = web.guesses.wait_for(client, None)
    if wait > 0:
        raise too_many(wait)
    user = await web.accounts.user_of_token(token)
    if user is None:
        web.guesses.failed(client, None)
        raise HTTPException(401, TOKEN_NOT_VALID, headers={"WWW-Authenticate": "Bearer"})
    web.guesses.succeeded(client, None)
    return Viewer(user.id, user.name, user.is_admin)


class SignIn:
    """ASGI middleware (inside the Host guard): puts the request's viewer in its scope,
    and answers a request that needs one and has none."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope)
        if request.url.path.startswith(OPEN_PREFIXES) or request.url.path == HEALTH_PATH:
            # The same answer for everyone: no session looked up, no token checked.
            await self.app(scope, receive, send)
            return
        try:
            viewer = await self._viewer(request, scope)
        except HTTPException as exc:
            await error_response(request, exc)(scope, receive, send)
            return
        if viewer is None and not is_open(request.method, request.url.path):
            await self._unsigned(request)(scope, receive, send)
            return
        if viewer is not None:
            scope[SCOPE_KEY] = viewer
        await self.app(scope, receive, send)

    async def _viewer(self, request: Request, scope: Scope) -> Viewer | None:
        token = bearer_of(request.headers)
        if token is not None:
            return await _by_token(request, token)
        session_id = request.cookies.get(cookie_name(request))
        if not session_id:
            return None
        # No session is opened over plain HTTP from another machine, so a cookie that
        # comes that way was carried off (by a server on another port, say): refused.
        refuse_plain_http(request)
        sessions: Sessions = api.web(request).sessions
        session = await sessions.find(session_id, origin_of(request))
        if session is None:
            return None
        scope[SESSION_KEY] = session
        return session.viewer

    @staticmethod
    def _unsigned(request: Request) -> Response:
        path = request.url.path
        if path.startswith("/api/"):
            return error_response(
                request,
                HTTPException(401, SIGN_IN_FIRST, headers={"WWW-Authenticate": "Bearer"}),
            )
        if path.startswith("/proxies/"):
            return error_response(request, HTTPException(404, NO_PROXY))
        if request.method in ("GET", "HEAD"):
            wanted = path + (f"?{request.url.query}" if request.url.query else "")
            return RedirectResponse(f"/login?next={quote(wanted, safe='/')}", status_code=303)
        return error_response(request, HTTPException(401, SIGN_IN_FIRST))


async def healthz(request: Request) -> Response:
    """The health probe: the process answers. Nothing about the library."""
    return JSONResponse({"status": "ok"}, headers={"Cache-Control": "no-store"})
