"""The HTML pages: On this day (the home page), the queue, an item, the configs (the
sign-in page is ``signin``'s). Each renders the document its API route returns
(``api``), so a page and its JSON never say different things; the live parts then poll
that API."""

from __future__ import annotations

import json
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from markupsafe import Markup, escape
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.templating import Jinja2Templates

from safelight import __version__
from safelight.logs import masker
from safelight.terminal import printable, printable_lines
from safelight.views.documents import progress_line
from safelight.web import api
from safelight.web.caching import ICON, NO_STORE
from safelight.web.onthisday import on_this_day as day_document
from safelight.web.sessions import SESSION_KEY, Session
from safelight.web.viewer import SCOPE_KEY, Viewer, viewer_of

FAVICON_PATH = "/favicon.ico"
ICON_URL = f"/static/favicon.svg?v={__version__}"
"""The icon the pages link to (``base.html``)."""

TEMPLATES = Jinja2Templates(directory=Path(__file__).resolve().parent / "templates")


def _shown(value: Any) -> Any:
    """Every text a template prints, in the page or in an attribute (a tile's ``title``),
    as ``terminal.printable`` shows it: a bidi override or a control character in a file
    name, a root, an owner or an error becomes its visible escape (``\\u202e``), so no
    template can forget it. ``Markup`` is text already made for the page (``lines``, the
    page's JSON, which ``api.to_web_json`` made safe)."""
    return printable(value) if isinstance(value, str) and not isinstance(value, Markup) else value


def _lines(text: str | None) -> Markup:
    """Text of several lines (a payload, a result): masked, each line escaped as
    :func:`_shown` would, the line breaks kept."""
    return escape(printable_lines(masker.mask("" if text is None else text)))


# Set before any template is compiled: Jinja compiles finalize into each template.
TEMPLATES.env.finalize = _shown


def _when(value: Any) -> str:
    """A time as the pages show it: to the second, with its offset."""
    if value is None:
        return ""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if isinstance(value, datetime):
        return value.isoformat(sep=" ", timespec="seconds")
    return str(value)


def _years_ago(years: int) -> str:
    return "1 year ago" if years == 1 else f"{years} years ago"


def _day_name(day: date) -> str:
    return f"{day.day} {day.strftime('%B')}"


def _step(day: date, days: int) -> date | None:
    try:
        return day + timedelta(days=days)
    except OverflowError:  # before 1 January 1 or after 31 December 9999
        return None


def _counted(count: int, noun: str) -> str:
    """``1 photo``, ``12 photos``."""
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def _duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    whole = round(seconds)
    return f"{whole // 60}:{whole % 60:02d}"


TEMPLATES.env.filters["when"] = _when
TEMPLATES.env.filters["years_ago"] = _years_ago
TEMPLATES.env.filters["duration"] = _duration
TEMPLATES.env.filters["day_name"] = _day_name
TEMPLATES.env.filters["counted"] = _counted
# Text a library or an error wrote, with any secret the logs know masked.
TEMPLATES.env.filters["masked"] = lambda text: "" if text is None else masker.mask(str(text))
TEMPLATES.env.filters["progress"] = progress_line
TEMPLATES.env.filters["lines"] = _lines
TEMPLATES.env.globals["version"] = __version__
TEMPLATES.env.globals["icon_url"] = ICON_URL


def render(
    request: Request, name: str, context: dict[str, Any], status_code: int = 200
) -> Response:
    """A page, with who is looking in its header. ``access`` says what the page offers:
    ``signed-in`` (its buttons act), ``read-only`` (signed in to a dashboard started
    ``--read-only``), ``signed-out`` (the sign-in page, an error before sign-in)."""
    viewer = request.scope.get(SCOPE_KEY)
    read_only = api.web(request).read_only
    if not isinstance(viewer, Viewer):
        viewer, access = None, "signed-out"
    else:
        access = "read-only" if read_only else "signed-in"
    # A browser signed in as a user without a password (the first admin, ADR 0045):
    # every page asks them to set one.
    session = request.scope.get(SESSION_KEY)
    needs_password = isinstance(session, Session) and not session.has_password
    return TEMPLATES.TemplateResponse(
        request,
        name,
        {
            "access": access,
            "viewer": viewer,
            # The badge says what the server is, to whoever looks, signed in or not.
            "read_only": read_only,
            "needs_password": needs_password,
            **context,
        },
        status_code=status_code,
        headers={"Cache-Control": NO_STORE},
    )


def error(request: Request, exc: HTTPException) -> Response:
    response = render(
        request, "error.html", {"status": exc.status_code, "detail": exc.detail}, exc.status_code
    )
    response.headers.update(exc.headers or {})
    return response


async def on_this_day(request: Request) -> Response:
    web = api.web(request)
    today = web.today()
    day = api.parse_day(request.query_params.get("date"), today)
    # The day's first page; the page's script asks the API for the next ones.
    limit = api.parse_limit(request.query_params.get("limit"))
    document = await day_document(web.pool, day, limit=limit, owner=viewer_of(request).owner)
    return render(
        request,
        "on_this_day.html",
        {
            "page": "on_this_day",
            "day": day,
            "today": today,
            "limit": limit,
            "is_today": day == today,
            "previous_day": _step(day, -1),
            "next_day": _step(day, 1),
            "document": document,
            "near_days": [
                {**near, "date": date.fromisoformat(near["date"])} for near in document["near"]
            ],
            # The same document the API returns, for the preview's script to read; no
            # "<" in it (only inside its strings, as a \u escape) can end the script.
            "document_json": api.to_web_json(document, masked=False).replace("<", "\\u003c"),
        },
    )


def _is_admin(request: Request) -> bool:
    viewer = request.scope.get(SCOPE_KEY)
    return isinstance(viewer, Viewer) and viewer.is_admin


async def queue(request: Request) -> Response:
    status = await api.status_document(request)
    by_kind: dict[str, dict[str, int]] = {}
    for row in status["counts"]:
        by_kind.setdefault(row["kind"], {})[row["status"]] = int(row["count"])
    return render(
        request,
        "queue.html",
        {
            "page": "queue",
            "status": status,
            "by_kind": sorted(by_kind.items()),
            # The kinds' pause switches are an admin's (ADR 0060).
            "is_admin": _is_admin(request),
            "kind_names": sorted(api.KIND_NAMES),
        },
    )


async def item(request: Request) -> Response:
    document = await api.item_with_attempts(request, request.path_params["item_id"])
    return render(
        request,
        "item.html",
        {
            "page": "queue",
            "item": document,
            "payload": json.dumps(document["payload"], indent=2, sort_keys=True),
            "result": None
            if document["result"] is None
            else json.dumps(document["result"], indent=2, sort_keys=True, default=str),
        },
    )


async def configs(request: Request) -> Response:
    return render(
        request, "configs.html", {"page": "configs", "configs": await api.configs_document(request)}
    )


async def favicon(request: Request) -> Response:
    """``/favicon.ico``, which a browser asks every site for on its own: to the icon the
    pages link to, so it finds one and stops asking (no 404 at each page load)."""
    return RedirectResponse(ICON_URL, status_code=302, headers={"Cache-Control": ICON})
