"""Signing in and out (ADR 0041): ``GET /login`` (the page), ``POST /login`` (form
fields ``username``, ``password``, ``next``), ``POST /logout``; and :func:`signed_in`,
which opens the session of any way in (the first-admin link's too).

The sign-in page's script posts the form with ``Accept: application/json`` and gets the
session's CSRF token in the answer, once: the page keeps it in the origin's
``localStorage``, which a page of another port or host cannot read. No page ever renders
it. A plain form post (no script) is answered 303 and its pages then cannot act until
the script signs in again.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qs

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

from safelight.accounts.store import Accounts
from safelight.accounts.users import User
from safelight.web import api, pages
from safelight.web.auth import PLAIN_HTTP, client_of, in_clear, refuse_plain_http, too_many
from safelight.web.security import refuse_cross_site
from safelight.web.sessions import (
    SESSION_KEY,
    Session,
    Sessions,
    clear_cookie,
    origin_of,
    set_cookie,
)

WRONG = "wrong user name or password"
MAX_FIELDS = 4  # username, password, next; one spare


def wants_json(request: Request) -> bool:
    return "application/json" in request.headers.get("accept", "")


def safe_next(text: str | None) -> str:
    """Where to go after signing in: a path of this site only."""
    if text and text.startswith("/") and not text.startswith("//") and "\\" not in text:
        return text
    return "/"


async def signed_in(request: Request, user: User, next_path: str) -> Response:
    """Open a session for ``user`` bound to the request's origin, set its cookie, and
    answer: ``{"next", "csrf"}`` to a script that asked for JSON (the only place the
    CSRF token is ever given), else 303 to ``next_path`` (a path of this site). The
    request's own session, if it had one, ends: one browser, one session."""
    sessions: Sessions = api.web(request).sessions
    previous = request.scope.get(SESSION_KEY)
    if isinstance(previous, Session):
        await sessions.end(previous)
    opened = await sessions.open(user.id, origin_of(request))
    next_path = safe_next(next_path)
    response: Response
    if wants_json(request):
        response = JSONResponse(
            {"next": next_path, "csrf": opened.csrf}, headers={"Cache-Control": "no-store"}
        )
    else:
        response = RedirectResponse(next_path, status_code=303)
    set_cookie(response, request, opened.id)
    return response


async def login_form(request: Request) -> Response:
    """The sign-in page; over plain HTTP from another machine it says at once that
    signing in is refused there, and how to serve HTTPS."""
    return pages.render(
        request,
        "login.html",
        {
            "page": "login",
            "next": safe_next(request.query_params.get("next")),
            "failed": PLAIN_HTTP if in_clear(request) else None,
        },
    )


def refused(
    request: Request, exc: HTTPException, template: str, context: dict[str, Any]
) -> Response:
    """A refused try of a form the page's script posts (a sign-in, the first-admin
    link): JSON to the script, else the form's page again saying why, with the
    refusal's headers (``Retry-After``)."""
    if wants_json(request):
        return api.error(exc)
    response = pages.render(request, template, {**context, "failed": exc.detail}, exc.status_code)
    response.headers.update(exc.headers or {})
    return response


async def _form(request: Request) -> dict[str, str]:
    try:
        fields = parse_qs(
            (await request.body()).decode("utf-8", "replace"), max_num_fields=MAX_FIELDS
        )
    except ValueError:  # more fields than a sign-in has
        raise HTTPException(
            400, "a sign-in sends a user name, a password and where to go next"
        ) from None
    return {name: values[0] for name, values in fields.items()}


async def login(request: Request) -> Response:
    """Check the user name and password (rate-limited per client and per account), and
    open a session."""
    refuse_cross_site(request)
    form = await _form(request)
    next_path = safe_next(form.get("next"))
    try:
        refuse_plain_http(request)
        user = await _check(request, form.get("username", ""), form.get("password", ""))
    except HTTPException as exc:
        return refused(request, exc, "login.html", {"page": "login", "next": next_path})
    return await signed_in(request, user, next_path)


async def _check(request: Request, name: str, password: str) -> User:
    web = api.web(request)
    client = client_of(request)
    account = name or None
    wait = web.guesses.wait_for(client, account)
    if wait > 0:
        raise too_many(wait)  # the password is not checked
    accounts: Accounts = web.accounts
    user = await accounts.sign_in(name, password) if name and password else None
    if user is None:
        web.guesses.failed(client, account)
        raise HTTPException(401, WRONG)
    web.guesses.succeeded(client, account)
    return user


async def logout(request: Request) -> Response:
    """End the request's session (its row and its cookie), then the sign-in page."""
    refuse_cross_site(request)
    session = request.scope.get(SESSION_KEY)
    if isinstance(session, Session):
        await api.web(request).sessions.end(session)
    response = RedirectResponse("/login", status_code=303)
    clear_cookie(response, request)
    return response
