"""``proxy_sweep`` (unscoped): delete orphan proxy files, and empty folders, past an hour.

Safe beside a crawl of any config without the per-config rule (ADR 0008): a crawl's
fresh file is younger than the floor until its row is committed, and every file is
re-checked (no row names it, then still old, on the very entry it unlinks) right before
its delete. Only names of the proxy layout are candidates; anything else under the
proxy root is reported in the result and left alone (``library.proxystore.sweep``).
"""

from __future__ import annotations

import asyncio
from functools import partial
from pathlib import Path
from typing import Any

import psycopg

from safelight.handlers.contract import HandlerContext, stop_if_cancelled
from safelight.handlers.guards import check_proxy_root
from safelight.handlers.kind import Kind
from safelight.handlers.payloads import NoPayload
from safelight.handlers.services import Services
from safelight.library.catalogue import proxies
from safelight.library.proxystore.proxytree import UnsafeProxyPath, delete_file, remove_folder
from safelight.library.proxystore.sweep import is_young, scan_proxy_root
from safelight.work.kinds import Scope

_BATCH = 500
LISTED_AT_MOST = 100
"""Foreign entries named in a result; the count has them all."""


async def still_orphan(
    conn: psycopg.AsyncConnection[Any], root: Path, relative: str, now_timestamp: float
) -> bool:
    """The re-check right before a delete: still no row names the file. (Its age is
    checked after this, by the delete itself: a crawl renames its proxy into place,
    with a fresh ctime, before it inserts the row, so a rename that beat this check is
    seen there.)"""
    return not await proxies.paths_named(conn, [relative])


async def run_proxy_sweep(
    ctx: HandlerContext, services: Services, payload: NoPayload
) -> dict[str, Any]:
    root = services.settings.proxies
    if not root.is_dir():
        return {
            "files_seen": 0,
            "deleted": 0,
            "folders_removed": 0,
            "errors": [],
            "foreign": 0,
            "left_alone": [],
        }
    # No library, of any config in any state, may lie inside (or around) the root this
    # sweep deletes in, and the root must be this database's: another's proxies are all
    # "orphans" to this one.
    await check_proxy_root(services)
    scan = await asyncio.to_thread(scan_proxy_root, root, ctx.clock.now().timestamp())
    stop_if_cancelled(ctx)
    errors = [{"path": p, "reason": r} for p, r in scan.unreadable]
    orphans: list[str] = []
    async with services.pool.connection() as conn:
        for start in range(0, len(scan.old_files), _BATCH):
            batch = scan.old_files[start : start + _BATCH]
            named = await proxies.paths_named(conn, batch)
            orphans.extend(p for p in batch if p not in named)
        deleted = 0
        young = partial(_young, ctx)
        for relative in orphans:
            stop_if_cancelled(ctx)
            if not await still_orphan(conn, root, relative, ctx.clock.now().timestamp()):
                continue
            try:
                deleted += delete_file(root, relative, ctx.ensure_alive, keep=young)
            except UnsafeProxyPath as error:
                errors.append({"path": relative, "reason": error.reason})
    folders_removed = 0
    for relative in scan.folders:
        stop_if_cancelled(ctx)
        # A folder's mtime moves whenever an entry is added or removed, so an old empty
        # folder is not one a crawl has just made to write into. (A folder this very
        # sweep emptied is young again by that rule, and goes at the next sweep.)
        try:
            folders_removed += remove_folder(root, relative, ctx.ensure_alive, keep=young)
        except UnsafeProxyPath as error:
            errors.append({"path": relative, "reason": error.reason})
    if scan.foreign:
        ctx.logger.warning(
            "proxy sweep: %d entries under %s are not safelight's and were left alone "
            "(first: %s: %s)",
            len(scan.foreign),
            root,
            *scan.foreign[0],
        )
    return {
        "files_seen": scan.files_seen,
        "deleted": deleted,
        "folders_removed": folders_removed,
        "errors": errors,
        "foreign": len(scan.foreign),
        "left_alone": [{"path": p, "reason": r} for p, r in scan.foreign[:LISTED_AT_MOST]],
    }


PROXY_SWEEP = Kind(
    "proxy_sweep",
    Scope.FORBIDDEN,
    run_proxy_sweep,
    interval=lambda settings: settings.proxy_sweep_interval_seconds,
)


def _young(ctx: HandlerContext, st: Any) -> bool:
    return is_young(st, ctx.clock.now().timestamp())
