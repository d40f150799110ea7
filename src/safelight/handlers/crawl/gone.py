"""Remove what is gone: soft-delete the live assets the walk did not see (unless under a
folder that could not be listed), record and forget file errors and duplicates. A
failed file this crawl left unread (``walk.failures``) keeps its record as it was."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from safelight.handlers.crawl.attempt import WRITE_BATCH, Attempt
from safelight.library.catalogue import assets
from safelight.library.walk import failures


async def remove_gone(crawl: Attempt, error_paths: set[str]) -> None:
    """Mark what was seen, soft-delete what is gone, record and forget errors."""
    now = crawl.ctx.clock.now()
    unseen = [
        asset_id
        for asset_id, path in crawl.unseen.items()
        if asset_id not in crawl.kept and not crawl.under_unreadable_folder(path)
    ]
    failing = {e.path: e.reason for e in crawl.tally.errors}
    unread = {e.path: e.reason for e in crawl.tally.not_retried}
    resolved = [
        p
        for p in error_paths
        if p not in failing and p not in unread and not crawl.under_unreadable_folder(p)
    ]
    deleted = 0
    for start in range(0, len(unseen), WRITE_BATCH):
        async with crawl.ctx.fenced() as conn:
            deleted += await assets.soft_delete(
                conn, crawl.config_id, unseen[start : start + WRITE_BATCH], now
            )
    crawl.tally.counts.deleted += deleted
    async with crawl.ctx.fenced() as conn:
        for path, reason in failing.items():
            before = crawl.failed.get(path)
            again = failures.retry_after(
                1 if before is None else before.failures + 1,
                now,
                crawl.settings.failed_retry_first,
                crawl.settings.failed_retry_longest,
            )
            version = crawl.tally.failed_as.get(path)
            await assets.record_error(conn, crawl.config_id, path, reason, now, version, again)
        await assets.clear_errors(conn, crawl.config_id, resolved)
    await record_duplicates(crawl, {**unread, **failing}, now)


async def record_duplicates(crawl: Attempt, failing: Mapping[str, str], now: datetime) -> None:
    """Name each duplicate this crawl found with the live asset it duplicates, and
    forget the recorded ones it did not find again (the file went, or is an asset
    now); a path under a folder that could not be listed, or that failed this time,
    keeps what was recorded of it. A duplicate of a file whose ingest failed names
    no asset, so it is not recorded (the result still lists it)."""
    found: dict[str, int] = {}
    duplicates = crawl.tally.duplicates
    async with crawl.services.pool.connection() as conn:
        for start in range(0, len(duplicates), WRITE_BATCH):
            some = duplicates[start : start + WRITE_BATCH]
            owners = await assets.live_at_paths(conn, crawl.config_id, {d.same_as for d in some})
            ids = {a.file_path: a.id for a in owners}
            found.update((d.path, ids[d.same_as]) for d in some if d.same_as in ids)
        recorded = await assets.duplicate_paths(conn, crawl.config_id)
    stale = [
        p
        for p in recorded
        if p not in found and p not in failing and not crawl.under_unreadable_folder(p)
    ]
    paths = sorted(found)
    for start in range(0, len(paths), WRITE_BATCH):
        batch = {p: found[p] for p in paths[start : start + WRITE_BATCH]}
        async with crawl.ctx.fenced() as conn:
            await assets.record_duplicates(conn, crawl.config_id, batch, now)
    if stale:
        async with crawl.ctx.fenced() as conn:
            await assets.forget_duplicates(conn, crawl.config_id, stale)
