"""Make a video's proxies, and a motion photo's web video, with ffmpeg in a temporary
folder of the proxy root's staging folder, then publish them."""

from __future__ import annotations

import asyncio
import dataclasses
import shutil

from safelight.handlers.crawl.attempt import Attempt
from safelight.library.catalogue.assets import NewAsset
from safelight.library.catalogue.proxies import ProxyRecord
from safelight.library.files.errors import MediaError
from safelight.library.files.hashing import HashedFile
from safelight.library.files.originals import Original
from safelight.library.media.motionphotos import MOTION_VIDEO_NAME, copy_range, find_motion_video
from safelight.library.proxystore.layout import STAGING_FOLDER
from safelight.library.proxystore.publishing import make_video_temp_folder
from safelight.library.render.video import (
    VideoProxySpec,
    make_video_proxies,
    make_web_video,
    probe_video,
)
from safelight.library.walk.newasset import new_asset
from safelight.library.walk.publishing import publish_video_proxies, publish_web_video
from safelight.library.walk.walker import WalkedFile


async def make_video(
    crawl: Attempt, walked: WalkedFile, source: Original, hashed: HashedFile
) -> tuple[NewAsset, list[ProxyRecord]]:
    # ffmpeg writes into a temporary folder of the proxy root's staging folder (the
    # same file system, so publishing is a rename; no config's folder, so nothing of
    # the config is touched before that). Left behind by a crash or a stopped
    # attempt, the sweep removes it once it is an hour old.
    crawl.ctx.ensure_alive()
    staging = crawl.proxy_root / STAGING_FOLDER
    temp = await asyncio.to_thread(make_video_temp_folder, staging)
    try:
        proxies = await make_video_proxies(
            source,
            temp,
            VideoProxySpec(image=crawl.spec),
            crawl.ctx.ensure_alive,
            clock=crawl.ctx.clock,
            about=walked.path,
        )
        records = await asyncio.to_thread(
            crawl.publish, publish_video_proxies, proxies, hashed.content_hash
        )
    finally:
        # Only while the attempt is alive: a stopped attempt touches no file at all,
        # not even its own leftovers (the sweep takes those).
        if not crawl.ctx.cancelled.is_set():
            crawl.ctx.ensure_alive()
            await asyncio.to_thread(shutil.rmtree, temp, True)
    # In a thread: a process's first position reads the places (library.places).
    return await asyncio.to_thread(new_asset, walked, hashed, proxies.metadata), records


async def add_motion_video(
    crawl: Attempt,
    source: Original,
    hashed: HashedFile,
    row: NewAsset,
    records: list[ProxyRecord],
) -> tuple[NewAsset, list[ProxyRecord]]:
    """A motion photo's embedded video (library.media.motionphotos) as its web_video proxy,
    made from a copy of the video's bytes in the staging area (like a video's, see
    ``make_video``). A still that claims a video which is not there, or whose video
    ffmpeg cannot read, stays a still with the reason, recorded and reported."""
    found = await asyncio.to_thread(find_motion_video, source.fd, hashed.size)
    if found is None:
        return row, records
    if not found.found:
        issue = found.issue or "no motion video"
        return dataclasses.replace(row, motion_photo_issue=issue), records
    crawl.ctx.ensure_alive()
    temp = await asyncio.to_thread(make_video_temp_folder, crawl.proxy_root / STAGING_FOLDER)
    try:
        embedded = temp / MOTION_VIDEO_NAME
        await asyncio.to_thread(copy_range, source.fd, found, embedded, crawl.alive.check)
        try:
            about = f"{row.file_path}'s motion video"
            metadata = await probe_video(
                embedded,
                clock=crawl.ctx.clock,
                decode_memory_mib=crawl.spec.decode_memory_mib,
                about=about,
            )
            web = await make_web_video(
                embedded,
                metadata,
                temp,
                VideoProxySpec(image=crawl.spec),
                crawl.ctx.ensure_alive,
                clock=crawl.ctx.clock,
                about=about,
            )
        except MediaError as error:
            issue = f"its motion video could not be made into a web video: {error.reason}"
            return dataclasses.replace(row, motion_photo_issue=issue), records
        record = await asyncio.to_thread(crawl.publish, publish_web_video, web, hashed.content_hash)
    finally:
        if not crawl.ctx.cancelled.is_set():
            crawl.ctx.ensure_alive()
            await asyncio.to_thread(shutil.rmtree, temp, True)
    return dataclasses.replace(row, motion_photo=True), [*records, record]
