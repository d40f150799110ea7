"""Who may act, and what every response carries (ADR 0031).

Reading needs nothing: the dashboard listens on the loopback address unless told
otherwise. Acting (cancel, retry, queue a crawl or a purge) needs the token:

- an API client sends it as ``Authorization: Bearer <token>``; a page cannot be made
  to send that header from another site (it is not one a form or a simple request
  sets, and no CORS header is ever sent), so it needs no further check;
- a person signs in with it once (``POST /login``) and gets a session cookie
  (``HttpOnly``, ``SameSite=Strict``); each action of a session must also carry the
  session's own CSRF token in the ``X-CSRF-Token`` header (the pages read it from
  their ``<meta name="csrf-token">``), and a request whose ``Origin`` or
  ``Sec-Fetch-Site`` says it comes from another site is refused whatever it carries.

Tokens and sessions are compared in constant time; neither is logged or shown. An app
made without a token (``--read-only``) refuses every action.

The ``Host`` a request may name and the headers every response carries are
``safelight.web.guard``'s.
"""

from __future__ import annotations

import hmac
import secrets
from collections import OrderedDict
from dataclasses import dataclass

from starlette.exceptions import HTTPException
from starlette.requests import HTTPConnection, Request

SESSION_COOKIE = "safelight_session"
CSRF_HEADER = "x-csrf-token"
# Sessions kept at once: the oldest goes first. One person signs in from a browser or
# two; this only bounds what repeated sign-ins can hold in memory.
MAX_SESSIONS = 64


def new_token() -> str:
    """A token made at start: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


def same(given: str, expected: str) -> bool:
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


@dataclass(frozen=True, slots=True)
class Session:
    id: str
    csrf: str


class Access:
    """The token, and the sessions signed in with it (in this process's memory: a
    restart signs everyone out)."""

    def __init__(self, token: str | None) -> None:
        self._token = token
        self._sessions: OrderedDict[str, Session] = OrderedDict()

    @property
    def can_act(self) -> bool:
        """False for an app made without a token: read-only for everyone."""
        return self._token is not None

    def is_token(self, given: str) -> bool:
        return self._token is not None and same(given, self._token)

    def sign_in(self, given: str) -> Session | None:
        if not self.is_token(given):
            return None
        session = Session(secrets.token_urlsafe(32), secrets.token_urlsafe(32))
        self._sessions[session.id] = session
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        return session

    def session_of(self, conn: HTTPConnection) -> Session | None:
        cookie = conn.cookies.get(SESSION_COOKIE)
        if not cookie or not self.can_act:
            return None
        # A dict lookup by a secret: compare every key in constant time instead.
        for session_id, session in self._sessions.items():
            if same(cookie, session_id):
                return session
        return None

    def sign_out(self, conn: HTTPConnection) -> None:
        session = self.session_of(conn)
        if session is not None:
            self._sessions.pop(session.id, None)

    def authorize(self, request: Request) -> None:
        """Return if ``request`` may act; else raise 403 (read-only app, cross-site,
        bad CSRF token) or 401 (no token, no session)."""
        if not self.can_act:
            raise HTTPException(403, "this dashboard is read-only: it was started without a token")
        refuse_cross_site(request)
        authorization = request.headers.get("authorization", "")
        scheme, _, given = authorization.partition(" ")
        if scheme.lower() == "bearer" and given:
            if self.is_token(given.strip()):
                return
            raise HTTPException(401, "the token is not this dashboard's")
        session = self.session_of(request)
        if session is None:
            raise HTTPException(401, "sign in with the dashboard's token to act")
        if not same(request.headers.get(CSRF_HEADER, ""), session.csrf):
            raise HTTPException(403, "the request lacks this session's CSRF token")


def refuse_cross_site(request: Request) -> None:
    """Raise 403 if the browser says the request comes from another site."""
    fetch_site = request.headers.get("sec-fetch-site")
    if fetch_site is not None and fetch_site not in ("same-origin", "none"):
        raise HTTPException(403, "a request from another site may not act")
    origin = request.headers.get("origin")
    if origin is not None and origin != own_origin(request):
        raise HTTPException(403, "a request from another site may not act")


def own_origin(request: Request) -> str:
    host = request.headers.get("host", "")
    return f"{request.url.scheme}://{host}"
