"""The one-time link ``safelight serve`` prints when nobody can sign in yet (ADR 0045).

With no user at all, the link makes the first admin: its token is 256 random bits (or
``SAFELIGHT_WEB_TOKEN``), carried after ``#`` in the URL, which no browser sends and so
no server or proxy log records. The page's script (``static/welcome.js``) reads it and
POSTs it here; a right token creates the admin, named after the system user who ran
``serve`` (the default owner of that user's configs), and signs that browser in.

With users but no password among them (an admin the link made, who never set one), the
link signs in as that admin instead, so nobody is ever locked out of their own library;
the page then asks them to set a password (``/account``).

A link works once: the second use, and any use once the state it was printed for has
passed (a user made meanwhile, a password set), answers 410 and points to /login.
Wrong tokens are counted per client (the app's ``Guesses``, as sign-in's are) and
compared in constant time; the token is refused over plain HTTP from another machine.
"""

from __future__ import annotations

import hmac
import json
import logging
import secrets
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from safelight.accounts.store import Accounts
from safelight.accounts.users import User
from safelight.web import api, pages
from safelight.web.auth import client_of, refuse_plain_http, too_many
from safelight.web.security import refuse_cross_site
from safelight.web.signin import refused, signed_in, wants_json

_log = logging.getLogger(__name__)

USED = "this link was used; sign in"
WRONG_TOKEN = "that is not the token of the link safelight serve printed"


@dataclass(frozen=True, slots=True)
class WelcomeLink:
    """What ``serve`` printed a one-time link for. ``admin``: the name of the admin it
    makes (``existing`` False: no user yet) or signs in as (``existing`` True: the admin
    with no password). ``next_path``: where the signed-in browser goes (On this day, on
    ``serve --day``'s day when given)."""

    token: str
    admin: str
    existing: bool
    next_path: str = "/"


@dataclass
class Welcome:
    """The link of one server, and whether it was used (in this process: a restart prints
    a new one, since the state it is printed for is read again at start)."""

    link: WelcomeLink | None
    _used: bool = field(default=False)

    @property
    def open(self) -> bool:
        return self.link is not None and not self._used

    def matches(self, given: str) -> bool:
        assert self.link is not None
        return hmac.compare_digest(given.encode("utf-8"), self.link.token.encode("utf-8"))

    async def use(self, accounts: Accounts) -> User | None:
        """The user the link signs in, or None when it no longer can (used, or its state
        passed). Marked used before the first await: of two uses at once, the second
        finds it used."""
        if self.link is None or self._used:
            return None
        self._used = True
        try:
            if not self.link.existing:
                # Atomic in the database: of two servers' links, or a link and
                # `safelight user add`, one makes a user and the other finds one.
                return await accounts.add_first_admin(self.link.admin)
            user = await accounts.get(self.link.admin)
        except BaseException:
            self._used = False  # the database was away: the link is still unused
            raise
        return user if user is not None and user.is_admin and not user.has_password else None


def welcome_of(request: Request) -> Welcome:
    found: Welcome = request.app.state.welcome
    return found


def _used(request: Request) -> Response:
    if wants_json(request):
        return JSONResponse(
            {"error": USED, "status": 410, "login": "/login"},
            410,
            headers={"Cache-Control": "no-store"},
        )
    return pages.render(request, "welcome.html", {"page": "welcome", "used": True}, 410)


async def welcome_page(request: Request) -> Response:
    """The page the link opens; its script sends the token (the server never sees it
    here). A link already used says so at once."""
    if not welcome_of(request).open:
        return _used(request)
    return pages.render(request, "welcome.html", {"page": "welcome", "used": False})


async def _given_token(request: Request) -> str:
    body = await request.body()
    if request.headers.get("content-type", "").startswith("application/json"):
        try:
            document: Any = json.loads(body)
        except ValueError:
            document = None
        token = document.get("token") if isinstance(document, dict) else None
        if not isinstance(token, str):
            raise HTTPException(400, 'send {"token": "..."}: the token after #token= in the link')
        return token.strip()
    try:
        form = parse_qs(body.decode("utf-8", "replace"), max_num_fields=2)
    except ValueError:
        raise HTTPException(400, "send the token after #token= in the link, alone") from None
    return (form.get("token") or [""])[0].strip()


async def welcome(request: Request) -> Response:
    """POST /welcome: the link's token; answers as ``signin.signed_in`` does."""
    refuse_cross_site(request)
    state = welcome_of(request)
    if not state.open:
        return _used(request)
    try:
        await _check(request, state)
    except HTTPException as exc:
        return refused(request, exc, "welcome.html", {"page": "welcome", "used": False})
    assert state.link is not None
    user = await state.use(api.web(request).accounts)
    if user is None:
        return _used(request)
    _log.info(
        "%s signed in with serve's one-time link%s",
        user.name,
        "" if state.link.existing else " as the first admin",
    )
    return await signed_in(request, user, state.link.next_path)


async def _check(request: Request, state: Welcome) -> None:
    """Return if the request carries the link's token; else raise (400, 403, 429)."""
    # The token makes an admin: it crosses no network in clear.
    refuse_plain_http(request)
    web = api.web(request)
    client = client_of(request)
    wait = web.guesses.wait_for(client, None)
    if wait > 0:
        raise too_many(wait)  # the token is not checked
    given = await _given_token(request)
    if not given or not state.matches(given):
        web.guesses.failed(client, None)
        raise HTTPException(403, WRONG_TOKEN)
    web.guesses.succeeded(client, None)


def routes() -> list[Route]:
    return [
        Route("/welcome", welcome_page, methods=["GET"], name="welcome"),
        Route("/welcome", welcome, methods=["POST"]),
    ]


def link_token() -> str:
    """A token made at start: 256 random bits, URL-safe (43 characters)."""
    return secrets.token_urlsafe(32)


async def link_for(
    accounts: Accounts, *, admin: str, given_token: str | None, next_path: str
) -> WelcomeLink | None:
    """The one-time link a server starting now offers: with no user, one that makes
    ``admin`` (its token ``given_token`` when set, SAFELIGHT_WEB_TOKEN); with users of
    which none has a password, one that signs in as the first admin among them (a new
    token each start); else None (users sign in with their passwords)."""
    users = await accounts.list()
    if not users:
        return WelcomeLink(given_token or link_token(), admin, False, next_path)
    if any(user.has_password for user in users):
        return None
    admins = [user for user in users if user.is_admin]
    if not admins:
        return None  # `safelight user passwd NAME` gives one a password
    return WelcomeLink(link_token(), admins[0].name, True, next_path)
