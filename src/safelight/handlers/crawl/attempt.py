"""One attempt's crawl: what its steps share (the config, the services, the tally, the
decision lock, what the walk did not list), and the small acts every step takes
(count, report, record an error or a duplicate, move or soft-delete one asset)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar
from uuid import UUID

import psycopg

from safelight.handlers.contract import HandlerContext, ThreadAlive
from safelight.handlers.crawl.config import CrawlSettings
from safelight.handlers.crawl.result import CrawlCounts, Duplicate
from safelight.handlers.services import Services
from safelight.library.catalogue import assets
from safelight.library.catalogue.assets import FailedFile, FileVersion, KnownAsset, NewAsset
from safelight.library.files.errors import plain_reason
from safelight.library.files.hashing import HashedFile
from safelight.library.files.originals import StorageRoot
from safelight.library.media.metadata import file_time
from safelight.library.proxystore.layout import AttemptTag
from safelight.library.render.images import ProxySpec
from safelight.library.walk import decisions
from safelight.library.walk.walker import FileError, WalkedFile, Walker

PROGRESS_EVERY_SECONDS = 0.1
PROGRESS_EVERY_FILES = 50
WRITE_BATCH = 1000
"""Rows written per fenced transaction by the steps that write many."""
PENDING_FILES = 1000
"""At most this many files wait for the crawl's workers; then the walk waits."""

T = TypeVar("T")

# A file for the crawl's workers: what the walk found, and whether only its sidecar
# changed (``decisions.SidecarChanged``) or it is to be hashed (None).
Pending = tuple[WalkedFile, "decisions.SidecarChanged | None"]


@dataclass
class Tally:
    """What the crawl did so far: its counters and what it lists in its result."""

    counts: CrawlCounts = field(default_factory=CrawlCounts)
    errors: list[FileError] = field(default_factory=list)
    duplicates: list[Duplicate] = field(default_factory=list)
    proxies_renamed: int = 0
    proxy_errors: list[FileError] = field(default_factory=list)
    """Proxy files (paths relative to the proxy root) a step could not rename or delete."""
    motion_photo_issues: list[FileError] = field(default_factory=list)
    """Stills that claim a motion video which is not there (each ingested as a still)."""
    misnamed: list[FileError] = field(default_factory=list)
    """Files ingested as what their content is, another format than their name says."""
    cut_short: list[FileError] = field(default_factory=list)
    """JPEGs cut short, ingested as far as they decode."""
    failed_as: dict[str, FileVersion] = field(default_factory=dict)
    """The file as it was when it failed, by path, where it is known (``errors``)."""
    not_retried: list[FileError] = field(default_factory=list)
    """Files that failed before, unchanged since, not read again (``walk.failures``),
    with the reason recorded then."""

    def noted(self, path: str, row: NewAsset) -> None:
        """Count and list what was noticed reading an asset just ingested (its read_note)."""
        if row.misnamed is not None:
            self.misnamed.append(FileError(path, row.misnamed))
            self.counts.misnamed += 1
        if row.cut_short is not None:
            self.cut_short.append(FileError(path, row.cut_short))
            self.counts.cut_short += 1


