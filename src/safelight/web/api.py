"""The JSON API (docs/web.md): what the pages show, as documents; the pages' live parts
and buttons call it. Every route needs a signed-in viewer (``auth``); every POST may act
(``acting``: not read-only, not from another site, a session's CSRF token) only on what
the viewer may see.

Each read is of the viewer's own (``viewer_of(request).owner``: an admin's is every
owner's), and an item or config the viewer may not see answers exactly as one that does
not exist: the same status, the same text (ADR 0044). No error text repeats what the
request said: masked or not, an echo would confirm a guess (issue #28); each says what
is expected instead."""

from __future__ import annotations

import json
import re
from datetime import date, datetime
from typing import Any
from uuid import UUID

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from safelight.handlers import HEAVY_KINDS, KINDS
from safelight.library.proxystore.remaking import Mode
from safelight.logs import masker
from safelight.terminal import printable
from safelight.views import answers
from safelight.views.documents import item_document, json_default
from safelight.views.queries import (
    item_owner,
    library_counts,
    list_items,
    queue_status,
    workers_seen_count,
)
from safelight.views.scrub import changed_count, changed_list
from safelight.views.waiting import no_worker_note
from safelight.web import actions, reads
from safelight.web.acting import may_act
from safelight.web.caching import NO_STORE
from safelight.web.onthisday import MAX_PAGE_TILES, PAGE_TILES, Cursor
from safelight.web.onthisday import on_this_day as day_document
from safelight.web.viewer import viewer_of
from safelight.work.model import Status
from safelight.work.pausing import Pauses

STATUS_LIMIT = 10
KIND_NAMES = frozenset(kind.name for kind in KINDS)
ITEMS_LIMIT = 50
MAX_ITEMS_LIMIT = 1000
# Only the extended calendar form: Python would also read 20261201 and 2026-W49-2.
_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")
# The one answer for a config that does not exist and for one the viewer may not see.
NO_CONFIG = "there is no such storage config"


def to_web_json(document: Any, *, masked: bool = True) -> str:
    """The CLI's encoding (UUIDs and times as strings), compact, with any secret the logs
    know masked, and every string as the pages show it (:func:`shown_strings`). ``masked``
    False only for a document of the library's own strings (file names, cameras, proxy
    URLs: no error text, no setting), where masking a day of a large library would cost
    more than building it."""
    text = _dumps(document)
    # Any control character is written as a backslash escape, any other character
    # printable() escapes as itself, which isprintable() refuses: without either, no
    # string needs escaping (the common case, judged at C speed).
    if not (text.isprintable() and "\\" not in text):
        text = _dumps(shown_strings(json.loads(text)))
    return masker.mask(text) if masked else text


def _dumps(document: Any) -> str:
    return json.dumps(document, default=json_default, ensure_ascii=False, separators=(",", ":"))


def shown_strings(value: Any) -> Any:
    """``value`` (JSON data) with every string, keys too, as ``terminal.printable`` shows
    it: a control character, a bidi override (U+202E would turn ``gpj.exe`` into what
    reads as ``exe.jpg``) or a zero-width space in a file name becomes its visible escape
    (``\\u202e``), wherever a page or its script shows the text, a ``title`` included."""
    if isinstance(value, str):
        return printable(value)
    if isinstance(value, dict):
        return {printable(key): shown_strings(item) for key, item in value.items()}
    if isinstance(value, list):
        return [shown_strings(item) for item in value]
    return value


def json_response(document: Any, status_code: int = 200, *, masked: bool = True) -> Response:
    return Response(
        to_web_json(document, masked=masked), status_code, media_type="application/json"
    )


def error(exc: HTTPException) -> Response:
    response = json_response({"error": exc.detail, "status": exc.status_code}, exc.status_code)
    response.headers.update(exc.headers or {})
    # An error of a proxy's URL too: a 404 is cacheable by default, and the same URL can
    # be one the viewer may see later (or no longer).
    response.headers["Cache-Control"] = NO_STORE
    return response


def web(request: Request) -> Any:
    return request.app.state.web


def parse_day(text: str | None, today: date) -> date:
    """``?date=YYYY-MM-DD``, or today; a 400 saying what is expected for anything else."""
    if text is None or text == "":
        return today
    try:
        if not _DAY.fullmatch(text):
            raise ValueError
        return date.fromisoformat(text)
    except ValueError:
        raise HTTPException(
            400, f"date must be a day as YYYY-MM-DD, such as {today.isoformat()}"
        ) from None


def parse_cursor(text: str | None) -> Cursor | None:
    """``?after=``: a page's ``next``, as the API gave it; a 400 for anything else."""
    if text is None or text == "":
        return None
    try:
        return Cursor.decode(text)
    except ValueError:
        raise HTTPException(
            400, "after must be the next cursor of a page of this API, as given"
        ) from None


