"""Read a photo again in place when its XMP sidecar is not the one its asset was read
with: the same asset, updated; its proxies remade only if the way it is shown changed."""

from __future__ import annotations

import asyncio
import dataclasses

from safelight.handlers.crawl import ingesting, legacy
from safelight.handlers.crawl.attempt import Attempt
from safelight.library.catalogue import assets
from safelight.library.catalogue.assets import KnownAsset
from safelight.library.catalogue.proxies import paths_named
from safelight.library.files.hashing import FileIdentity, HashedFile
from safelight.library.files.originals import Original
from safelight.library.walk.newasset import new_asset
from safelight.library.walk.publishing import publish_image_proxies
from safelight.library.walk.walker import WalkedFile


async def read_again(
    crawl: Attempt, walked: WalkedFile, source: Original, version: FileIdentity
) -> None:
    """Read the photo's metadata again with the sidecar the walk paired it with, and
    update its asset in place: capture time, orientation, size, sidecar; its
    thumbnail, preview and BlurHash remade (under this attempt's names, the old
    files deleted once no row names them) only if the way it is shown changed.
    ``version``: the asset's version of the file, which ``source`` holds open."""
    asset = await crawl.at_path(walked.path)
    if asset is None:
        return
    async with crawl.services.pool.connection() as conn:
        shown = await assets.shown_as(conn, crawl.config_id, asset.id)
    if shown is None:
        return
    read = await ingesting.read_sidecar_of(crawl, walked)
    meta, proxies = await ingesting.decode(crawl, walked, source, read)
    await asyncio.to_thread(ingesting.check_unchanged, crawl, source, version)
    remake = (meta.orientation, meta.width, meta.height) != (
        shown.orientation,
        shown.width,
        shown.height,
    )
    records = None
    if remake:
        crawl.alive.check()
        records = await asyncio.to_thread(
            crawl.publish, publish_image_proxies, proxies, asset.content_hash
        )
    read_row = await asyncio.to_thread(new_asset, walked, as_hashed(asset, version), meta)
    row = dataclasses.replace(read_row, sidecar=read.file)
    async with crawl.decide:
        async with crawl.ctx.fenced() as conn:
            old = await assets.update_read_again(
                conn, crawl.config_id, asset.id, row, records, crawl.ctx.clock.now()
            )
        if old is None:
            return  # no longer live: nothing was written (its new proxies: the sweep's)
    crawl.tally.counts.reread += 1
    if records is not None:
        crawl.tally.counts.proxies += len(records)
        crawl.services.crawl_observer.proxies_made(len(records))
    if old:
        async with crawl.services.pool.connection() as conn:
            still = await paths_named(conn, old)
        await asyncio.to_thread(
            legacy.delete_old_names,
            crawl,
            sorted(set(old) - still),
            "remade, but the old file was not deleted",
        )


def as_hashed(asset: KnownAsset, version: FileIdentity) -> HashedFile:
    """An asset's version of its file, as if hashed again: its own hash (the file is
    unchanged) with the stat of the file open now."""
    return HashedFile(
        asset.content_hash, version.size, version.mtime_ns, version.inode, version.device
    )
