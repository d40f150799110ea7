"""The steps of a crawl that need no database: the walk, the in-memory index of a
config's live assets, and turning one original into a new asset with its proxies.

The walk (``Walker``):

- lists the root iteratively with ``os.scandir``, a bounded number of folders per
  step, so the caller can run each step in a thread and check for cancellation and
  report progress in between;
- follows no symlink at all: a link's target inside the root is listed at its real
  path anyway (following it would list it twice), and a target outside the root must
  never be read;
- skips hidden and housekeeping names (``mediatypes.is_ignored_name``) with everything
  below them, and anything that is not a regular file or folder;
- reports, without stopping, a folder it cannot list and a name that is not valid
  UTF-8 (it cannot be stored in a text column). Assets under a folder that could not
  be listed are not soft-deleted: their files may well be there.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from uuid import UUID

from safelight.library.assets import KnownAsset, NewAsset, ProxyRecord
from safelight.library.errors import MediaError
from safelight.library.hashing import HashedFile
from safelight.library.images import ImageProxies, ProxySpec
from safelight.library.limits import DEFAULT_DECODE_MEMORY_MIB
from safelight.library.mediatypes import MediaType, is_ignored_name, media_type
from safelight.library.metadata import ImageMetadata, VideoMetadata, file_time
from safelight.library.paths import (
    STAGING_FOLDER,
    describe_os_error,
    move_into_place,
    proxy_path,
    write_atomically,
)
from safelight.library.video import VideoProxies

WALK_FOLDERS_PER_STEP = 200
"""Folders listed per walk step: each step is one short trip to a thread."""


class RootUnavailable(MediaError):
    """The storage root itself is missing, not a folder, or cannot be listed."""


@dataclass(frozen=True, slots=True)
class WalkedFile:
    path: str
    """Relative to the root, ``/``-separated, valid UTF-8."""
    size: int
    mtime_ns: int
    media_type: MediaType


@dataclass(frozen=True, slots=True)
class FileError:
    path: str
    """Relative to the root; a name that is not UTF-8 is shown with ``\\x..`` escapes."""
    reason: str


def printable(relative: str) -> str:
    """A relative path as text that can be stored and shown, whatever its bytes."""
    return os.fsencode(relative).decode("utf-8", "backslashreplace")


def _is_utf8(name: str) -> bool:
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:  # a surrogate-escaped byte: the name is not UTF-8
        return False
    return True


@dataclass
class Walker:
    """An iterative walk of ``root`` (already resolved), in steps; see the module."""

    root: Path
    files: list[WalkedFile] = field(default_factory=list)
    errors: list[FileError] = field(default_factory=list)
    unreadable_folders: list[str] = field(default_factory=list)
    _stack: list[str] = field(default_factory=lambda: [""])

    @property
    def done(self) -> bool:
        return not self._stack

    def step(self, max_folders: int = WALK_FOLDERS_PER_STEP) -> None:
        """List up to ``max_folders`` folders. Blocking: run it in a thread.

        Raises ``RootUnavailable`` if the root itself cannot be listed.
        """
        for _ in range(max_folders):
            if not self._stack:
                return
            relative = self._stack.pop()
            try:
                with os.scandir(self.root / relative if relative else self.root) as listing:
                    entries = sorted(listing, key=lambda e: e.name, reverse=True)
            except OSError as error:
                if not relative:
                    raise RootUnavailable(
                        f"the storage root {self.root} cannot be listed: {describe_os_error(error)}"
                    ) from error
                self.unreadable_folders.append(relative)
                self.errors.append(
                    FileError(
                        relative + "/", f"folder cannot be listed: {describe_os_error(error)}"
                    )
                )
                continue
            for entry in entries:
                self._visit(relative, entry)

    def _visit(self, relative: str, entry: os.DirEntry[str]) -> None:
        name = entry.name
        if is_ignored_name(name):
            return
        child = f"{relative}/{name}" if relative else name
        try:
            if entry.is_symlink():
                return
            is_dir = entry.is_dir(follow_symlinks=False)
            is_file = not is_dir and entry.is_file(follow_symlinks=False)
        except OSError as error:
            self.errors.append(FileError(printable(child), describe_os_error(error)))
            return
        if not _is_utf8(name):
            if is_dir:
                self.errors.append(
                    FileError(
                        printable(child) + "/",
                        "folder name is not valid UTF-8; skipped with everything in it "
                        "(rename it to include it)",
                    )
                )
            elif is_file and media_type(name) is not None:
                self.errors.append(
                    FileError(
                        printable(child),
                        "file name is not valid UTF-8; skipped (rename it to include it)",
                    )
                )
            return
        if is_dir:
            self._stack.append(child)
            return
        kind = media_type(name) if is_file else None
        if kind is None:
            return
        try:
            st = entry.stat(follow_symlinks=False)
        except FileNotFoundError:
            return  # gone since the listing: as if never there
        except OSError as error:
            self.errors.append(FileError(child, describe_os_error(error)))
            return
        self.files.append(WalkedFile(child, st.st_size, st.st_mtime_ns, kind))

    def under_unreadable_folder(self, path: str) -> bool:
        return any(path.startswith(folder + "/") for folder in self.unreadable_folders)


class CrawlIndex:
    """A config's live assets by path and by content, kept in step with the crawl's writes.

    Loaded once per crawl: one item per storage config runs at a time (ADR 0008), so only
    this crawl changes these assets while it runs, and updating the index with each of
    its own writes keeps it true.
    """

    def __init__(self, assets: Iterable[KnownAsset]) -> None:
        self._by_path: dict[str, KnownAsset] = {}
        self._by_hash: dict[str, KnownAsset] = {}
        for asset in assets:
            self.add(asset)

    def __len__(self) -> int:
        return len(self._by_path)

    def at_path(self, path: str) -> KnownAsset | None:
        return self._by_path.get(path)

    def with_hash(self, content_hash: str) -> KnownAsset | None:
        return self._by_hash.get(content_hash)

    def add(self, asset: KnownAsset) -> None:
        self._by_path[asset.file_path] = asset
        self._by_hash[asset.content_hash] = asset

    def remove(self, asset: KnownAsset) -> None:
        self._by_path.pop(asset.file_path, None)
        if self._by_hash.get(asset.content_hash) == asset:
            del self._by_hash[asset.content_hash]

    def relocate(self, asset: KnownAsset, path: str, size: int, mtime_ns: int) -> KnownAsset:
        self.remove(asset)
        moved = replace(asset, file_path=path, size_bytes=size, modified_ns=mtime_ns)
        self.add(moved)
        return moved

    def live(self) -> list[KnownAsset]:
        return list(self._by_path.values())


# --- a new asset ---------------------------------------------------------------------


def capture_times(captured_at: datetime) -> tuple[datetime, datetime]:
    """``(instant, wall clock)``: a naive time is the camera's wall clock, zone unknown,
    and is stored as that wall clock read as UTC (the schema's rule)."""
    if captured_at.tzinfo is None:
        return captured_at.replace(tzinfo=UTC), captured_at
    return captured_at, captured_at.replace(tzinfo=None)


def new_asset(
    walked: WalkedFile, hashed: HashedFile, meta: ImageMetadata | VideoMetadata
) -> NewAsset:
    """The row of a new asset from its hashed version's stat and its metadata."""
    instant, local = capture_times(meta.captured_at)
    common = {
        "file_path": walked.path,
        "file_name": PurePosixPath(walked.path).name,
        "content_hash": hashed.content_hash,
        "size_bytes": hashed.size,
        "modified_at": file_time(hashed.mtime_ns),
        "modified_ns": hashed.mtime_ns,
        "captured_at": instant,
        "captured_local": local,
        "captured_at_source": meta.captured_at_source,
        "camera_make": meta.make,
        "camera_model": meta.model,
        "width": meta.width,
        "height": meta.height,
        "content_identifier": meta.content_identifier,
    }
    if isinstance(meta, ImageMetadata):
        return NewAsset(
            media_type="image",
            orientation=meta.orientation,
            maker_burst_id=meta.burst_id,
            sequence_number=meta.sequence_number,
            **common,  # type: ignore[arg-type]
        )
    return NewAsset(
        media_type="video",
        duration_seconds=meta.duration_seconds,
        **common,  # type: ignore[arg-type]
    )


def proxy_spec(
    thumbnail_width: int,
    thumbnail_quality: int,
    preview_width: int,
    preview_quality: int,
    decode_memory_mib: int = DEFAULT_DECODE_MEMORY_MIB,
) -> ProxySpec:
    return ProxySpec(
        thumbnail_width=thumbnail_width,
        thumbnail_quality=thumbnail_quality,
        preview_width=preview_width,
        preview_quality=preview_quality,
        decode_memory_mib=decode_memory_mib,
    )


def publish_image_proxies(
    proxies: ImageProxies,
    proxy_root: Path,
    config_id: UUID,
    content_hash: str,
    ensure_alive: Callable[[], None],
) -> list[ProxyRecord]:
    """Write the thumbnail and preview (atomically, ``ensure_alive`` right before each
    rename) and return the rows that name them, with the BlurHash. Blocking: a thread."""
    records: list[ProxyRecord] = []
    for proxy_type, encoded in (
        ("thumbnail", proxies.thumbnail),
        ("full_preview", proxies.preview),
    ):
        target = proxy_path(proxy_root, config_id, content_hash, proxy_type, "jpg")
        write_atomically(target, encoded.data, ensure_alive, proxy_root / STAGING_FOLDER)
        records.append(
            ProxyRecord(
                proxy_type=proxy_type,
                path=target.relative_to(proxy_root).as_posix(),
                size_bytes=len(encoded.data),
                width=encoded.width,
                height=encoded.height,
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
) -> list[ProxyRecord]:
    """Publish a video's poster proxies and its web video (made in a temporary folder by
    ``video.make_video_proxies``), each atomically, ``ensure_alive`` right before each
    rename; return the rows that name them. Blocking: run it in a thread."""
    records = publish_image_proxies(
        proxies.poster, proxy_root, config_id, content_hash, ensure_alive
    )
    target = proxy_path(proxy_root, config_id, content_hash, "web_video", "mp4")
    move_into_place(proxies.web_video, target, ensure_alive)
    records.append(
        ProxyRecord(
            proxy_type="web_video",
            path=target.relative_to(proxy_root).as_posix(),
            size_bytes=target.stat().st_size,
            width=proxies.web_video_width,
            height=proxies.web_video_height,
        )
    )
    return records
