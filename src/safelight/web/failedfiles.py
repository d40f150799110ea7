"""The "Failed files" page and its API (``/failed``, ``/api/failed-files``; ADR 0058):
the files crawls of the viewer's configs could not ingest, one group a config and
reason, each group's newest files first, a reason's further files a keyset page of their
own (``?config=ID&reason=R&after=CURSOR``). Its "try again" buttons post to
``/api/configs/{id}/retry-failed`` (``api.retry_failed``: a config, ``?reason=``,
``?path=``). Both read ``views.failedfiles`` with the viewer's ``owner``."""

from __future__ import annotations

from typing import Any
from uuid import UUID

from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from safelight.views.failedfiles import NEXT_CRAWL, FileCursor, failed_by_reason, failed_of_reason
from safelight.web import api, pages
from safelight.web.viewer import viewer_of

PAGE_FILES = 20
"""A reason's files in a page (the overview's first page of each reason too)."""
MAX_PAGE_FILES = 200
NO_FAILED_FILES = "this storage config has no failed file of that reason"


def _limit(text: str | None) -> int:
    if text is None or text == "":
        return PAGE_FILES
    if text.isascii() and text.isdigit() and 1 <= int(text) <= MAX_PAGE_FILES:
        return int(text)
    raise HTTPException(400, f"limit must be a whole number from 1 to {MAX_PAGE_FILES}")


def _config(text: str | None) -> UUID | None:
    if text is None or text == "":
        return None
    try:
        return UUID(text)
    except ValueError:
        raise HTTPException(400, "config must be a storage config's id (a UUID)") from None


def _after(text: str | None) -> FileCursor | None:
    if text is None or text == "":
        return None
    try:
        return FileCursor.decode(text)
    except ValueError:
        raise HTTPException(
            400, "after must be the next cursor of a page of this API, as given"
        ) from None


async def failed_document(request: Request) -> dict[str, Any]:
    """Without ``reason``: every reason of the viewer's configs (or of ``config``), each
    with its first page. With ``reason`` (and ``config``): the page of that reason after
    ``after``; a 404 when the config has none of it, or is not the viewer's."""
    context = api.web(request)
    params = request.query_params
    owner = viewer_of(request).owner
    config_id = _config(params.get("config"))
    reason = params.get("reason") or None
    limit = _limit(params.get("limit"))
    now = context.clock.now()
    if reason is None:
        if params.get("after"):
            raise HTTPException(400, "after goes with a config and a reason")
        groups = await failed_by_reason(
            context.pool, now, owner=owner, config_id=config_id, per_reason=limit
        )
    else:
        if config_id is None:
            raise HTTPException(400, "reason goes with a config")
        group = await failed_of_reason(
            context.pool,
            now,
            owner=owner,
            config_id=config_id,
            reason=reason,
            after=_after(params.get("after")),
            limit=limit,
        )
        if group is None:
            raise HTTPException(404, NO_FAILED_FILES)
        groups = [group]
    return {"config": config_id, "reason": reason, "limit": limit, "groups": groups, "now": now}


async def failed_files(request: Request) -> Response:
    return api.json_response(await failed_document(request))


async def failed_page(request: Request) -> Response:
    document = await failed_document(request)
    configs: list[dict[str, Any]] = []
    for group in document["groups"]:
        if not configs or configs[-1]["id"] != group["config_id"]:
            configs.append(
                {
                    "id": group["config_id"],
                    "root": group["root"],
                    "owner": group["owner"],
                    "groups": [],
                }
            )
        configs[-1]["groups"].append(group)
    return pages.render(
        request,
        "failed.html",
        {"page": "failed", "document": document, "configs": configs, "next_crawl": NEXT_CRAWL},
    )
