"""``proxy_sweep`` (unscoped): delete orphan proxy files, and empty folders, past an hour.

Safe beside a crawl of any config without the per-config rule (ADR 0008): a crawl's
fresh file is younger than the floor until its row is committed, and every file is
re-checked (no row names it, still old) right before its delete.
"""

from __future__ import annotations

import asyncio
import errno
import os
from pathlib import Path
from typing import Any

import psycopg

from safelight.handlers.contract import HandlerContext, payload_keys, stop_if_cancelled
from safelight.handlers.services import Services
from safelight.library.assets import QUERIES
from safelight.library.sweep import is_old, scan_proxy_root
from safelight.work.journal import side_effect

_BATCH = 500


async def still_orphan(
    conn: psycopg.AsyncConnection[Any], root: Path, relative: str, now_timestamp: float
) -> bool:
    """The re-check right before a delete: still no row names the file, and it is still
    older than the floor. A crawl renames its proxy into place (fresh ctime) before it
    inserts the row, so the age is checked last: a rename that beat this check is seen."""
    cur = await conn.execute(QUERIES["proxy_paths_named"], {"paths": [relative]})
    if await cur.fetchone() is not None:
        return False
    return is_old(root / relative, now_timestamp)


async def run_proxy_sweep(ctx: HandlerContext, services: Services) -> dict[str, Any]:
    payload_keys(ctx, frozenset())
    root = services.settings.proxies
    if not root.is_dir():
        return {"files_seen": 0, "deleted": 0, "folders_removed": 0, "errors": []}
    scan = await asyncio.to_thread(scan_proxy_root, root, ctx.clock.now().timestamp())
    stop_if_cancelled(ctx)
    orphans: list[str] = []
    async with services.pool.connection() as conn:
        for start in range(0, len(scan.old_files), _BATCH):
            batch = scan.old_files[start : start + _BATCH]
            cur = await conn.execute(QUERIES["proxy_paths_named"], {"paths": batch})
            named = {row[0] for row in await cur.fetchall()}
            orphans.extend(p for p in batch if p not in named)
        deleted = 0
        for relative in orphans:
            stop_if_cancelled(ctx)
            if not await still_orphan(conn, root, relative, ctx.clock.now().timestamp()):
                continue
            try:
                with side_effect("delete", root / relative, ctx.ensure_alive):
                    (root / relative).unlink()
            except FileNotFoundError:
                continue
            deleted += 1
    folders_removed = 0
    for relative in scan.folders:
        stop_if_cancelled(ctx)
        folder = root / relative
        # A folder's mtime moves whenever an entry is added or removed, so an old empty
        # folder is not one a crawl has just made to write into. (A folder this very
        # sweep emptied is young again by that rule, and goes at the next sweep.)
        if not is_old(folder, ctx.clock.now().timestamp()):
            continue
        try:
            with side_effect("rmdir", folder, ctx.ensure_alive):
                os.rmdir(folder)
        except OSError as error:
            if error.errno in (errno.ENOTEMPTY, errno.EEXIST, errno.ENOENT):
                continue
            raise
        folders_removed += 1
    return {
        "files_seen": scan.files_seen,
        "deleted": deleted,
        "folders_removed": folders_removed,
        "errors": [{"path": p, "reason": r} for p, r in scan.unreadable],
    }