def parse_limit(text: str | None) -> int:
    """``?limit=``: tiles in a page, 1 to MAX_PAGE_TILES (PAGE_TILES without it)."""
    if text is None or text == "":
        return PAGE_TILES
    if text.isascii() and text.isdigit() and 1 <= int(text) <= MAX_PAGE_TILES:
        return int(text)
    raise HTTPException(400, f"limit must be a whole number from 1 to {MAX_PAGE_TILES}")


def parse_config_id(text: str) -> UUID:
    try:
        return UUID(text)
    except ValueError:
        raise HTTPException(404, NO_CONFIG) from None


def lease_seconds_left(lease_expires_at: datetime | None, now: datetime) -> float | None:
    if lease_expires_at is None:
        return None
    return max(0.0, (lease_expires_at - now).total_seconds())


async def status_document(request: Request) -> dict[str, Any]:
    """``safelight status --json`` (but the database's name), each running item with
    the seconds its lease has left by the dashboard's clock."""
    context = web(request)
    document = await queue_status(
        context.pool,
        context.clock.transition_time(),
        limit=STATUS_LIMIT,
        owner=viewer_of(request).owner,
        heavy=context.settings.heavy_window(HEAVY_KINDS),
        at=context.clock.now(),
    )
    now = context.clock.now()
    for row in document["running"]:
        row["lease_seconds_left"] = lease_seconds_left(row["lease_expires_at"], now)
    document["statuses"] = [s.value for s in Status]
    document["now"] = now
    document["no_worker"] = no_worker_note(
        int(document["totals"].get(Status.QUEUED.value, 0)),
        await workers_seen_count(
            context.pool,
            context.clock.transition_time(),
            within_seconds=context.settings.health_worker_seen_seconds,
        ),
    )
    return document


async def status(request: Request) -> Response:
    return json_response(await status_document(request))


def _limit(text: str | None) -> int:
    if text is None:
        return ITEMS_LIMIT
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_ITEMS_LIMIT:
        raise HTTPException(400, f"limit must be a whole number from 1 to {MAX_ITEMS_LIMIT}")
    return value


async def items_document(request: Request) -> list[dict[str, Any]]:
    query = request.query_params
    status_name = query.get("status") or None
    if status_name is not None and status_name not in {s.value for s in Status}:
        raise HTTPException(400, "status must be one of " + ", ".join(s.value for s in Status))
    config = query.get("config") or None
    try:
        config_id = None if config is None else UUID(config)
    except ValueError:
        raise HTTPException(400, "config must be a storage config's id (a UUID)") from None
    return await list_items(
        web(request).pool,
        status=status_name,
        config_id=config_id,
        kind=query.get("kind") or None,
        limit=_limit(query.get("limit")),
        owner=viewer_of(request).owner,
    )


async def items(request: Request) -> Response:
    return json_response(await items_document(request))


def no_item(item_id: int) -> HTTPException:
    """The 404 of an item that does not exist, and of one the viewer may not see."""
    return HTTPException(404, answers.no_item(item_id))


async def may_see_item(request: Request, item_id: int) -> bool:
    """Whether the item exists and is the viewer's (of one of their configs; an admin's:
    any). An item never changes its config, so the answer holds for what follows."""
    found = await item_owner(web(request).pool, item_id)
    return found is not None and viewer_of(request).may_see(found.owner)


async def item_with_attempts(request: Request, item_id: int) -> dict[str, Any]:
    store = web(request).store
    if not await may_see_item(request, item_id):
        raise no_item(item_id)
    found = await store.get(item_id)
    if found is None:  # purged between the two reads
        raise no_item(item_id)
    return {**item_document(found), "attempts": await store.attempts(item_id)}


async def item(request: Request) -> Response:
    return json_response(await item_with_attempts(request, request.path_params["item_id"]))


def _part(row: dict[str, Any], prefix: str) -> dict[str, Any] | None:
    """The columns of ``row`` named ``<prefix>...``, without it; None when its ``id`` is
    null (no such item)."""
    part = {k.removeprefix(prefix): v for k, v in row.items() if k.startswith(prefix)}
    return None if part["id"] is None else part


CHANGED_LISTED = 20
"""Originals reported changed listed per config on the configs page (the last found
first); the count has them all, and ``safelight assets --changed`` lists every one."""


async def configs_document(request: Request) -> list[dict[str, Any]]:
    """Each config with its counts (those ``run`` prints), its last crawl, its
    running item and the originals the scrub found changed (ADR 0062)."""
    pool = web(request).pool
    now = web(request).clock.now()
    documents = []
    owner = viewer_of(request).owner
    for row in await reads.configs_overview(pool, owner=owner):
        running = _part(row, "running_")
        if running is not None:
            running["lease_seconds_left"] = lease_seconds_left(running["lease_expires_at"], now)
        documents.append(
            {
                "id": row["id"],
                "owner": row["owner"],
                "root": row["root_path"],
                "active": row["active"],
                "created_at": row["created_at"],
                "counts": await library_counts(pool, row["id"]),
                "last_crawl": _part(row, "last_crawl_"),
                "running": running,
                "failed_files": row["failed_files"],
                "originals_changed": {
                    "count": await changed_count(pool, config_id=row["id"], owner=owner),
                    "listed": await changed_list(
                        pool, config_id=row["id"], limit=CHANGED_LISTED, owner=owner
                    ),
                },
            }
        )
    return documents


