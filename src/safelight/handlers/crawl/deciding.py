"""Decide each file that is not unchanged by its stat: hash it, decide by its content
(``library.walk.decisions``) under the decision lock, and make that decision's writes;
new content is ingested (``ingesting``), a changed sidecar read again (``rereading``).
A file that failed before is first asked whether to read it at all (``walk.failures``)."""

from __future__ import annotations

import asyncio
import os
from typing import Literal

import psycopg
from psycopg import errors as pg_errors

from safelight.handlers.crawl import ingesting, rereading
from safelight.handlers.crawl.attempt import Attempt
from safelight.library.catalogue import assets
from safelight.library.catalogue.assets import FailedFile, FileVersion, KnownAsset
from safelight.library.files.errors import MediaError
from safelight.library.files.hashing import FileIdentity, HashedFile, hash_descriptor
from safelight.library.walk import decisions, failures
from safelight.library.walk.walker import WalkedFile
from safelight.work.errors import AttemptStopped


async def process(
    crawl: Attempt, walked: WalkedFile, by_stat: decisions.SidecarChanged | None
) -> None:
    """A file that is not unchanged by its stat (``walking.walked``): hash, decide, ingest;
    or, when only its sidecar changed (``by_stat``), read it again. A file that failed
    before and is neither changed nor due is left unread (``walk.failures``)."""
    version: FileVersion | None = None
    try:
        failed = crawl.failed.get(walked.path) if by_stat is None else None
        if failed is not None and not await read_failed_again(crawl, walked, failed):
            crawl.not_retried(failed)
            return
        # Opened once; the hash, metadata, decode and ffmpeg all read this open file.
        original = await asyncio.to_thread(crawl.storage_root().open, walked.opened_at)
        try:
            # What is recorded if it fails: a later crawl reads it again once it changed.
            version = FileVersion(walked.size, walked.mtime_ns, original.inode)
            if by_stat is not None:
                # Its sidecar changed: unless the file did too since the walk, it is
                # the asset's version, read again without hashing it.
                opened = FileIdentity.of(await asyncio.to_thread(os.fstat, original.fd))
                if (opened.size, opened.mtime_ns) == (walked.size, walked.mtime_ns):
                    await rereading.read_again(crawl, walked, original, opened)
                    return
            hashed = await asyncio.to_thread(
                hash_descriptor, original.fd, ensure_alive=crawl.alive.check
            )
            crawl.tally.counts.hashed += 1
            then = await decide(crawl, walked, hashed)
            if then == "ingest":
                await ingesting.ingest(crawl, walked, original, hashed)
            elif then == "read again":
                await rereading.read_again(crawl, walked, original, hashed.identity)
        finally:
            original.close()
    except MediaError as error:
        crawl.error(walked.path, error.reason, version)
    except AttemptStopped:
        raise
    except (pg_errors.IntegrityError, pg_errors.DataError) as error:
        # Not expected (the index is this crawl's own view), but one row must not
        # stop the crawl: the next crawl sees the database as it now is.
        crawl.error(walked.path, f"could not be recorded: {error.diag.message_primary}", version)
    except (psycopg.Error, asyncio.CancelledError):
        raise
    except Exception as error:
        crawl.ctx.logger.exception("crawl: unexpected error on %s", walked.path)
        crawl.error(walked.path, f"unexpected error: {type(error).__name__}: {error}", version)


async def read_failed_again(crawl: Attempt, walked: WalkedFile, failed: FailedFile) -> bool:
    """Whether to read a file that failed before (``walk.failures``): its inode is asked
    for (a stat, no byte read) only when its size and mtime would leave it alone."""
    now = crawl.ctx.clock.now()
    if not failures.needs_inode(failed, walked.size, walked.mtime_ns, now):
        return True
    try:
        st = await asyncio.to_thread(crawl.storage_root().stat, walked.opened_at)
    except MediaError:
        return True  # reading it says what became of it
    return failures.read_again(failed, st.st_size, st.st_mtime_ns, st.st_ino, now)


async def decide(crawl: Attempt, walked: WalkedFile, hashed: HashedFile) -> Then:
    """Decide a hashed file (``library.walk.decisions``) and apply what is decided; what
    is left to do outside the lock (ingest new content, or read the asset again).
    Under the lock: the index must not change between the decision and its writes."""
    h = hashed.content_hash
    async with crawl.decide:
        async with crawl.services.pool.connection() as conn:
            at_path, with_content = await assets.live_at_path_and_with_content(
                conn, crawl.config_id, walked.path, h
            )
        decision = decisions.by_content(
            walked.path,
            h,
            at_path=at_path,
            with_content=with_content,
            ingesting=crawl.inflight.get(h),
        )
        if isinstance(decision, decisions.AskOwner):
            there = await still_there(crawl, decision.owner)
            decision = decisions.by_owner(decision, still_there=there)
        return await apply(crawl, decision, walked, hashed)


async def apply(
    crawl: Attempt, decision: decisions.Decision, walked: WalkedFile, hashed: HashedFile
) -> Then:
    """The writes of one decision (the one place that makes them); "ingest" for new
    content, whose writes come with its ingest; "read again" for an asset that
    followed its file to a sidecar other than the one it was read with."""
    match decision:
        case decisions.Touched(asset):
            await crawl.relocate(asset, walked, hashed)
            crawl.tally.counts.unchanged += 1
            return read_again_if(decisions.sidecar_changed(asset, walked.sidecar))
        case decisions.Moved(asset, replaces):
            deleted = 0
            async with crawl.ctx.fenced() as conn:
                if replaces is not None:
                    deleted = await crawl.soft_delete_on(conn, replaces)
                await crawl.relocate_on(conn, asset, walked, hashed)
            crawl.tally.counts.deleted += deleted
            crawl.tally.counts.moved += 1
            return read_again_if(decisions.sidecar_changed(asset, walked.sidecar))
        case decisions.Duplicate(same_as, replaces):
            crawl.duplicate(walked.path, same_as)
            if replaces is not None:
                await crawl.soft_delete(replaces)
        case decisions.New():
            crawl.inflight[hashed.content_hash] = walked.path
            return "ingest"
    return None


async def still_there(crawl: Attempt, owner: KnownAsset) -> bool:
    """Whether ``owner``'s file still holds its content (then a copy is a duplicate).

    Unsure counts as there: calling it a duplicate changes nothing, while a wrong
    move would take the asset away from a file that still holds it.
    """
    if crawl.under_unreadable_folder(owner.file_path):
        return True
    try:
        st = await asyncio.to_thread(crawl.storage_root().stat, owner.file_path)
    except MediaError:
        # Gone (or not a file reached through no link now): there only if something
        # is at that name, as a walk that ran before it would have said.
        return await asyncio.to_thread(os.path.lexists, crawl.root / owner.file_path)
    if (st.st_size, st.st_mtime_ns) == (owner.size_bytes, owner.modified_ns):
        return True
    try:
        again = await asyncio.to_thread(hash_at, crawl, owner.file_path)
    except MediaError:
        return True
    return again.content_hash == owner.content_hash


def hash_at(crawl: Attempt, relative: str) -> HashedFile:
    with crawl.storage_root().open(relative) as original:
        return hash_descriptor(original.fd, ensure_alive=crawl.alive.check)


Then = Literal["ingest", "read again"] | None


def read_again_if(changed: bool) -> Then:
    return "read again" if changed else None
