"""``/account``: who is signed in, and setting or changing one's own password.

A password is what signs in from another device; the first admin, made by serve's
one-time link, has none until they set it here. Changing it needs the current one
(counted as a sign-in guess: a session left open must not become a way to guess it),
follows the strength rule of ``accounts.passwords``, and ends every session of the
user (``Accounts.set_password``): this browser is signed in again at once, with a new
session and CSRF token (``signin.signed_in``), and every other one must sign in anew.
"""

from __future__ import annotations

import json
import logging
from typing import Any

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from safelight.accounts.passwords import password_problem
from safelight.accounts.users import AccountError, User
from safelight.web import api, pages
from safelight.web.acting import CSRF_HEADER, NO_CSRF
from safelight.web.auth import client_of, refuse_plain_http, too_many
from safelight.web.security import refuse_cross_site
from safelight.web.sessions import SESSION_KEY, Session
from safelight.web.signin import signed_in
from safelight.web.viewer import not_signed_in, viewer_of

_log = logging.getLogger(__name__)

# Where the browser goes once its password is set: this page, which then says so.
DONE_PATH = "/account?password=set"


BROWSER_ONLY = (
    "a password is set on the account page of a signed-in browser, "
    "or with `safelight user passwd NAME`"
)


async def _user(request: Request) -> User:
    viewer = viewer_of(request)
    user: User | None = await api.web(request).accounts.get(viewer.name)
    if user is None:  # removed since this request's session was read
        raise not_signed_in()
    return user


async def account_page(request: Request) -> Response:
    user = await _user(request)
    return pages.render(
        request,
        "account.html",
        {
            "page": "account",
            "user": user,
            "password_set": request.query_params.get("password") == "set",
        },
    )


async def account_document(request: Request) -> Response:
    """GET /api/account: the signed-in user (the pages' banner reads ``has_password``)."""
    user = await _user(request)
    return JSONResponse(
        {"name": user.name, "is_admin": user.is_admin, "has_password": user.has_password},
        headers={"Cache-Control": "no-store"},
    )


def _field(document: dict[str, Any], name: str) -> str:
    value = document.get(name, "")
    if not isinstance(value, str):
        raise HTTPException(400, f"{name} must be text")
    return value


async def set_password(request: Request) -> Response:
    """POST /account (JSON ``{"current": ..., "password": ...}``, with the session's
    CSRF token): sets the password, then signs this browser in again. Refusals are JSON,
    for the page's script."""
    try:
        user = await _checked(request)
    except HTTPException as exc:
        return api.error(exc)
    _log.info("%s set a new password; their other sessions ended", user.name)
    return await signed_in(request, user, DONE_PATH)


async def _checked(request: Request) -> User:
    """The user, once their new password is set; else raise (400, 403, 429)."""
    user = await _user(request)
    _refuse_forged(request)
    refuse_plain_http(request)
    try:
        document = json.loads(await request.body())
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise HTTPException(400, 'send {"current": "...", "password": "..."} as JSON')
    current, new = _field(document, "current"), _field(document, "password")
    web = api.web(request)
    accounts = web.accounts
    if user.has_password:
        # A guess of the current password, counted as a sign-in's is: a browser left
        # signed in must not become a way to learn it.
        client = client_of(request)
        wait = web.guesses.wait_for(client, user.name)
        if wait > 0:
            raise too_many(wait)  # the password is not checked
        if await accounts.sign_in(user.name, current) is None:
            web.guesses.failed(client, user.name)
            raise HTTPException(403, "the current password is not right")
        web.guesses.succeeded(client, user.name)
    problem = password_problem(user.name, new)
    if problem is not None:
        raise HTTPException(400, problem)
    try:
        await accounts.set_password(user.name, new)
    except AccountError as error:
        raise HTTPException(400, str(error)) from None
    return user


def _refuse_forged(request: Request) -> None:
    """A browser's session only (its page's script sends the CSRF token it was given at
    sign-in), from this site. Unlike the library's actions, allowed on a --read-only
    dashboard: a password is not the library."""
    refuse_cross_site(request)
    session = request.scope.get(SESSION_KEY)
    if not isinstance(session, Session):
        raise HTTPException(403, BROWSER_ONLY)
    if not session.csrf_matches(request.headers.get(CSRF_HEADER, "")):
        raise HTTPException(403, NO_CSRF)


def routes() -> list[Route]:
    return [
        Route("/account", account_page, methods=["GET"], name="account"),
        Route("/account", set_password, methods=["POST"]),
        Route("/api/account", account_document, methods=["GET"]),
    ]