async def configs(request: Request) -> Response:
    return json_response(await configs_document(request))


async def on_this_day(request: Request) -> Response:
    context = web(request)
    params = request.query_params
    day = parse_day(params.get("date"), context.today())
    after, limit = parse_cursor(params.get("after")), parse_limit(params.get("limit"))
    document = await day_document(context.pool, day, after, limit, owner=viewer_of(request).owner)
    return json_response(document, masked=False)


def _act(request: Request, done: actions.Done) -> Response:
    return json_response(done.document(), done.status_code)


async def cancel(request: Request) -> Response:
    may_act(request)
    item_id = request.path_params["item_id"]
    if not await may_see_item(request, item_id):
        return _act(request, actions.cancel_unseen(item_id))
    return _act(request, await actions.cancel_item(web(request).store, item_id))


async def retry(request: Request) -> Response:
    may_act(request)
    item_id = request.path_params["item_id"]
    if not await may_see_item(request, item_id):
        return _act(request, actions.retry_unseen(item_id))
    return _act(request, await actions.retry_item(web(request).store, item_id))


async def _config_for_action(request: Request) -> UUID:
    """The config the path names, if the viewer may act on it: their own, or any for an
    admin; a 404 as for no config otherwise."""
    viewer = may_act(request)
    config_id = parse_config_id(request.path_params["config_id"])
    found = await reads.configs_overview(web(request).pool, config_id, owner=viewer.owner)
    if not found or not viewer.may_see(found[0]["owner"]):
        raise HTTPException(404, NO_CONFIG)
    return config_id


async def crawl(request: Request) -> Response:
    config_id = await _config_for_action(request)
    return _act(request, await actions.queue_crawl(web(request).store, config_id))


async def purge(request: Request) -> Response:
    config_id = await _config_for_action(request)
    return _act(request, await actions.queue_purge(web(request).store, config_id))


async def remake_proxies(request: Request) -> Response:
    config_id = await _config_for_action(request)
    try:
        mode = Mode(request.path_params["mode"])
    except ValueError:
        raise HTTPException(404, "no such remake: missing or all") from None
    return _act(request, await actions.queue_proxy_remake(web(request).store, config_id, mode))


async def retry_failed(request: Request) -> Response:
    """All the config's failed files; ``?reason=R``: those of one reason; ``?path=P``:
    the one file (relative to the config's root)."""
    config_id = await _config_for_action(request)
    reason, path = _one_of(request, "reason", "path")
    context = web(request)
    done = await actions.retry_failed(
        context.store, context.pool, config_id, context.clock.now(), reason=reason, path=path
    )
    return _act(request, done)


def _one_of(request: Request, *names: str) -> tuple[str | None, ...]:
    """The query parameters ``names``, each None when absent; a 400 when more than one
    is given, or one is given empty."""
    given = tuple(request.query_params.get(name) for name in names)
    if any(value == "" for value in given) or sum(value is not None for value in given) > 1:
        raise HTTPException(400, "give at most one of " + ", ".join(names) + ", not empty")
    return given


def _pauses(request: Request) -> Pauses:
    context = web(request)
    return Pauses(context.pool, context.clock)


def _kind_for_action(request: Request) -> tuple[str, str]:
    """The kind the path names and the viewer's name; pausing a kind holds every
    user's work, so it is an admin's alone (403), and an unknown kind is a 404."""
    viewer = may_act(request)
    if not viewer.is_admin:
        raise HTTPException(403, "only an admin pauses or resumes a kind")
    kind = request.path_params["kind"]
    if kind not in KIND_NAMES:
        raise HTTPException(404, "there is no such kind")
    return kind, viewer.name


async def pause_kind(request: Request) -> Response:
    kind, by = _kind_for_action(request)
    return _act(request, await actions.pause_kind(_pauses(request), kind, by))


async def resume_kind(request: Request) -> Response:
    kind, _ = _kind_for_action(request)
    return _act(request, await actions.resume_kind(_pauses(request), kind))


async def pause_config(request: Request) -> Response:
    config_id = await _config_for_action(request)
    by = viewer_of(request).name
    return _act(request, await actions.pause_config(_pauses(request), config_id, by))


async def resume_config(request: Request) -> Response:
    config_id = await _config_for_action(request)
    return _act(request, await actions.resume_config(_pauses(request), config_id))
