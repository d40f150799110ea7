"""``scrub`` (scoped, periodic): read a config's originals again, a budget of bytes at a
time, oldest check first, and report each whose content changed while its size and
modification time did not (ADR 0062).

Such a file is bit rot or tampering: it is recorded (``content_mismatch_at``,
``content_found_hash``) and reported by ``status``, the dashboard's configs page and the
``safelight_originals_changed`` gauge, never "fixed": the asset keeps its recorded hash
and its proxies, which show what the file held. A file whose size or time changed is the
crawl's (it reads it again), and a file that went is the crawl's too: both are counted
and left alone.

Each item reads at most the hourly budget times the scrub's interval (the first file of
a run excepted, so that an original larger than a run's budget is still checked, alone
in its run) and stops, and the next item goes on from the oldest check, which is where
this one stopped. Reads run at the disk's speed rather than spread over the interval: an
item holds its config (ADR 0008), and a scrub paced over the hour would keep the config's
crawls waiting for all of it.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from uuid import UUID

from safelight.handlers.contract import (
    HandlerContext,
    HandlerFailed,
    ThreadAlive,
    config_id_of,
    handler_failure,
    stop_if_cancelled,
)
from safelight.handlers.guards import active_config, check_config_root
from safelight.handlers.kind import Kind
from safelight.handlers.payloads import NoPayload
from safelight.handlers.services import Services
from safelight.library.catalogue import scrubbing
from safelight.library.catalogue.scrubbing import Checked, Cursor, Due
from safelight.library.files.confinement import describe_os_error
from safelight.library.files.originals import StorageRoot
from safelight.library.files.scrubbing import Found, reread
from safelight.settings import Settings
from safelight.work.kinds import Scope

PAGE = 200
"""Assets read from the order at a time; their findings are written in one fenced
transaction, so a lost lease costs at most a page's reads, done again next time."""
LISTED_AT_MOST = 100
"""Paths named in a result (changed, unreadable); the counts have them all."""


def bytes_per_run(settings: Settings) -> int:
    """What one scrub item may read: the hourly budget times the interval, in hours."""
    return max(1, int(settings.scrub_bytes_per_hour * settings.scrub_interval_seconds / 3600))


@dataclass(slots=True)
class Tally:
    budget: int
    checked: int = 0
    bytes_read: int = 0
    changed: list[str] = field(default_factory=list)
    edited: int = 0
    missing: int = 0
    unreadable: list[dict[str, str]] = field(default_factory=list)
    unreadable_count: int = 0
    budget_spent: bool = False

    def allows(self, size: int) -> bool:
        """Whether a file of ``size`` bytes fits what is left of the budget (the first
        of a run always does)."""
        return self.bytes_read == 0 or self.bytes_read + size <= self.budget

    def result(self) -> dict[str, Any]:
        return {
            "checked": self.checked,
            "bytes_read": self.bytes_read,
            "budget_bytes": self.budget,
            "budget_spent": self.budget_spent,
            "changed": len(self.changed),
            "changed_paths": self.changed[:LISTED_AT_MOST],
            "edited": self.edited,
            "missing": self.missing,
            "unreadable": self.unreadable_count,
            "errors": self.unreadable[:LISTED_AT_MOST],
        }

    def progress(self) -> dict[str, int]:
        return {
            "files": self.checked,
            "bytes": self.bytes_read,
            "changed": len(self.changed),
            "missing": self.missing,
        }


async def run_scrub(ctx: HandlerContext, services: Services, payload: NoPayload) -> dict[str, Any]:
    config_id = config_id_of(ctx)
    root = await _config_root(services, config_id)
    try:
        storage = await asyncio.to_thread(StorageRoot, root)
    except OSError as error:
        raise handler_failure(
            f"the storage root {root} cannot be opened: {describe_os_error(error)}", error
        ) from error
    try:
        tally = Tally(bytes_per_run(services.settings))
        await _scrub(ctx, services, config_id, storage, tally)
    finally:
        storage.close()
    ctx.progress(**tally.progress())
    return tally.result()


async def _config_root(services: Services, config_id: UUID) -> Path:
    async with services.pool.connection() as conn:
        config = await active_config(conn, config_id)
    await check_config_root(services, Path(config.root_path))
    root = Path(config.root_path)
    if not await asyncio.to_thread(root.is_dir):
        raise HandlerFailed(
            f"the storage root {root} is missing or not a folder (is the share mounted?); "
            "nothing was read"
        )
    return root


async def _scrub(
    ctx: HandlerContext, services: Services, config_id: UUID, storage: StorageRoot, tally: Tally
) -> None:
    alive = ThreadAlive(ctx)
    started = ctx.clock.now()
    after = Cursor()
    while True:
        async with services.pool.connection() as conn:
            page = await scrubbing.due_page(conn, config_id, started, after, PAGE)
        if not page:
            return
        checked: list[Checked] = []
        try:
            for due in page:
                stop_if_cancelled(ctx)
                if not tally.allows(due.recorded.size_bytes):
                    tally.budget_spent = True
                    return
                found = await _read(ctx, storage, due, alive, tally)
                if found is not None:
                    checked.append(found)
                after = Cursor(due.checked_at, due.id)
        finally:
            # Also when the budget or a stop ends the page: what was read is kept. (A
            # lost attempt's write raises AttemptLost here, and writes nothing.)
            await _write(ctx, config_id, checked, tally)


async def _read(
    ctx: HandlerContext, storage: StorageRoot, due: Due, alive: ThreadAlive, tally: Tally
) -> Checked | None:
    reread_ = await asyncio.to_thread(reread, storage, due.recorded, alive.check)
    tally.bytes_read += reread_.bytes_read
    match reread_.found:
        case Found.MISSING:
            tally.missing += 1
        case Found.EDITED:
            tally.edited += 1
        case Found.UNREADABLE:
            tally.unreadable_count += 1
            tally.unreadable.append({"path": due.recorded.relative, "reason": str(reread_.reason)})
        case Found.INTACT:
            tally.checked += 1
            return Checked(due, None)
        case Found.CHANGED:
            tally.checked += 1
            return Checked(due, reread_.content_hash)
    return None


async def _write(
    ctx: HandlerContext, config_id: UUID, checked: list[Checked], tally: Tally
) -> None:
    if not checked:
        return
    async with ctx.fenced() as conn:
        newly = await scrubbing.write_checked(conn, config_id, checked, ctx.clock.now())
    by_id = {c.due.id: c for c in checked}
    for asset_id in newly:
        one = by_id[asset_id]
        ctx.logger.warning(
            "scrub: %s changed without its size or modification time changing (bit rot "
            "or tampering): recorded hash %s, found %s; reported, not changed",
            one.due.recorded.relative,
            one.due.recorded.content_hash,
            one.found_hash,
        )
    tally.changed.extend(c.due.recorded.relative for c in checked if c.found_hash is not None)
    ctx.progress(**tally.progress())


SCRUB = Kind(
    "scrub",
    Scope.REQUIRED,
    run_scrub,
    interval=lambda settings: settings.scrub_interval_seconds,
    heavy=True,  # it reads the originals at the disk's speed (ADR 0060)
)
