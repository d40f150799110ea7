"""Ingest new content: a photo's metadata and proxies (in a decode process when the
Worker has them), published under this attempt's names, then the asset and its proxy
rows in one fenced transaction; the original checked unchanged before that."""

from __future__ import annotations

import asyncio
import dataclasses
import os
from pathlib import PurePosixPath

from safelight.handlers.crawl import videos
from safelight.handlers.crawl.attempt import Attempt
from safelight.library.catalogue import assets
from safelight.library.catalogue.assets import NewAsset
from safelight.library.catalogue.proxies import ProxyRecord
from safelight.library.files import sniffing
from safelight.library.files.errors import FileChangedWhileHashing, MediaError, UnsupportedMedia
from safelight.library.files.hashing import FileIdentity, HashedFile
from safelight.library.files.mediatypes import extension_of
from safelight.library.files.originals import Original
from safelight.library.media.metadata import ImageMetadata
from safelight.library.media.sidecars import NONE_READ, ReadSidecar, read_sidecar
from safelight.library.render.decoding import decode_image
from safelight.library.render.images import ImageProxies
from safelight.library.walk.newasset import new_asset
from safelight.library.walk.publishing import publish_image_proxies
from safelight.library.walk.walker import FileError, WalkedFile


async def ingest(crawl: Attempt, walked: WalkedFile, source: Original, hashed: HashedFile) -> None:
    h = hashed.content_hash
    try:
        try:
            row, proxies = await make(crawl, walked, source, hashed)
        except MediaError:
            # The new content cannot be ingested (yet); the old content is gone from
            # this path all the same, so its asset must not stay live with it.
            async with crawl.decide:
                known = await crawl.at_path(walked.path)
                if known is not None and known.content_hash != h:
                    await crawl.soft_delete(known)
            raise
        async with crawl.decide:
            # Re-read under the lock: a move may have taken the old asset away.
            known = await crawl.at_path(walked.path)
            deleted = 0
            async with crawl.ctx.fenced() as conn:
                if known is not None:
                    deleted = await crawl.soft_delete_on(conn, known)
                await assets.insert_asset(
                    conn, crawl.config_id, row, proxies, crawl.ctx.clock.now()
                )
            crawl.tally.counts.deleted += deleted
        crawl.tally.counts.ingested += 1
        if row.motion_photo_issue is not None:
            # Reported once its still is in: a file that then failed is an error.
            crawl.tally.motion_photo_issues.append(FileError(walked.path, row.motion_photo_issue))
        crawl.tally.noted(walked.path, row)
        crawl.tally.counts.proxies += len(proxies)
        crawl.services.crawl_observer.proxies_made(len(proxies))
    finally:
        crawl.inflight.pop(h, None)


async def make(
    crawl: Attempt, walked: WalkedFile, source: Original, hashed: HashedFile
) -> tuple[NewAsset, list[ProxyRecord]]:
    """Metadata and proxies of one new original, published under the proxy root."""
    if walked.media_type == "image":
        row, records = await make_image(crawl, walked, source, hashed)
        row, records = await videos.add_motion_video(crawl, source, hashed, row, records)
    else:
        await asyncio.to_thread(check_not_a_photo, walked, source)
        row, records = await videos.make_video(crawl, walked, source, hashed)
    await asyncio.to_thread(check_unchanged, crawl, source, hashed.identity)
    return row, records


def check_unchanged(crawl: Attempt, source: Original, version: FileIdentity) -> None:
    """The original was read again after it was hashed (from the same open file):
    if that file changed since, the proxies may show another version than the hash
    names; if its name now leads to another file (replaced by a rename, or a link
    swapped in), the asset would name a file it does not describe."""
    if FileIdentity.of(os.fstat(source.fd)) != version:
        raise FileChangedWhileHashing("file changed while its proxies were made")
    try:
        now = FileIdentity.of(crawl.storage_root().stat(source.relative))
    except MediaError as error:
        raise FileChangedWhileHashing(
            f"file was replaced while its proxies were made ({error.reason})"
        ) from error
    if now != version:
        raise FileChangedWhileHashing("file was replaced while its proxies were made")


def check_not_a_photo(walked: WalkedFile, source: Original) -> None:
    """Refuse a file with a video's name whose content is a photo (ADR 0052): it is
    listed as a video, and ffmpeg is not the reader of a JPEG. Content the sniff does
    not know is left to ffprobe, which knows more containers and says why it fails."""
    content = sniffing.sniff_file(source.fd)
    if content is not None and content.kind != "video":
        extension = extension_of(PurePosixPath(walked.path).name) or "without an extension"
        raise UnsupportedMedia(f"holds {content.a}, named {extension}: not read as a video")


async def make_image(
    crawl: Attempt, walked: WalkedFile, source: Original, hashed: HashedFile
) -> tuple[NewAsset, list[ProxyRecord]]:
    read = await read_sidecar_of(crawl, walked)
    meta, proxies = await decode(crawl, walked, source, read)
    row, records = await asyncio.to_thread(publish_image, crawl, walked, hashed, meta, proxies)
    return dataclasses.replace(row, sidecar=read.file), records


async def decode(
    crawl: Attempt, walked: WalkedFile, source: Original, read: ReadSidecar
) -> tuple[ImageMetadata, ImageProxies]:
    """A photo's metadata and proxies, in a decode process if the Worker has them."""
    name = PurePosixPath(walked.path).name  # its content decides; its name is noted
    decoder = crawl.services.decoder
    if decoder is None:
        return await asyncio.to_thread(decode_image, source.ref(), crawl.spec, name, read.facts)
    # Cancelling this task (the attempt stopping) cancels the decode if it has not
    # started; one already running finishes in its process, unawaited (and if this
    # descriptor is closed and its number reused meanwhile, the reference's inode
    # check refuses the other file).
    return await decoder.decode(source.ref(), crawl.spec, name, read.facts, about=walked.path)


async def read_sidecar_of(crawl: Attempt, walked: WalkedFile) -> ReadSidecar:
    """What the photo's XMP sidecar says (``sidecars.read_sidecar``: beneath the root,
    no link followed, bounded). One that cannot be read now (a link swapped in since
    the walk, unreadable) is reported and the photo read as if it had none; the asset
    then stores none, so the next crawl tries again."""
    if walked.sidecar is None:
        return NONE_READ
    read = await asyncio.to_thread(read_sidecar, crawl.storage_root(), walked.sidecar)
    if read.refused is not None:
        crawl.error(walked.sidecar.path, f"XMP sidecar not read: {read.refused}")
    return read


def publish_image(
    crawl: Attempt,
    walked: WalkedFile,
    hashed: HashedFile,
    meta: ImageMetadata,
    proxies: ImageProxies,
) -> tuple[NewAsset, list[ProxyRecord]]:
    """Blocking (writes): runs in a thread, which the attempt's ensure_alive guards."""
    crawl.alive.check()
    records = crawl.publish(publish_image_proxies, proxies, hashed.content_hash)
    return new_asset(walked, hashed, meta), records
