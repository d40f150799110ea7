"""Make one asset's proxy sets again from its original (read only: opened below the
storage root through no link) and publish them beside the old ones, under this
attempt's names (ADR 0016): the rows still name the old files until ``run.switch``."""

from __future__ import annotations

import asyncio
import os
import shutil
from pathlib import Path, PurePosixPath

from safelight.handlers.crawl.attempt import Attempt
from safelight.handlers.crawl.ingesting import check_unchanged
from safelight.library.catalogue.proxies import AssetProxies, ProxyRecord
from safelight.library.files.errors import FileChangedWhileHashing, MediaError
from safelight.library.files.hashing import FileIdentity
from safelight.library.files.originals import Original
from safelight.library.media.motionphotos import MOTION_VIDEO_NAME, copy_range, find_motion_video
from safelight.library.media.sidecars import NONE_READ, SidecarFile, read_sidecar
from safelight.library.proxystore.layout import STAGING_FOLDER
from safelight.library.proxystore.publishing import make_video_temp_folder
from safelight.library.proxystore.remaking import MOTION_SET, VIDEO_SET
from safelight.library.render.decoding import decode_image
from safelight.library.render.video import (
    VideoProxySpec,
    make_video_proxies,
    make_web_video,
    probe_video,
)
from safelight.library.walk.publishing import (
    publish_image_proxies,
    publish_video_proxies,
    publish_web_video,
)


async def make_proxies(
    remake: Attempt, asset: AssetProxies, sets: list[tuple[str, ...]]
) -> list[ProxyRecord]:
    """The rows of the asset's ``sets`` made again, their files published. Raises
    ``MediaError`` when the original cannot be read, or is not the version the asset
    was crawled as (its proxies would show another picture than its hash names)."""
    source = await asyncio.to_thread(remake.storage_root().open, asset.file_path)
    try:
        version = FileIdentity.of(os.fstat(source.fd))
        if (version.size, version.mtime_ns) != (asset.size_bytes, asset.modified_ns):
            raise FileChangedWhileHashing(
                "the original changed since it was crawled: the next crawl reads it"
            )
        records: list[ProxyRecord] = []
        for proxy_set in sets:
            if proxy_set == VIDEO_SET:
                records += await _video(remake, asset, source)
            elif proxy_set == MOTION_SET:
                records.append(await _motion_video(remake, asset, source))
            else:
                records += await _image(remake, asset, source)
        await asyncio.to_thread(check_unchanged, remake, source, version)
        return records
    finally:
        source.close()


async def _image(remake: Attempt, asset: AssetProxies, source: Original) -> list[ProxyRecord]:
    """A photo's thumbnail, preview and BlurHash, decoded as the crawl decodes it (with
    the XMP sidecar it was read with: its orientation is the asset's)."""
    read = NONE_READ
    if asset.sidecar is not None:
        read = await asyncio.to_thread(
            read_sidecar, remake.storage_root(), SidecarFile(*asset.sidecar)
        )
        if read.refused is not None:
            raise MediaError(f"its XMP sidecar could not be read: {read.refused}")
    name = PurePosixPath(asset.file_path).name
    decoder = remake.services.decoder
    if decoder is None:
        _, proxies = await asyncio.to_thread(
            decode_image, source.ref(), remake.spec, name, read.facts
        )
    else:
        _, proxies = await decoder.decode(
            source.ref(), remake.spec, name, read.facts, about=asset.file_path
        )
    remake.alive.check()
    return await asyncio.to_thread(
        remake.publish, publish_image_proxies, proxies, asset.content_hash
    )


async def _video(remake: Attempt, asset: AssetProxies, source: Original) -> list[ProxyRecord]:
    """A video's poster proxies and web video, made by ffmpeg in a temporary folder of
    the staging folder (as the crawl's, ``crawl.videos``)."""
    remake.ctx.ensure_alive()
    temp = await asyncio.to_thread(make_video_temp_folder, remake.proxy_root / STAGING_FOLDER)
    try:
        proxies = await make_video_proxies(
            source,
            temp,
            VideoProxySpec(image=remake.spec),
            remake.ctx.ensure_alive,
            clock=remake.ctx.clock,
            about=asset.file_path,
        )
        return await asyncio.to_thread(
            remake.publish, publish_video_proxies, proxies, asset.content_hash
        )
    finally:
        await _clean(remake, temp)


async def _motion_video(remake: Attempt, asset: AssetProxies, source: Original) -> ProxyRecord:
    """A motion photo's web video, from a copy of its embedded video's bytes."""
    found = await asyncio.to_thread(find_motion_video, source.fd, asset.size_bytes)
    if found is None or not found.found:
        raise MediaError("its motion video is no longer found in the file")
    remake.ctx.ensure_alive()
    temp = await asyncio.to_thread(make_video_temp_folder, remake.proxy_root / STAGING_FOLDER)
    try:
        embedded = temp / MOTION_VIDEO_NAME
        await asyncio.to_thread(copy_range, source.fd, found, embedded, remake.alive.check)
        about = f"{asset.file_path}'s motion video"
        spec = VideoProxySpec(image=remake.spec)
        metadata = await probe_video(
            embedded, clock=remake.ctx.clock, decode_memory_mib=remake.spec.decode_memory_mib
        )
        web = await make_web_video(
            embedded,
            metadata,
            temp,
            spec,
            remake.ctx.ensure_alive,
            clock=remake.ctx.clock,
            about=about,
        )
        return await asyncio.to_thread(remake.publish, publish_web_video, web, asset.content_hash)
    finally:
        await _clean(remake, temp)


async def _clean(remake: Attempt, temp: Path) -> None:
    # Only while the attempt is alive: a stopped attempt touches no file at all, not
    # even its own leftovers (the sweep takes those).
    if not remake.ctx.cancelled.is_set():
        remake.ctx.ensure_alive()
        await asyncio.to_thread(shutil.rmtree, temp, True)
