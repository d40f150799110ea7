"""A new original's proxies published under the proxy root (each atomically, under this
attempt's names) and the rows that name them."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from uuid import UUID

from safelight.library.catalogue.proxies import ProxyRecord
from safelight.library.grouping.fingerprints import fingerprint
from safelight.library.proxystore.layout import STAGING_FOLDER, AttemptTag, proxy_path
from safelight.library.proxystore.publishing import move_into_place, write_atomically
from safelight.library.render.images import ImageProxies
from safelight.library.render.video import VideoProxies, WebVideo


def publish_image_proxies(
    proxies: ImageProxies,
    proxy_root: Path,
    config_id: UUID,
    content_hash: str,
    ensure_alive: Callable[[], None],
    *,
    written_by: AttemptTag,
) -> list[ProxyRecord]:
    """Write the thumbnail and preview (atomically, ``ensure_alive`` right before each
    rename) under names that carry ``written_by``, the attempt writing them, and return
    the rows that name them, with the BlurHash; the thumbnail's row carries its picture
    hash, taken from the bytes written (so it is what a read of the file would give).
    Blocking: a thread.

    No other attempt writes those names, so if this one has lost its item and its rename
    lands all the same (frozen between its check and the syscall), the file is an orphan
    that no row names: the newer attempt's files, and the rows naming them, are others."""
    records: list[ProxyRecord] = []
    for proxy_type, encoded in (
        ("thumbnail", proxies.thumbnail),
        ("full_preview", proxies.preview),
    ):
        target = proxy_path(proxy_root, config_id, content_hash, proxy_type, "jpg", written_by)
        write_atomically(target, encoded.data, ensure_alive, proxy_root / STAGING_FOLDER)
        records.append(
            ProxyRecord(
                proxy_type=proxy_type,
                path=target.relative_to(proxy_root).as_posix(),
                size_bytes=len(encoded.data),
                width=encoded.width,
                height=encoded.height,
                picture_hash=fingerprint(encoded.data) if proxy_type == "thumbnail" else None,
            )
        )
    records.append(ProxyRecord(proxy_type="blurhash", path=None, value=proxies.blurhash))
    return records


def publish_video_proxies(
    proxies: VideoProxies,
    proxy_root: Path,
    config_id: UUID,
    content_hash: str,
    ensure_alive: Callable[[], None],
    *,
    written_by: AttemptTag,
) -> list[ProxyRecord]:
    """Publish a video's poster proxies and its web video (made in a temporary folder by
    ``video.make_video_proxies``), each atomically, ``ensure_alive`` right before each
    rename, under names that carry ``written_by``; return the rows that name them.
    Blocking: run it in a thread."""
    records = publish_image_proxies(
        proxies.poster, proxy_root, config_id, content_hash, ensure_alive, written_by=written_by
    )
    web = WebVideo(proxies.web_video, proxies.web_video_width, proxies.web_video_height)
    records.append(
        publish_web_video(
            web, proxy_root, config_id, content_hash, ensure_alive, written_by=written_by
        )
    )
    return records


def publish_web_video(
    web: WebVideo,
    proxy_root: Path,
    config_id: UUID,
    content_hash: str,
    ensure_alive: Callable[[], None],
    *,
    written_by: AttemptTag,
) -> ProxyRecord:
    """Publish a web video (a video's, or a motion photo's) made in a temporary folder,
    atomically, under a name that carries ``written_by``; its row. Blocking: a thread."""
    target = proxy_path(proxy_root, config_id, content_hash, "web_video", "mp4", written_by)
    move_into_place(web.path, target, ensure_alive)
    return ProxyRecord(
        proxy_type="web_video",
        path=target.relative_to(proxy_root).as_posix(),
        size_bytes=target.stat().st_size,
        width=web.width,
        height=web.height,
    )
