"""``crawl`` (scoped): bring a config's assets in line with the files under its root.

The walk and the files it finds stream (ADR 0033): the walk, in a thread of its own a
step or two ahead (``_WalkAhead``), gives out its files in path order, a batch per
step, matched with the config's live assets of the batch's range of paths
(``_KnownRanges``, ``library.crawl.KnownInPathOrder``): compared by the range's digest
first, and read as rows only where that is not the walk's; a file with the stat of the
asset at its path is unchanged and costs nothing more (its key equals its asset's: no
object is made for it); the others go, through a bounded queue, to up to
``max_concurrent_files`` workers as the walk goes (hashing and writes run in threads; a
photo's metadata and proxies in the Worker process's decode processes when it has them,
``Services.decoder``, else in a thread too). Per file, ``library.decisions`` decides
(once hashed: touched, moved, a duplicate, or new content) and ``_apply`` makes the
writes; new content is ingested: metadata, proxies written atomically, then the asset
and its proxy rows in one fenced transaction. A known path with new content
soft-deletes its old asset. A photo whose XMP sidecar is not the one its asset was
read with (added, changed, removed) is read again (``_read_again``): the same asset,
updated in place, its proxies remade only if the way it is shown changed. Neither the
tree nor the assets are ever held whole.

Decisions and the writes that follow from them are taken one at a time (``_decide``):
what they read of the database (the asset at a path, the asset with a content) must
not change between the read and the write. The slow parts (hashing, decoding,
encoding) run outside that lock.

At the end, live assets whose file the walk did not see are soft-deleted, unless they
lie under a folder that could not be listed; then proxies still under a name of before
ADR 0016 get this attempt's (``library.legacynames``, ADR 0017). A root that is
missing, cannot be listed, or holds no media while the config has live assets fails the
crawl and soft-deletes nothing: an unmounted share must not empty a library.

One bad file never stops a crawl: its relative path and reason go to the result and to
``asset_errors``; the next crawl retries it, and forgets the error once it succeeds.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import os
import shutil
import tempfile
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal
from uuid import UUID

import psycopg
from psycopg import errors as pg_errors

from safelight.handlers.burst_detection import BURST_DETECTION
from safelight.handlers.contract import (
    HandlerContext,
    HandlerFailed,
    ThreadAlive,
    config_id_of,
    handler_failure,
    stop_if_cancelled,
)
from safelight.handlers.guards import check_config_root, check_proxy_root
from safelight.handlers.kind import Kind
from safelight.handlers.payloads import NoPayload
from safelight.handlers.services import Services
from safelight.library.catalogue import assets, configs
from safelight.library.catalogue.assets import KnownAsset, KnownRow, NewAsset
from safelight.library.catalogue.proxies import ProxyRecord, paths_named
from safelight.library.files.confinement import describe_os_error
from safelight.library.files.errors import FileChangedWhileHashing, MediaError
from safelight.library.files.hashing import FileIdentity, HashedFile, hash_descriptor
from safelight.library.files.mediatypes import is_raw
from safelight.library.files.originals import Original, StorageRoot
from safelight.library.files.roots import own_folders
from safelight.library.media.metadata import ImageMetadata, file_time
from safelight.library.media.motionphotos import MOTION_VIDEO_NAME, copy_range, find_motion_video
from safelight.library.media.sidecars import NONE_READ, ReadSidecar, read_sidecar
from safelight.library.proxystore import legacynames
from safelight.library.proxystore.layout import STAGING_FOLDER, AttemptTag
from safelight.library.proxystore.legacynames import LegacyProxy
from safelight.library.proxystore.proxytree import UnsafeProxyPath, delete_file
from safelight.library.proxystore.publishing import make_folders
from safelight.library.render.decoding import decode_image
from safelight.library.render.images import ImageProxies, ProxySpec
from safelight.library.render.video import (
    VideoProxySpec,
    make_video_proxies,
    make_web_video,
    probe_video,
)
from safelight.library.walk import decisions
from safelight.library.walk.crawl import (
    FileError,
    KnownInPathOrder,
    RootUnavailable,
    WalkBatch,
    WalkedFile,
    Walker,
    new_asset,
    publish_image_proxies,
    publish_video_proxies,
    publish_web_video,
    stat_keys_digest,
    walked_file,
)
from safelight.work.errors import AttemptStopped
from safelight.work.kinds import Scope

COUNTERS = (
    "total",
    "found",
    "hashed",
    "unchanged",
    "ingested",
    "moved",
    "reread",
    "duplicates",
    "deleted",
    "proxies",
    "errors",
    "skipped",
)
"""Progress counters, cumulative. ``total``: photos and videos the walk found (known
once the walk ends); ``found``: how many of them have been dealt with so far, whatever
the outcome (``found / total`` is the progress); ``reread``: photos whose metadata was
read again in place, their XMP sidecar being new, changed or gone; ``skipped``: what
the walk did not crawl on purpose (symbolic links, safelight's own folders), each
listed with why."""

PROGRESS_EVERY_SECONDS = 0.1
PROGRESS_EVERY_FILES = 50
RESULT_LIST_LIMIT = 1000
"""At most this many errors (and duplicates) are listed in a result; asset_errors has all."""
_WRITE_BATCH = 1000
_KNOWN_PAGE = 5000
"""Known assets read per page (``_KnownRanges``, ``KnownInPathOrder``)."""
_WALK_AHEAD = 2
"""Steps the walk may list ahead of the batch the crawl takes (``_WalkAhead``)."""
_PENDING_FILES = 1000
"""At most this many files wait for the crawl's workers; then the walk waits."""


async def run_crawl(ctx: HandlerContext, services: Services, payload: NoPayload) -> dict[str, Any]:
    config_id = config_id_of(ctx)
    async with services.pool.connection() as conn:
        config = await configs.config_by_id(conn, config_id)
        if config is None:
            raise HandlerFailed(f"storage config {config_id} does not exist")
        if not config.active:
            raise HandlerFailed(f"storage config {config_id} is disabled")
        error_paths = await assets.error_paths(conn, config_id)
    # Before the first write: the config or the settings may have changed since the
    # Worker started (library.roots, library.proxyroot).
    await check_config_root(services, Path(config.root_path))
    await check_proxy_root(services)
    crawl = _Crawl(ctx, services, config_id, Path(config.root_path))
    return await crawl.run(error_paths)


CRAWL = Kind(
    "crawl", Scope.REQUIRED, run_crawl, interval=lambda settings: settings.crawl_interval_seconds
)


@dataclass
class _Tally:
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    errors: list[FileError] = field(default_factory=list)
    duplicates: list[dict[str, str]] = field(default_factory=list)
    proxies_renamed: int = 0
    proxy_errors: list[FileError] = field(default_factory=list)
    """Proxy files (paths relative to the proxy root) a step could not rename or delete."""
    motion_photo_issues: list[FileError] = field(default_factory=list)
    """Stills that claim a motion video which is not there (each ingested as a still)."""


class _Crawl:
    def __init__(
        self,
        ctx: HandlerContext,
        services: Services,
        config_id: UUID,
        root_path: Path,
    ) -> None:
        self.ctx = ctx
        self.services = services
        self.config_id = config_id
        self.configured_root = root_path
        self.root = Path(os.path.realpath(root_path))
        self.proxy_root = services.settings.proxies
        # In every proxy name this attempt writes: no other attempt writes those names,
        # so a late rename of a stale attempt can never replace a file a row names.
        self.written_by = AttemptTag(ctx.item.id, ctx.item.attempt)
        self.spec: ProxySpec = services.settings.proxy_spec()
        self.tally = _Tally()
        self.decide = asyncio.Lock()
        self.inflight: dict[str, str] = {}  # content hash -> the path being ingested with it
        # Assets whose file the walk did not list (id -> path), soft-deleted at the end
        # unless this crawl moved them (``kept``): the walk and the known assets are
        # matched as they stream (``KnownInPathOrder``), never held whole.
        self.unseen: dict[int, str] = {}
        self.kept: set[int] = set()
        # Bounded: a walk that waits on its workers holds no transaction open (each page
        # of known assets is its own query), so it may wait.
        self.pending: asyncio.Queue[_Pending | None] = asyncio.Queue(_PENDING_FILES)
        self.storage: StorageRoot | None = None
        self.walker: Walker | None = None
        self.alive = ThreadAlive(ctx)
        self._last_progress = ctx.clock.monotonic()
        self._since_progress = 0
        self._walk_errors = 0  # how many of the walk's errors are in the tally

    # --- the steps -------------------------------------------------------------------

    async def run(self, error_paths: set[str]) -> dict[str, Any]:
        try:
            return await self._run(error_paths)
        finally:
            # Once more, however the crawl ends: the executor saves the last report with
            # the item, so a crawl stopped by Ctrl-C still says what it did. Each counter
            # grows only once the transaction it counts has committed.
            self._progress(force=True)
            if self.storage is not None:
                self.storage.close()

    async def _run(self, error_paths: set[str]) -> dict[str, Any]:
        walker = await self._open_walk()
        await self._walk_and_process(walker)
        stop_if_cancelled(self.ctx)
        await self._finish(error_paths)
        await self._rename_legacy_proxies()
        self._progress(force=True)
        async with self.services.pool.connection() as conn:
            by_type = await assets.counts_by_type(conn, self.config_id)
        # In the fenced transaction: an attempt that lost its item queues nothing.
        async with self.ctx.fenced() as conn:
            await self.services.store.enqueue_in(
                conn,
                BURST_DETECTION.name,
                config_id=self.config_id,
                dedup_key=BURST_DETECTION.dedup_key(self.config_id),
            )
        counts = self.tally.counts
        return {
            "total": counts["total"],
            "found": counts["found"],
            "unchanged": counts["unchanged"],
            "ingested": counts["ingested"],
            "moved": counts["moved"],
            "reread": counts["reread"],
            "duplicates": _capped(self.tally.duplicates, "path", "same_as"),
            "deleted": counts["deleted"],
            "proxies": counts["proxies"],
            "errors": _capped(
                [{"path": e.path, "reason": e.reason} for e in self.tally.errors],
                "path",
                "reason",
            ),
            "skipped": _capped(
                [{"path": e.path, "reason": e.reason} for e in walker.skipped],
                "path",
                "reason",
            ),
            "images": by_type["image"],
            "videos": by_type["video"],
            "proxies_renamed": self.tally.proxies_renamed,
            "proxy_errors": _capped(
                [{"path": e.path, "reason": e.reason} for e in self.tally.proxy_errors],
                "path",
                "reason",
            ),
            "motion_photo_issues": _capped(
                [{"path": e.path, "reason": e.reason} for e in self.tally.motion_photo_issues],
                "path",
                "reason",
            ),
        }

    async def _open_walk(self) -> Walker:
        if not self.root.is_dir():
            raise HandlerFailed(
                f"the storage root {self.configured_root} is missing or not a folder "
                "(is the share mounted?); nothing was changed"
            )
        settings = self.services.settings
        try:
            # Resolved once (above), then held open: everything below it is reached
            # from this descriptor, through no symbolic link.
            self.storage = await asyncio.to_thread(StorageRoot, self.root)
        except OSError as error:
            raise handler_failure(
                f"the storage root {self.configured_root} cannot be opened: "
                f"{describe_os_error(error)}; nothing was changed",
                error,
            ) from error
        own = await asyncio.to_thread(own_folders, settings.home, settings.proxies)
        self.walker = Walker(
            self.storage, own, follow_links_inside_root=settings.follow_links_inside_root
        )
        return self.walker

    async def _walk_and_process(self, walker: Walker) -> None:
        """The walk and the files it finds that need more than a stat, at once: the walk
        (one task) matches each batch it lists with the known assets and puts the files
        that are not unchanged on ``pending``; ``max_concurrent_files`` workers take
        them. A file's decision reads the database as it is then (``_decide``)."""
        workers = [
            asyncio.create_task(self._worker())
            for _ in range(self.services.settings.max_concurrent_files)
        ]
        tasks = [asyncio.create_task(self._walk(walker)), *workers]
        try:
            done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
            for task in done:
                if task.exception() is not None:
                    raise task.exception()  # type: ignore[misc]
            await asyncio.gather(*tasks)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    async def _walk(self, walker: Walker) -> None:
        try:
            # The config's assets, compared or read range by range of the batches the
            # walk gives out in path order; each query its own, outside any transaction
            # (``KnownInPathOrder`` says why they are as the crawl began).
            async with self.services.pool.connection() as conn:
                await self._walk_matched(walker, _KnownRanges(conn, self.config_id))
        except RootUnavailable as error:
            # Its cause is the OSError of listing the root: retried if that may pass.
            cause = error.__cause__ if error.__cause__ is not None else error
            raise handler_failure(f"{error.reason}; nothing was changed", cause) from error
        self.tally.counts["skipped"] = len(walker.skipped)
        for link, target in walker.links:
            self._duplicate(link, target)
        if not self.tally.counts["total"]:
            async with self.services.pool.connection() as conn:
                live = sum((await assets.counts_by_type(conn, self.config_id)).values())
            if live:
                raise HandlerFailed(
                    f"the storage root {self.configured_root} holds no photos or videos, but "
                    f"the library has {live} of them: is the share mounted? Nothing was "
                    "marked deleted"
                )
        for _ in range(self.services.settings.max_concurrent_files):
            await self.pending.put(None)
        self._progress(force=True)

    async def _walk_matched(self, walker: Walker, ranges: _KnownRanges) -> None:
        known = KnownInPathOrder()
        async with _WalkAhead(walker) as walk:
            last = False
            while not last:
                stop_if_cancelled(self.ctx)
                batch, last = await walk.next()
                await self._walked(walker, batch, last, known, ranges)

    async def _walked(
        self,
        walker: Walker,
        batch: WalkBatch,
        last: bool,
        known: KnownInPathOrder,
        ranges: _KnownRanges,
    ) -> None:
        """One step's files (``last``: the walk's last): the unchanged counted, the
        others put on ``pending``."""
        new_errors = walker.errors[self._walk_errors :]
        if new_errors:
            self._walk_errors += len(new_errors)
            self.tally.errors.extend(new_errors)
            self.tally.counts["errors"] += len(new_errors)
            self.services.crawl_observer.file_errors(len(new_errors))
        self.tally.counts["skipped"] = len(walker.skipped)
        listed = batch.listed
        # Only the files whose key is not their asset's become objects (most are).
        differing: list[tuple[WalkedFile, KnownAsset | None]] = []
        if listed and not last and await ranges.unchanged(listed):
            pass  # the batch's range holds exactly its files' keys: all unchanged
        elif listed or last:
            # The last range is read to the end before the followed links' files are
            # decided: an asset moved to or ingested at a link's path must not come up
            # in a range read after that, as not walked.
            known.feed_rows(await ranges.rows_through(None if last else listed[-1][0]))
            if listed:
                matched = known.match_keys(listed)
                self._not_walked([assets.known_asset(row) for row in matched.unseen])
                differing = [
                    (walked_file(listed[i]), _known_or_none(matched.at_path[i]))
                    for i in matched.differing
                ]
            if last:
                self._not_walked(known.rest())
        # The files of followed links (given out last, once the walk is done) are at
        # paths the matching has passed: those are looked up.
        followed = batch.followed
        if followed:
            async with self.services.pool.connection() as conn:
                found = await assets.live_at_paths(conn, self.config_id, [f.path for f in followed])
            at = {a.file_path: a for a in found}
            differing += [(f, at.get(f.path)) for f in followed]
        given = len(listed) + len(followed)
        self.tally.counts["total"] += given
        unchanged = given - len(differing)
        for walked, at_path in differing:
            same = decisions.by_stat(at_path, walked.size, walked.mtime_ns, walked.sidecar)
            if walked.source is not None and same is not None:
                self.kept.add(same.asset.id)  # the matching passed its path: not walked
            if not isinstance(same, decisions.Unchanged):
                await self.pending.put((walked, same))  # to hash, or its sidecar changed
                continue
            unchanged += 1
        self.tally.counts["unchanged"] += unchanged
        self.tally.counts["found"] += unchanged
        self.services.crawl_observer.files_crawled(unchanged)
        self._progress(force=unchanged > 0)

    def _not_walked(self, known: list[KnownAsset]) -> None:
        self.unseen.update((a.id, a.file_path) for a in known)

    async def _worker(self) -> None:
        while (entry := await self.pending.get()) is not None:
            stop_if_cancelled(self.ctx)
            walked, by_stat = entry
            await self._process(walked, by_stat)
            self.tally.counts["found"] += 1
            self.services.crawl_observer.files_crawled(1)
            self._progress()

    async def _finish(self, error_paths: set[str]) -> None:
        """Mark what was seen, soft-delete what is gone, record and forget errors."""
        now = self.ctx.clock.now()
        unseen = [
            asset_id
            for asset_id, path in self.unseen.items()
            if asset_id not in self.kept and not self._under_unreadable_folder(path)
        ]
        failing = {e.path: e.reason for e in self.tally.errors}
        resolved = [
            p for p in error_paths if p not in failing and not self._under_unreadable_folder(p)
        ]
        deleted = 0
        for start in range(0, len(unseen), _WRITE_BATCH):
            async with self.ctx.fenced() as conn:
                deleted += await assets.soft_delete(
                    conn, self.config_id, unseen[start : start + _WRITE_BATCH], now
                )
        self.tally.counts["deleted"] += deleted
        async with self.ctx.fenced() as conn:
            for path, reason in failing.items():
                await assets.record_error(conn, self.config_id, path, reason, now)
            await assets.clear_errors(conn, self.config_id, resolved)
        await self._record_duplicates(failing, now)

    async def _record_duplicates(self, failing: Mapping[str, str], now: datetime) -> None:
        """Name each duplicate this crawl found with the live asset it duplicates, and
        forget the recorded ones it did not find again (the file went, or is an asset
        now); a path under a folder that could not be listed, or that failed this time,
        keeps what was recorded of it. A duplicate of a file whose ingest failed names
        no asset, so it is not recorded (the result still lists it)."""
        found: dict[str, int] = {}
        duplicates = self.tally.duplicates
        async with self.services.pool.connection() as conn:
            for start in range(0, len(duplicates), _WRITE_BATCH):
                some = duplicates[start : start + _WRITE_BATCH]
                owners = await assets.live_at_paths(
                    conn, self.config_id, {d["same_as"] for d in some}
                )
                ids = {a.file_path: a.id for a in owners}
                found.update((d["path"], ids[d["same_as"]]) for d in some if d["same_as"] in ids)
            recorded = await assets.duplicate_paths(conn, self.config_id)
        stale = [
            p
            for p in recorded
            if p not in found and p not in failing and not self._under_unreadable_folder(p)
        ]
        paths = sorted(found)
        for start in range(0, len(paths), _WRITE_BATCH):
            batch = {p: found[p] for p in paths[start : start + _WRITE_BATCH]}
            async with self.ctx.fenced() as conn:
                await assets.record_duplicates(conn, self.config_id, batch, now)
        if stale:
            async with self.ctx.fenced() as conn:
                await assets.forget_duplicates(conn, self.config_id, stale)

    async def _rename_legacy_proxies(self) -> None:
        """Give each of the config's proxies still under a legacy name this attempt's
        name, a page at a time: link, repoint the rows (fenced), then delete each old
        name no row names any more (library.legacynames, ADR 0017)."""
        after: tuple[int, str] | None = (0, "")
        while after is not None:
            stop_if_cancelled(self.ctx)
            async with self.services.pool.connection() as conn:
                page = await legacynames.legacy_page(conn, self.config_id, after, _WRITE_BATCH)
            after = page.after
            if not page.proxies:
                continue
            linked = await asyncio.to_thread(self._link_tagged, page.proxies)
            async with self.ctx.fenced() as conn:
                left = await legacynames.repoint(conn, linked)
            self.tally.proxies_renamed += len(linked)
            async with self.services.pool.connection() as conn:
                still = await paths_named(conn, sorted(left))
            # Only this attempt writes the config's rows, and never a legacy name: a name
            # no row names now stays so.
            await asyncio.to_thread(
                self._delete_old_names,
                sorted(left - still),
                "renamed, but the old name was not deleted",
            )

    def _link_tagged(self, proxies: list[LegacyProxy]) -> list[tuple[LegacyProxy, str]]:
        """Blocking (links, or copies): runs in a thread."""
        linked = []
        for legacy in proxies:
            self.alive.check()
            try:
                new = legacynames.link_tagged(
                    self.proxy_root, legacy, self.written_by, self.alive.ensure_alive
                )
            except (OSError, UnsafeProxyPath) as error:
                self._proxy_error(legacy.name.relative, "not renamed", error)
                continue
            linked.append((legacy, new))
        return linked

    def _delete_old_names(self, relatives: list[str], what: str) -> None:
        """Blocking: runs in a thread. A name left behind is an orphan, for the sweep."""
        for relative in relatives:
            try:
                delete_file(self.proxy_root, relative, self.alive.ensure_alive)
            except (OSError, UnsafeProxyPath) as error:
                self._proxy_error(relative, what, error)

    def _proxy_error(self, relative: str, what: str, error: OSError | UnsafeProxyPath) -> None:
        reason = describe_os_error(error) if isinstance(error, OSError) else error.reason
        self.ctx.logger.warning("crawl: proxy %s %s: %s", relative, what, reason)
        self.tally.proxy_errors.append(FileError(relative, f"{what}: {reason}"))

    # --- one file --------------------------------------------------------------------

    async def _process(self, walked: WalkedFile, by_stat: decisions.SidecarChanged | None) -> None:
        """A file that is not unchanged by its stat (``_walked``): hash, decide, ingest;
        or, when only its sidecar changed (``by_stat``), read it again."""
        try:
            # Opened once; the hash, metadata, decode and ffmpeg all read this open file.
            original = await asyncio.to_thread(self._storage().open, walked.opened_at)
            try:
                if by_stat is not None:
                    # Its sidecar changed: unless the file did too since the walk, it is
                    # the asset's version, read again without hashing it.
                    opened = FileIdentity.of(await asyncio.to_thread(os.fstat, original.fd))
                    if (opened.size, opened.mtime_ns) == (walked.size, walked.mtime_ns):
                        await self._read_again(walked, original, opened)
                        return
                hashed = await asyncio.to_thread(
                    hash_descriptor, original.fd, ensure_alive=self.alive.check
                )
                self.tally.counts["hashed"] += 1
                then = await self._decide(walked, hashed)
                if then == "ingest":
                    await self._ingest(walked, original, hashed)
                elif then == "read again":
                    await self._read_again(walked, original, hashed.identity)
            finally:
                original.close()
        except MediaError as error:
            self._error(walked.path, error.reason)
        except AttemptStopped:
            raise
        except (pg_errors.IntegrityError, pg_errors.DataError) as error:
            # Not expected (the index is this crawl's own view), but one row must not
            # stop the crawl: the next crawl sees the database as it now is.
            self._error(walked.path, f"could not be recorded: {error.diag.message_primary}")
        except (psycopg.Error, asyncio.CancelledError):
            raise
        except Exception as error:
            self.ctx.logger.exception("crawl: unexpected error on %s", walked.path)
            self._error(walked.path, f"unexpected error: {type(error).__name__}: {error}")

    async def _decide(self, walked: WalkedFile, hashed: HashedFile) -> _Then:
        """Decide a hashed file (``library.decisions``) and apply what is decided; what
        is left to do outside the lock (ingest new content, or read the asset again).
        Under the lock: the index must not change between the decision and its writes."""
        h = hashed.content_hash
        async with self.decide:
            async with self.services.pool.connection() as conn:
                at_path, with_content = await assets.live_at_path_and_with_content(
                    conn, self.config_id, walked.path, h
                )
            decision = decisions.by_content(
                walked.path,
                h,
                at_path=at_path,
                with_content=with_content,
                ingesting=self.inflight.get(h),
            )
            if isinstance(decision, decisions.AskOwner):
                there = await self._still_there(decision.owner)
                decision = decisions.by_owner(decision, still_there=there)
            return await self._apply(decision, walked, hashed)

    async def _apply(
        self, decision: decisions.Decision, walked: WalkedFile, hashed: HashedFile
    ) -> _Then:
        """The writes of one decision (the one place that makes them); "ingest" for new
        content, whose writes come with its ingest; "read again" for an asset that
        followed its file to a sidecar other than the one it was read with."""
        match decision:
            case decisions.Touched(asset):
                await self._relocate(asset, walked, hashed)
                self.tally.counts["unchanged"] += 1
                return _read_again_if(decisions.sidecar_changed(asset, walked.sidecar))
            case decisions.Moved(asset, replaces):
                deleted = 0
                async with self.ctx.fenced() as conn:
                    if replaces is not None:
                        deleted = await self._soft_delete_on(conn, replaces)
                    await self._relocate_on(conn, asset, walked, hashed)
                self.tally.counts["deleted"] += deleted
                self.tally.counts["moved"] += 1
                return _read_again_if(decisions.sidecar_changed(asset, walked.sidecar))
            case decisions.Duplicate(same_as, replaces):
                self._duplicate(walked.path, same_as)
                if replaces is not None:
                    await self._soft_delete(replaces)
            case decisions.New():
                self.inflight[hashed.content_hash] = walked.path
                return "ingest"
        return None

    async def _read_again(
        self, walked: WalkedFile, source: Original, version: FileIdentity
    ) -> None:
        """Read the photo's metadata again with the sidecar the walk paired it with, and
        update its asset in place: capture time, orientation, size, sidecar; its
        thumbnail, preview and BlurHash remade (under this attempt's names, the old
        files deleted once no row names them) only if the way it is shown changed.
        ``version``: the asset's version of the file, which ``source`` holds open."""
        asset = await self._at_path(walked.path)
        if asset is None:
            return
        async with self.services.pool.connection() as conn:
            shown = await assets.shown_as(conn, self.config_id, asset.id)
        if shown is None:
            return
        read = await self._read_sidecar(walked)
        meta, proxies = await self._decode(walked, source, read)
        await asyncio.to_thread(self._check_unchanged, source, version)
        remake = (meta.orientation, meta.width, meta.height) != (
            shown.orientation,
            shown.width,
            shown.height,
        )
        records = None
        if remake:
            self.alive.check()
            records = await asyncio.to_thread(
                functools.partial(
                    publish_image_proxies,
                    proxies,
                    self.proxy_root,
                    self.config_id,
                    asset.content_hash,
                    self.alive.ensure_alive,
                    written_by=self.written_by,
                )
            )
        row = dataclasses.replace(
            new_asset(walked, _as_hashed(asset, version), meta), sidecar=read.file
        )
        async with self.decide:
            async with self.ctx.fenced() as conn:
                old = await assets.update_read_again(
                    conn, self.config_id, asset.id, row, records, self.ctx.clock.now()
                )
            if old is None:
                return  # no longer live: nothing was written (its new proxies: the sweep's)
        self.tally.counts["reread"] += 1
        if records is not None:
            self.tally.counts["proxies"] += len(records)
            self.services.crawl_observer.proxies_made(len(records))
        if old:
            async with self.services.pool.connection() as conn:
                still = await paths_named(conn, old)
            await asyncio.to_thread(
                self._delete_old_names,
                sorted(set(old) - still),
                "remade, but the old file was not deleted",
            )

    async def _ingest(self, walked: WalkedFile, source: Original, hashed: HashedFile) -> None:
        h = hashed.content_hash
        try:
            try:
                row, proxies = await self._make(walked, source, hashed)
            except MediaError:
                # The new content cannot be ingested (yet); the old content is gone from
                # this path all the same, so its asset must not stay live with it.
                async with self.decide:
                    known = await self._at_path(walked.path)
                    if known is not None and known.content_hash != h:
                        await self._soft_delete(known)
                raise
            async with self.decide:
                # Re-read under the lock: a move may have taken the old asset away.
                known = await self._at_path(walked.path)
                deleted = 0
                async with self.ctx.fenced() as conn:
                    if known is not None:
                        deleted = await self._soft_delete_on(conn, known)
                    await assets.insert_asset(
                        conn, self.config_id, row, proxies, self.ctx.clock.now()
                    )
                self.tally.counts["deleted"] += deleted
            self.tally.counts["ingested"] += 1
            if row.motion_photo_issue is not None:
                # Reported once its still is in: a file that then failed is an error.
                self.tally.motion_photo_issues.append(
                    FileError(walked.path, row.motion_photo_issue)
                )
            self.tally.counts["proxies"] += len(proxies)
            self.services.crawl_observer.proxies_made(len(proxies))
        finally:
            self.inflight.pop(h, None)

    async def _make(
        self, walked: WalkedFile, source: Original, hashed: HashedFile
    ) -> tuple[NewAsset, list[ProxyRecord]]:
        """Metadata and proxies of one new original, published under the proxy root."""
        if walked.media_type == "image":
            row, records = await self._make_image(walked, source, hashed)
            row, records = await self._add_motion_video(source, hashed, row, records)
        else:
            row, records = await self._make_video(walked, source, hashed)
        await asyncio.to_thread(self._check_unchanged, source, hashed.identity)
        return row, records

    def _check_unchanged(self, source: Original, version: FileIdentity) -> None:
        """The original was read again after it was hashed (from the same open file):
        if that file changed since, the proxies may show another version than the hash
        names; if its name now leads to another file (replaced by a rename, or a link
        swapped in), the asset would name a file it does not describe."""
        if FileIdentity.of(os.fstat(source.fd)) != version:
            raise FileChangedWhileHashing("file changed while its proxies were made")
        try:
            now = FileIdentity.of(self._storage().stat(source.relative))
        except MediaError as error:
            raise FileChangedWhileHashing(
                f"file was replaced while its proxies were made ({error.reason})"
            ) from error
        if now != version:
            raise FileChangedWhileHashing("file was replaced while its proxies were made")

    async def _make_image(
        self, walked: WalkedFile, source: Original, hashed: HashedFile
    ) -> tuple[NewAsset, list[ProxyRecord]]:
        read = await self._read_sidecar(walked)
        meta, proxies = await self._decode(walked, source, read)
        row, records = await asyncio.to_thread(self._publish_image, walked, hashed, meta, proxies)
        return dataclasses.replace(row, sidecar=read.file), records

    async def _decode(
        self, walked: WalkedFile, source: Original, read: ReadSidecar
    ) -> tuple[ImageMetadata, ImageProxies]:
        """A photo's metadata and proxies, in a decode process if the Worker has them."""
        raw = is_raw(walked.opened_at)
        decoder = self.services.decoder
        if decoder is None:
            return await asyncio.to_thread(decode_image, source.ref(), self.spec, raw, read.facts)
        # Cancelling this task (the attempt stopping) cancels the decode if it has not
        # started; one already running finishes in its process, unawaited (and if this
        # descriptor is closed and its number reused meanwhile, the reference's inode
        # check refuses the other file).
        return await decoder.decode(source.ref(), self.spec, raw, read.facts)

    async def _read_sidecar(self, walked: WalkedFile) -> ReadSidecar:
        """What the photo's XMP sidecar says (``sidecars.read_sidecar``: beneath the root,
        no link followed, bounded). One that cannot be read now (a link swapped in since
        the walk, unreadable) is reported and the photo read as if it had none; the asset
        then stores none, so the next crawl tries again."""
        if walked.sidecar is None:
            return NONE_READ
        read = await asyncio.to_thread(read_sidecar, self._storage(), walked.sidecar)
        if read.refused is not None:
            self._error(walked.sidecar.path, f"XMP sidecar not read: {read.refused}")
        return read

    def _publish_image(
        self, walked: WalkedFile, hashed: HashedFile, meta: ImageMetadata, proxies: ImageProxies
    ) -> tuple[NewAsset, list[ProxyRecord]]:
        """Blocking (writes): runs in a thread, which the attempt's ensure_alive guards."""
        self.alive.check()
        records = publish_image_proxies(
            proxies,
            self.proxy_root,
            self.config_id,
            hashed.content_hash,
            self.alive.ensure_alive,
            written_by=self.written_by,
        )
        return new_asset(walked, hashed, meta), records

    async def _make_video(
        self, walked: WalkedFile, source: Original, hashed: HashedFile
    ) -> tuple[NewAsset, list[ProxyRecord]]:
        # ffmpeg writes into a temporary folder of the proxy root's staging folder (the
        # same file system, so publishing is a rename; no config's folder, so nothing of
        # the config is touched before that). Left behind by a crash or a stopped
        # attempt, the sweep removes it once it is an hour old.
        self.ctx.ensure_alive()
        staging = self.proxy_root / STAGING_FOLDER
        temp = Path(await asyncio.to_thread(_make_temp_folder, staging))
        try:
            proxies = await make_video_proxies(
                source,
                temp,
                VideoProxySpec(image=self.spec),
                self.ctx.ensure_alive,
                clock=self.ctx.clock,
            )
            records = await asyncio.to_thread(
                functools.partial(
                    publish_video_proxies,
                    proxies,
                    self.proxy_root,
                    self.config_id,
                    hashed.content_hash,
                    self.alive.ensure_alive,
                    written_by=self.written_by,
                )
            )
        finally:
            # Only while the attempt is alive: a stopped attempt touches no file at all,
            # not even its own leftovers (the sweep takes those).
            if not self.ctx.cancelled.is_set():
                self.ctx.ensure_alive()
                await asyncio.to_thread(shutil.rmtree, temp, True)
        return new_asset(walked, hashed, proxies.metadata), records

    async def _add_motion_video(
        self,
        source: Original,
        hashed: HashedFile,
        row: NewAsset,
        records: list[ProxyRecord],
    ) -> tuple[NewAsset, list[ProxyRecord]]:
        """A motion photo's embedded video (library.motionphotos) as its web_video proxy,
        made from a copy of the video's bytes in the staging area (like a video's, see
        ``_make_video``). A still that claims a video which is not there, or whose video
        ffmpeg cannot read, stays a still with the reason, recorded and reported."""
        found = await asyncio.to_thread(find_motion_video, source.fd, hashed.size)
        if found is None:
            return row, records
        if not found.found:
            issue = found.issue or "no motion video"
            return dataclasses.replace(row, motion_photo_issue=issue), records
        self.ctx.ensure_alive()
        temp = Path(await asyncio.to_thread(_make_temp_folder, self.proxy_root / STAGING_FOLDER))
        try:
            embedded = temp / MOTION_VIDEO_NAME
            await asyncio.to_thread(copy_range, source.fd, found, embedded, self.alive.check)
            try:
                metadata = await probe_video(
                    embedded, clock=self.ctx.clock, decode_memory_mib=self.spec.decode_memory_mib
                )
                web = await make_web_video(
                    embedded,
                    metadata,
                    temp,
                    VideoProxySpec(image=self.spec),
                    self.ctx.ensure_alive,
                    clock=self.ctx.clock,
                )
            except MediaError as error:
                issue = f"its motion video could not be made into a web video: {error.reason}"
                return dataclasses.replace(row, motion_photo_issue=issue), records
            record = await asyncio.to_thread(
                functools.partial(
                    publish_web_video,
                    web,
                    self.proxy_root,
                    self.config_id,
                    hashed.content_hash,
                    self.alive.ensure_alive,
                    written_by=self.written_by,
                )
            )
        finally:
            if not self.ctx.cancelled.is_set():
                self.ctx.ensure_alive()
                await asyncio.to_thread(shutil.rmtree, temp, True)
        return dataclasses.replace(row, motion_photo=True), [*records, record]

    # --- helpers ---------------------------------------------------------------------

    async def _still_there(self, owner: KnownAsset) -> bool:
        """Whether ``owner``'s file still holds its content (then a copy is a duplicate).

        Unsure counts as there: calling it a duplicate changes nothing, while a wrong
        move would take the asset away from a file that still holds it.
        """
        if self._under_unreadable_folder(owner.file_path):
            return True
        try:
            st = await asyncio.to_thread(self._storage().stat, owner.file_path)
        except MediaError:
            # Gone (or not a file reached through no link now): there only if something
            # is at that name, as a walk that ran before it would have said.
            return await asyncio.to_thread(os.path.lexists, self.root / owner.file_path)
        if (st.st_size, st.st_mtime_ns) == (owner.size_bytes, owner.modified_ns):
            return True
        try:
            again = await asyncio.to_thread(self._hash_at, owner.file_path)
        except MediaError:
            return True
        return again.content_hash == owner.content_hash

    def _hash_at(self, relative: str) -> HashedFile:
        with self._storage().open(relative) as original:
            return hash_descriptor(original.fd, ensure_alive=self.alive.check)

    async def _at_path(self, path: str) -> KnownAsset | None:
        """The live asset at ``path`` now: this crawl's own writes are committed before
        its next decision, and no other attempt writes the config's assets (ADR 0008)."""
        async with self.services.pool.connection() as conn:
            return await assets.live_at_path(conn, self.config_id, path)

    def _storage(self) -> StorageRoot:
        assert self.storage is not None, "the walk opens the storage root"
        return self.storage

    def _under_unreadable_folder(self, path: str) -> bool:
        return self.walker is not None and self.walker.under_unreadable_folder(path)

    async def _relocate(self, asset: KnownAsset, walked: WalkedFile, hashed: HashedFile) -> None:
        async with self.ctx.fenced() as conn:
            await self._relocate_on(conn, asset, walked, hashed)

    async def _relocate_on(
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

    async def _soft_delete(self, asset: KnownAsset) -> None:
        async with self.ctx.fenced() as conn:
            deleted = await self._soft_delete_on(conn, asset)
        self.tally.counts["deleted"] += deleted

    async def _soft_delete_on(self, conn: psycopg.AsyncConnection[Any], asset: KnownAsset) -> int:
        """How many rows it soft-deleted; the caller counts them once its transaction has
        committed (the counts say only what is done: they are saved with the item)."""
        return await assets.soft_delete(conn, self.config_id, [asset.id], self.ctx.clock.now())

    def _duplicate(self, path: str, same_as: str) -> None:
        self.tally.counts["duplicates"] += 1
        self.tally.duplicates.append({"path": path, "same_as": same_as})

    def _error(self, path: str, reason: str) -> None:
        self.tally.errors.append(FileError(path, reason))
        self.tally.counts["errors"] += 1
        self.services.crawl_observer.file_errors(1)

    def _progress(self, *, force: bool = False) -> None:
        self._since_progress += 1
        now = self.ctx.clock.monotonic()
        if (
            force
            or self._since_progress >= PROGRESS_EVERY_FILES
            or now - self._last_progress >= PROGRESS_EVERY_SECONDS
        ):
            self._since_progress = 0
            self._last_progress = now
            self.ctx.progress(**self.tally.counts)


class _WalkAhead:
    """The walk in a thread of its own, up to ``_WALK_AHEAD`` steps ahead of the batch
    the crawl takes (``next``): its system calls run while the crawl compares the batch
    before, and a batch is ready when the crawl wants it. The walk only lists: the
    crawl writes at a path only once it has taken the batch that holds it.

    On leaving, the thread is stopped at its next step and waited for, whatever ended
    the walk (a cancellation too), before anything closes the storage it lists.
    """

    def __init__(self, walker: Walker) -> None:
        self._walker = walker
        self._loop = asyncio.get_running_loop()
        self._batches: asyncio.Queue[tuple[WalkBatch, bool] | BaseException] = asyncio.Queue()
        self._room = threading.Semaphore(_WALK_AHEAD)
        self._stop = threading.Event()
        self._ended: asyncio.Future[None] = self._loop.create_future()

    async def __aenter__(self) -> _WalkAhead:
        threading.Thread(target=self._run, name="safelight-walk", daemon=True).start()
        return self

    async def __aexit__(self, *_: object) -> None:
        self._stop.set()
        self._room.release()  # a thread waiting for room sees the stop
        cancelled = False
        while not self._ended.done():
            try:
                await asyncio.shield(self._ended)
            except asyncio.CancelledError:
                cancelled = True  # still waited for: it may be listing the storage
        if cancelled:
            raise asyncio.CancelledError

    async def next(self) -> tuple[WalkBatch, bool]:
        """The next step's batch, and whether the walk is done with it."""
        got = await self._batches.get()
        if isinstance(got, BaseException):
            raise got
        self._room.release()
        return got

    def _run(self) -> None:
        def give(got: tuple[WalkBatch, bool] | BaseException) -> None:
            self._loop.call_soon_threadsafe(self._batches.put_nowait, got)

        try:
            while True:
                self._room.acquire()
                if self._stop.is_set():
                    return
                self._walker.step()
                done = self._walker.done
                give((self._walker.take_batch(), done))
                if done:
                    return
        except BaseException as error:  # the crawl's to raise (RootUnavailable, a bug)
            give(error)
        finally:
            # Set once, here only; never cancelled (``__aexit__`` waits through a shield).
            self._loop.call_soon_threadsafe(self._ended.set_result, None)


class _KnownRanges:
    """The config's live assets, range by range of the walk's batches
    (``KnownInPathOrder``): each range after the last one's end, compared by its digest
    first (``unchanged``), read as rows, a page at a time, only if that is not the
    walk's (``rows_through``). Each query is its own, on the walk's connection, outside
    any transaction: a walk that waits on its workers holds nothing open."""

    def __init__(self, conn: psycopg.AsyncConnection[Any], config_id: UUID) -> None:
        self._conn = conn
        self._config_id = config_id
        self._after = ""
        """Where the ranges compared or read so far end ("": before every path)."""

    async def unchanged(self, keys: list[decisions.StatKey]) -> bool:
        """Whether the assets after the last range, up to the last of ``keys``, are
        those keys exactly (their count and digest): then that range is done; if not,
        it is still to be read (``rows_through``)."""
        upto = keys[-1][0]
        count, digest = await assets.live_digest_in_range(
            self._conn, self._config_id, self._after, upto
        )
        if count != len(keys) or digest != stat_keys_digest(keys):
            return False
        self._after = upto
        return True

    async def rows_through(self, upto: str | None) -> list[KnownRow]:
        """Every row after the last range and up to ``upto`` (None: to the end)."""
        rows: list[KnownRow] = []
        while True:
            page = await assets.live_after_path(
                self._conn, self._config_id, self._after, upto, _KNOWN_PAGE
            )
            rows += page
            if page:
                self._after = page[-1][0]
            if len(page) < _KNOWN_PAGE:
                break
        if upto is not None:
            self._after = upto
        return rows


def _known_or_none(row: KnownRow | None) -> KnownAsset | None:
    return None if row is None else assets.known_asset(row)


_Then = Literal["ingest", "read again"] | None
# A file for the crawl's workers: what the walk found, and whether only its sidecar
# changed (``decisions.SidecarChanged``) or it is to be hashed (None).
_Pending = tuple[WalkedFile, "decisions.SidecarChanged | None"]
"""What a decision leaves to do outside the decision lock."""


def _read_again_if(changed: bool) -> _Then:
    return "read again" if changed else None


def _as_hashed(asset: KnownAsset, version: FileIdentity) -> HashedFile:
    """An asset's version of its file, as if hashed again: its own hash (the file is
    unchanged) with the stat of the file open now."""
    return HashedFile(
        asset.content_hash, version.size, version.mtime_ns, version.inode, version.device
    )


def _make_temp_folder(parent: Path) -> str:
    make_folders(parent)
    return tempfile.mkdtemp(dir=parent, prefix=".video-", suffix=".tmp")


def _capped(entries: list[dict[str, str]], first: str, second: str) -> list[dict[str, str]]:
    if len(entries) <= RESULT_LIST_LIMIT:
        return entries
    rest = len(entries) - RESULT_LIST_LIMIT
    return [*entries[:RESULT_LIST_LIMIT], {first: "...", second: f"and {rest} more"}]
