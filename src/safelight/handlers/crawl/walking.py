"""Walk and match: the walk's batches matched with the config's live assets
(``library.walk.matching``), the unchanged counted, the others handed to the crawl's
workers, which deal with one file each at a time (``deciding.process``)."""

from __future__ import annotations

import asyncio

from safelight.handlers.contract import HandlerFailed, handler_failure, stop_if_cancelled
from safelight.handlers.crawl import ahead, deciding
from safelight.handlers.crawl.attempt import Attempt
from safelight.library.catalogue import assets
from safelight.library.walk import decisions
from safelight.library.walk.matching import WalkMatcher
from safelight.library.walk.walker import RootUnavailable, WalkBatch, Walker


async def walk_and_process(crawl: Attempt, walker: Walker) -> None:
    """The walk and the files it finds that need more than a stat, at once: the walk
    (one task) matches each batch it lists with the known assets and puts the files
    that are not unchanged on ``pending``; ``max_concurrent_files`` workers take
    them. A file's decision reads the database as it is then (``deciding.decide``)."""
    workers = [
        asyncio.create_task(worker(crawl)) for _ in range(crawl.settings.max_concurrent_files)
    ]
    tasks = [asyncio.create_task(walk(crawl, walker)), *workers]
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


async def walk(crawl: Attempt, walker: Walker) -> None:
    try:
        # The config's assets, compared or read range by range of the batches the
        # walk gives out in path order; each query its own, outside any transaction
        # (``KnownInPathOrder`` says why they are as the crawl began).
        async with crawl.services.pool.connection() as conn:
            await walk_matched(crawl, walker, WalkMatcher(conn, crawl.config_id))
    except RootUnavailable as error:
        # Its cause is the OSError of listing the root: retried if that may pass.
        cause = error.__cause__ if error.__cause__ is not None else error
        raise handler_failure(f"{error.reason}; nothing was changed", cause) from error
    if crawl.ctx.winding_down.is_set():
        # Cut short at the end of heavy hours: the workers finish the files they hold
        # and the crawl stops (run.py); nothing is judged of a walk that did not end.
        for _ in range(crawl.settings.max_concurrent_files):
            await crawl.pending.put(None)
        crawl.progress(force=True)
        return
    crawl.tally.counts.skipped = len(walker.skipped)
    crawl.tally.counts.other_files = walker.other_files
    for link, target in walker.links:
        crawl.duplicate(link, target)
    if not crawl.tally.counts.total:
        async with crawl.services.pool.connection() as conn:
            live = sum((await assets.counts_by_type(conn, crawl.config_id)).values())
        if live:
            raise HandlerFailed(
                f"the storage root {crawl.configured_root} holds no photos or videos, but "
                f"the library has {live} of them: is the share mounted? Nothing was "
                "marked deleted"
            )
    for _ in range(crawl.settings.max_concurrent_files):
        await crawl.pending.put(None)
    crawl.progress(force=True)


async def walk_matched(crawl: Attempt, walker: Walker, matcher: WalkMatcher) -> None:
    async with ahead.WalkAhead(walker) as walk:
        last = False
        while not last:
            stop_if_cancelled(crawl.ctx)
            if crawl.ctx.winding_down.is_set():
                return  # heavy hours are over: list no more (ADR 0060)
            batch, last = await walk.next()
            await walked(crawl, walker, batch, last, matcher)


async def walked(
    crawl: Attempt,
    walker: Walker,
    batch: WalkBatch,
    last: bool,
    matcher: WalkMatcher,
) -> None:
    """One step's files (``last``: the walk's last): the unchanged counted, the
    others put on ``pending``."""
    new_errors = walker.errors[crawl.walk_errors :]
    if new_errors:
        crawl.walk_errors += len(new_errors)
        crawl.tally.errors.extend(new_errors)
        crawl.tally.counts.errors += len(new_errors)
        crawl.services.crawl_observer.file_errors(len(new_errors))
    crawl.tally.counts.skipped = len(walker.skipped)
    crawl.tally.counts.other_files = walker.other_files
    matched = await matcher.match(batch, last)
    crawl.not_walked(matched.not_walked)
    differing = matched.differing
    given = len(batch.listed) + len(batch.followed)
    crawl.tally.counts.total += given
    unchanged = given - len(differing)
    for walked, at_path in differing:
        same = decisions.by_stat(at_path, walked.size, walked.mtime_ns, walked.sidecar)
        if walked.source is not None and same is not None:
            crawl.kept.add(same.asset.id)  # the matching passed its path: not walked
        if not isinstance(same, decisions.Unchanged):
            await crawl.pending.put((walked, same))  # to hash, or its sidecar changed
            continue
        unchanged += 1
    crawl.tally.counts.unchanged += unchanged
    crawl.tally.counts.found += unchanged
    crawl.services.crawl_observer.files_crawled(unchanged)
    crawl.progress(force=unchanged > 0)


async def worker(crawl: Attempt) -> None:
    while (entry := await crawl.pending.get()) is not None:
        stop_if_cancelled(crawl.ctx)
        if crawl.ctx.winding_down.is_set():
            # Not started: left for the next window's crawl. Still taken off the queue,
            # so that the walk, which may be waiting to put one more, reaches its end.
            continue
        walked, by_stat = entry
        await deciding.process(crawl, walked, by_stat)
        crawl.tally.counts.found += 1
        crawl.services.crawl_observer.files_crawled(1)
        crawl.progress()
