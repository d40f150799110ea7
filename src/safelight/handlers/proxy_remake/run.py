"""``proxy_remake`` (scoped): make a config's proxies again, the missing ones or all
(ADR 0059), after a change of proxy size or quality or a damaged proxy root.

A page of the config's live assets at a time (in path order, each page its own read),
each asset's proxy sets chosen (``proxystore.remaking``), made from the original and
published beside the old files under this attempt's names (``making``); then, in one
fenced transaction, the asset's rows are switched to the new files; only once that has
committed are the old files deleted (when no row names them). So a proxy is never
missing: until the switch, the old row and file are served; after it, the new ones.

Like every scoped kind it runs alone on its config (ADR 0008): no crawl, purge or other
remake of the config runs meanwhile, so what it read of the asset stays true. An attempt
that lost its item stops (``ensure_alive``, ``fenced``) and writes nothing after; files
it published but did not switch to are orphans, for the sweep. A retried attempt goes
on: what it remade is no longer missing, nor made before the remake was asked for.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal
from uuid import UUID

from safelight.handlers.contract import HandlerContext, stop_if_cancelled
from safelight.handlers.crawl import legacy, opening
from safelight.handlers.crawl.attempt import Attempt
from safelight.handlers.crawl.config import CrawlSettings
from safelight.handlers.kind import Kind
from safelight.handlers.payloads import Payload
from safelight.handlers.proxy_remake import making
from safelight.handlers.services import Services
from safelight.library.catalogue import assets, proxies
from safelight.library.catalogue.proxies import AssetProxies, ProxyRecord
from safelight.library.files.errors import MediaError, plain_reason
from safelight.library.proxystore.proxytree import UnsafeProxyPath, delete_file, inspect
from safelight.library.proxystore.remaking import Mode, missing_of, sets_to_remake
from safelight.work.kinds import Scope

PAGE = 200
"""Assets read per page: a page is one short read, and the progress is saved after it."""
LISTED = 100
"""At most this many failures are listed in the result (all are counted)."""


class RemakePayload(Payload):
    mode: Literal["missing", "all"] = "missing"
    """``missing``: only proxies whose row or file is missing, empty or unreadable;
    ``all``: every proxy made before the remake was asked for."""


@dataclass
class Tally:
    checked: int = 0
    """Assets looked at."""
    missing: int = 0
    """Proxies found missing (no row, or no good file)."""
    remade: int = 0
    """Assets whose proxies were remade and switched to."""
    proxies: int = 0
    """Proxy rows made (files and BlurHashes)."""
    old_deleted: int = 0
    failed: list[dict[str, str]] = field(default_factory=list)
    """Assets whose proxies could not be remade (their old ones kept), with why."""
    failures: int = 0

    def counts(self, total: int) -> dict[str, int]:
        return {
            "total": total,
            "checked": self.checked,
            "missing": self.missing,
            "remade": self.remade,
            "proxies": self.proxies,
            "failed": self.failures,
        }


async def run_proxy_remake(
    ctx: HandlerContext, services: Services, payload: RemakePayload
) -> dict[str, Any]:
    mode = Mode(payload.mode)
    config_id, root_path, _ = await opening.resolve_config(ctx, services)
    remake = Attempt(ctx, services, CrawlSettings.of(services.settings), config_id, root_path)
    tally = Tally()
    total = 0
    try:
        await opening.open_walk(remake)  # the storage root, held open (nothing is walked)
        async with services.pool.connection() as conn:
            total = sum((await assets.counts_by_type(conn, config_id)).values())
        after: str | None = ""
        while after is not None:
            stop_if_cancelled(ctx)
            async with services.pool.connection() as conn:
                page = await proxies.of_live_assets_after_path(conn, config_id, after, PAGE)
            after = page[-1].file_path if len(page) == PAGE else None
            for asset in page:
                stop_if_cancelled(ctx)
                await remake_asset(remake, asset, mode, tally)
                tally.checked += 1
                ctx.progress(**tally.counts(total))  # cheap: the executor saves the last
    finally:
        ctx.progress(**tally.counts(total))
        if remake.storage is not None:
            remake.storage.close()
    return {
        "mode": mode.value,
        **tally.counts(total),
        "old_deleted": tally.old_deleted,
        "failures": tally.failed,
        "old_not_deleted": [
            {"path": e.path, "reason": e.reason} for e in remake.tally.proxy_errors[:LISTED]
        ],
    }


async def remake_asset(remake: Attempt, asset: AssetProxies, mode: Mode, tally: Tally) -> None:
    state = partial(inspect, remake.proxy_root)
    missing = await asyncio.to_thread(missing_of, asset, state)
    tally.missing += len(missing)
    sets = sets_to_remake(asset, mode, missing, remake.ctx.item.requested_at)
    if not sets:
        return
    try:
        records = await making.make_proxies(remake, asset, sets)
    except MediaError as error:
        tally.failures += 1
        if len(tally.failed) < LISTED:
            tally.failed.append({"path": asset.file_path, "reason": plain_reason(error.reason)})
        return
    if await switch(remake, asset, records, tally):
        tally.remade += 1
        tally.proxies += len(records)


async def switch(
    remake: Attempt, asset: AssetProxies, records: list[ProxyRecord], tally: Tally
) -> bool:
    """Point the asset's rows at its new files (fenced: an attempt that lost its item
    writes nothing), then delete the old files no row names. False if the asset is no
    longer live (its new files are orphans, for the sweep)."""
    ctx = remake.ctx
    async with ctx.fenced() as conn:
        if await assets.shown_as(conn, remake.config_id, asset.asset_id) is None:
            return False
        old = await proxies.replace_of_asset(conn, asset.asset_id, records, ctx.clock.now())
    new = {r.path for r in records}
    old_files = sorted(set(old) - new)
    if old_files:
        async with remake.services.pool.connection() as conn:
            still = await proxies.paths_named(conn, old_files)
        gone = [p for p in old_files if p not in still]
        tally.old_deleted += await asyncio.to_thread(delete_old, remake, gone)
    return True


def delete_old(remake: Attempt, relatives: list[str]) -> int:
    """Blocking: a thread. How many old files were deleted (a missing one is not); one
    that could not be is listed, and left to the sweep as an orphan."""
    deleted = 0
    for relative in relatives:
        try:
            deleted += delete_file(remake.proxy_root, relative, remake.alive.ensure_alive)
        except (OSError, UnsafeProxyPath) as error:
            legacy.proxy_error(remake, relative, "remade, but the old file was not deleted", error)
    return deleted


def dedup_key(config_id: UUID, mode: Mode) -> str:
    """At most one remake of each mode queued per config."""
    return f"{PROXY_REMAKE.dedup_key(config_id)}:{mode.value}"


PROXY_REMAKE = Kind(
    "proxy_remake",
    Scope.REQUIRED,
    run_proxy_remake,
    payload=RemakePayload,
    heavy=True,  # it reads the originals and makes the proxies (ADR 0060)
)