class Attempt:
    """The state of one crawl attempt, handed to each step (``run`` says their order)."""

    def __init__(
        self,
        ctx: HandlerContext,
        services: Services,
        settings: CrawlSettings,
        config_id: UUID,
        root_path: Path,
    ) -> None:
        self.ctx = ctx
        self.services = services
        self.settings = settings
        self.config_id = config_id
        self.configured_root = root_path
        self.root = Path(os.path.realpath(root_path))
        self.proxy_root = settings.proxies
        # In every proxy name this attempt writes: no other attempt writes those names,
        # so a late rename of a stale attempt can never replace a file a row names.
        self.written_by = AttemptTag(ctx.item.id, ctx.item.attempt)
        self.spec: ProxySpec = settings.proxy_spec
        self.tally = Tally()
        self.decide = asyncio.Lock()
        self.inflight: dict[str, str] = {}  # content hash -> the path being ingested with it
        # Assets whose file the walk did not list (id -> path), soft-deleted at the end
        # unless this crawl moved them (``kept``): the walk and the known assets are
        # matched as they stream (``KnownInPathOrder``), never held whole.
        self.unseen: dict[int, str] = {}
        self.kept: set[int] = set()
        # Bounded: a walk that waits on its workers holds no transaction open (each page
        # of known assets is its own query), so it may wait.
        self.pending: asyncio.Queue[Pending | None] = asyncio.Queue(PENDING_FILES)
        self.storage: StorageRoot | None = None
        self.walker: Walker | None = None
        self.alive = ThreadAlive(ctx)
        self._last_progress = ctx.clock.monotonic()
        self._since_progress = 0
        self.walk_errors = 0  # how many of the walk's errors are in the tally
        # The files earlier crawls could not ingest (``opening.resolve_config`` sets it):
        # each is read again only when it changed or is due (``walk.failures``).
        self.failed: dict[str, FailedFile] = {}

    def publish(self, publish: Callable[..., T], made: object, content_hash: str) -> T:
        """``publish`` (``library.walk.publishing``) what was made for ``content_hash``
        under the proxy root, in this attempt's names, ``ensure_alive`` right before each
        rename. Blocking: run it in a thread."""
        return publish(
            made,
            self.proxy_root,
            self.config_id,
            content_hash,
            self.alive.ensure_alive,
            written_by=self.written_by,
        )

    def not_walked(self, known: list[KnownAsset]) -> None:
        self.unseen.update((a.id, a.file_path) for a in known)

    async def at_path(self, path: str) -> KnownAsset | None:
        """The live asset at ``path`` now: this crawl's own writes are committed before
        its next decision, and no other attempt writes the config's assets (ADR 0008)."""
        async with self.services.pool.connection() as conn:
            return await assets.live_at_path(conn, self.config_id, path)

    def storage_root(self) -> StorageRoot:
        assert self.storage is not None, "the walk opens the storage root"
        return self.storage

    def under_unreadable_folder(self, path: str) -> bool:
        return self.walker is not None and self.walker.under_unreadable_folder(path)

    async def relocate(self, asset: KnownAsset, walked: WalkedFile, hashed: HashedFile) -> None:
        async with self.ctx.fenced() as conn:
            await self.relocate_on(conn, asset, walked, hashed)

    async def relocate_on(
        self,
        conn: psycopg.AsyncConnection[Any],
        asset: KnownAsset,
        walked: WalkedFile,
        hashed: HashedFile,
    ) -> None:
        await assets.move_asset(
            conn,
            self.config_id,
            asset.id,
            file_path=walked.path,
            file_name=Path(walked.path).name,
            size_bytes=hashed.size,
            modified_at=file_time(hashed.mtime_ns),
            modified_ns=hashed.mtime_ns,
            now=self.ctx.clock.now(),
        )
        self.kept.add(asset.id)

    async def soft_delete(self, asset: KnownAsset) -> None:
        async with self.ctx.fenced() as conn:
            deleted = await self.soft_delete_on(conn, asset)
        self.tally.counts.deleted += deleted

    async def soft_delete_on(self, conn: psycopg.AsyncConnection[Any], asset: KnownAsset) -> int:
        """How many rows it soft-deleted; the caller counts them once its transaction has
        committed (the counts say only what is done: they are saved with the item)."""
        return await assets.soft_delete(conn, self.config_id, [asset.id], self.ctx.clock.now())

    def duplicate(self, path: str, same_as: str) -> None:
        self.tally.counts.duplicates += 1
        self.tally.duplicates.append(Duplicate(path, same_as))

    def error(self, path: str, reason: str, version: FileVersion | None = None) -> None:
        """``path`` could not be crawled; ``version``: the file as it was then, if known
        (a later crawl reads it again only once it changed, or is due)."""
        self.tally.errors.append(FileError(path, plain_reason(reason)))
        if version is not None:
            self.tally.failed_as[path] = version
        self.tally.counts.errors += 1
        self.services.crawl_observer.file_errors(1)

    def not_retried(self, failed: FailedFile) -> None:
        """A file that failed before and has not changed since: left unread, listed."""
        self.tally.not_retried.append(FileError(failed.path, failed.reason))
        self.tally.counts.not_retried += 1

    def progress(self, *, force: bool = False) -> None:
        self._since_progress += 1
        now = self.ctx.clock.monotonic()
        if (
            force
            or self._since_progress >= PROGRESS_EVERY_FILES
            or now - self._last_progress >= PROGRESS_EVERY_SECONDS
        ):
            self._since_progress = 0
            self._last_progress = now
            self.ctx.progress(**self.tally.counts.as_json())
