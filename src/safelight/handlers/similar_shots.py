"""Two steps of ``burst_detection`` (ADR 0066): hash the thumbnails the crawl did not
(assets from before picture hashes, or whose thumbnail came from elsewhere), then group
a config's similar shots.

The crawl and the proxy remake store the hash of each thumbnail they make, so the first
step finds work only once per old asset: it reads the stored thumbnail, safelight's own
proxy, beneath the proxy root through no link (``proxytree.open_file``), a batch at a
time, each batch written in its own fenced transaction so that a stopped attempt keeps
what it did. An asset without a readable thumbnail is marked tried, its hash NULL, and
not tried again until a new thumbnail is made for it.

The second step is a pure function of the config's live photos and their stored hashes
(``grouping.similar``), and its write converges the database on it, keeping the id of
each group it continues: a rerun over the same library changes nothing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any
from uuid import UUID

from safelight.handlers.contract import HandlerContext, stop_if_cancelled
from safelight.handlers.services import Services
from safelight.library.catalogue import groups, proxies
from safelight.library.grouping.copies import FILE_DATED
from safelight.library.grouping.fingerprints import fingerprint
from safelight.library.grouping.similar import Picture, group_similar, reuse_ids
from safelight.library.proxystore.proxytree import UnsafeProxyPath, open_file

HASH_BATCH = 200
"""Thumbnails hashed, then written in one transaction, at a time."""

THUMBNAIL_MAX_BYTES = 8 * 1024 * 1024
"""A thumbnail is tens of kilobytes; a larger file under its name is not read."""


def read_fingerprint(root: Path, relative: str) -> int | None:
    """The picture hash of a stored thumbnail, read beneath ``root`` through no link;
    None if it is missing, is not a file, or is not a thumbnail. Blocking: a thread."""
    try:
        with open_file(root, relative) as file:
            data = file.read(THUMBNAIL_MAX_BYTES + 1)
    except (OSError, ValueError, UnsafeProxyPath):
        return None
    if len(data) > THUMBNAIL_MAX_BYTES:
        return None
    return fingerprint(data)


async def fill_picture_hashes(ctx: HandlerContext, services: Services, config_id: UUID) -> int:
    """Hash every live asset of the config not hashed yet; how many were hashed."""
    root = services.settings.proxies
    limit = asyncio.Semaphore(services.settings.max_concurrent_files)

    async def read(relative: str | None) -> int | None:
        if relative is None:
            return None
        async with limit:
            return await asyncio.to_thread(read_fingerprint, root, relative)

    hashed = 0
    after = 0
    while True:
        stop_if_cancelled(ctx)
        async with services.pool.connection() as conn:
            batch = await groups.unhashed(conn, config_id, after, HASH_BATCH)
        if not batch:
            return hashed
        found = await asyncio.gather(*(read(relative) for _, relative in batch))
        now = ctx.clock.now()
        async with ctx.fenced() as conn:
            for (asset_id, _), value in zip(batch, found, strict=True):
                await proxies.set_picture_hash(conn, asset_id, value, now)
        hashed += sum(1 for value in found if value is not None)
        after = batch[-1][0]


async def group_similar_shots(
    ctx: HandlerContext, services: Services, config_id: UUID
) -> dict[str, Any]:
    """Find and write the config's similar groups (after its stacks and bursts: what
    they hide or fold takes no part)."""
    async with services.pool.connection() as conn:
        rows = await groups.similar_candidates(conn, config_id)
    pictures = [
        Picture(r["id"], r["file_path"], r["captured_at"], r["picture_hash"])
        for r in rows
        if r["captured_at_source"] not in FILE_DATED
    ]
    found = group_similar(pictures)
    current = {r["id"]: r["similar_group_id"] for r in rows}
    stop_if_cancelled(ctx)
    written = [(stored, g.primary_id, g.asset_ids) for stored, g in reuse_ids(found, current)]
    async with ctx.fenced() as conn:
        await groups.write_similar_groups(conn, config_id, written, ctx.clock.now())
    return {
        "similar_groups": len(found),
        "similar_assets": sum(len(g.asset_ids) for g in found),
    }
