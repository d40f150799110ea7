"""``crawl`` (scoped): bring a config's assets in line with the files under its root.

The walk and the files it finds stream (ADR 0033): the walk, in a thread of its own a
step or two ahead (``ahead``), gives out its files in path order, a batch per
step, matched with the config's live assets of the batch's range of paths
(``library.walk.matching``): compared by the range's digest
first, and read as rows only where that is not the walk's; a file with the stat of the
asset at its path is unchanged and costs nothing more (its key equals its asset's: no
object is made for it); the others go, through a bounded queue, to up to
``max_concurrent_files`` workers as the walk goes (hashing and writes run in threads; a
photo's metadata and proxies in the Worker process's decode processes when it has them,
``Services.decoder``, else in a thread too). Per file, ``library.walk.decisions`` decides
(once hashed: touched, moved, a duplicate, or new content) and ``deciding.apply`` makes the
writes; new content is ingested: metadata, proxies written atomically, then the asset
and its proxy rows in one fenced transaction. A known path with new content
soft-deletes its old asset. A photo whose XMP sidecar is not the one its asset was
read with (added, changed, removed) is read again (``rereading``): the same asset,
updated in place, its proxies remade only if the way it is shown changed. Neither the
tree nor the assets are ever held whole.

Decisions and the writes that follow from them are taken one at a time (``deciding.decide``):
what they read of the database (the asset at a path, the asset with a content) must
not change between the read and the write. The slow parts (hashing, decoding,
encoding) run outside that lock.

At the end, live assets whose file the walk did not see are soft-deleted, unless they
lie under a folder that could not be listed; then proxies still under a name of before
ADR 0016 get this attempt's (``library.proxystore.legacynames``, ADR 0017). A root that is
missing, cannot be listed, or holds no media while the config has live assets fails the
crawl and soft-deletes nothing: an unmounted share must not empty a library.

One bad file never stops a crawl: its relative path and reason go to the result and to
``asset_errors``, with the file as it was; a later crawl reads it again once it changed,
was asked to, or waited out its backoff (``library.walk.failures``, ADR 0057), lists it
unread until then, and forgets the error once it succeeds.
"""

from __future__ import annotations

from typing import Any

from safelight.handlers.burst_detection import BURST_DETECTION
from safelight.handlers.contract import HandlerContext, WoundDown, stop_if_cancelled
from safelight.handlers.crawl import gone, legacy, opening, walking
from safelight.handlers.crawl.attempt import Attempt
from safelight.handlers.crawl.config import CrawlSettings
from safelight.handlers.crawl.result import CrawlResult, Duplicate, capped
from safelight.handlers.faces import FACES
from safelight.handlers.kind import Kind
from safelight.handlers.payloads import NoPayload
from safelight.handlers.place_fill import PLACE_FILL
from safelight.handlers.services import Services
from safelight.library.catalogue import assets, places
from safelight.library.walk.walker import FileError, Walker
from safelight.work.kinds import Scope


async def run_crawl(ctx: HandlerContext, services: Services, payload: NoPayload) -> dict[str, Any]:
    config_id, root_path, failed = await opening.resolve_config(ctx, services)
    crawl = Attempt(ctx, services, CrawlSettings.of(services.settings), config_id, root_path)
    crawl.failed = failed
    try:
        return await _steps(crawl, set(failed))
    finally:
        # Once more, however the crawl ends: the executor saves the last report with
        # the item, so a crawl stopped by Ctrl-C still says what it did. Each counter
        # grows only once the transaction it counts has committed.
        crawl.progress(force=True)
        if crawl.storage is not None:
            crawl.storage.close()


CRAWL = Kind(
    "crawl",
    Scope.REQUIRED,
    run_crawl,
    interval=lambda settings: settings.crawl_interval_seconds,
    heavy=True,  # it reads the originals and makes the proxies (ADR 0060)
)


async def _steps(crawl: Attempt, error_paths: set[str]) -> dict[str, Any]:
    """The crawl, step by step; each step is its module."""
    walker = await opening.open_walk(crawl)
    await walking.walk_and_process(crawl, walker)
    stop_if_cancelled(crawl.ctx)
    if crawl.ctx.winding_down.is_set():
        # Heavy hours ended: every file started was finished and committed; the rest,
        # and the end steps (what is gone is judged only after a whole walk), are the
        # next window's crawl, which skips the files done as unchanged (ADR 0060).
        raise WoundDown(
            f"stopped at the end of heavy hours after {crawl.tally.counts.found} of the "
            "files walked"
        )
    await gone.remove_gone(crawl, error_paths)
    await legacy.rename_legacy_proxies(crawl)
    crawl.progress(force=True)
    async with crawl.services.pool.connection() as conn:
        by_type = await assets.counts_by_type(conn, crawl.config_id)
    await _queue_burst_detection(crawl)
    await _queue_place_fill(crawl)
    await _queue_faces(crawl)
    return _summarise(crawl, walker, by_type).as_json()


def _summarise(crawl: Attempt, walker: Walker, by_type: dict[str, int]) -> CrawlResult:
    """The crawl's result: its tally, what the walk skipped, the live assets by type."""
    tally, counts = crawl.tally, crawl.tally.counts
    return CrawlResult(
        total=counts.total,
        found=counts.found,
        unchanged=counts.unchanged,
        ingested=counts.ingested,
        moved=counts.moved,
        reread=counts.reread,
        duplicates=capped(tally.duplicates, Duplicate),
        deleted=counts.deleted,
        proxies=counts.proxies,
        errors=capped(tally.errors, FileError),
        skipped=capped(walker.skipped, FileError),
        images=by_type["image"],
        videos=by_type["video"],
        proxies_renamed=tally.proxies_renamed,
        proxy_errors=capped(tally.proxy_errors, FileError),
        motion_photo_issues=capped(tally.motion_photo_issues, FileError),
        misnamed=capped(tally.misnamed, FileError),
        cut_short=capped(tally.cut_short, FileError),
        not_retried=capped(tally.not_retried, FileError),
        other_files=counts.other_files,
    )


async def _queue_burst_detection(crawl: Attempt) -> None:
    """In the fenced transaction: an attempt that lost its item queues nothing."""
    async with crawl.ctx.fenced() as conn:
        await crawl.services.store.enqueue_in(
            conn,
            BURST_DETECTION.name,
            config_id=crawl.config_id,
            dedup_key=BURST_DETECTION.dedup_key(crawl.config_id),
        )


async def _queue_place_fill(crawl: Attempt) -> None:
    """The place fill, when the config has assets with a position never looked up (rows
    of before migration 0023: the crawl looks up what it reads); in the fenced
    transaction, as the burst detection's."""
    async with crawl.ctx.fenced() as conn:
        if await places.any_unchecked(conn, crawl.config_id):
            await crawl.services.store.enqueue_in(
                conn,
                PLACE_FILL.name,
                config_id=crawl.config_id,
                dedup_key=PLACE_FILL.dedup_key(crawl.config_id),
            )


async def _queue_faces(crawl: Attempt) -> None:
    """With faces on (``SAFELIGHT_FACES=1``, ADR 0067): its config's faces, after the
    burst detection; in the fenced transaction, as above."""
    if not crawl.settings.finds_faces:
        return
    async with crawl.ctx.fenced() as conn:
        await crawl.services.store.enqueue_in(
            conn, FACES.name, config_id=crawl.config_id, dedup_key=FACES.dedup_key(crawl.config_id)
        )
