"""The database of a safelight process: opened (and migrated) with a pool sized for its
Workers, and, for a Worker, waited for while the server starts.

Apart from ``safelight.app`` so that the commands that only read the catalogue or the
queue (``status``, ``items``, ``config list``) open their database without importing the
engine's handlers and decoders (ADR 0063).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from safelight.core.clock import Clock
from safelight.db.database import Database, DatabaseUnavailable, open_database
from safelight.settings import Settings
from safelight.work.backoff import Backoff

# The name these lines had before they moved here: operators' filters and docs know it.
_log = logging.getLogger("safelight.app")

T = TypeVar("T")


def pool_size(settings: Settings, concurrency: int) -> int:
    """Connections one process needs: per Worker a claim/heartbeat connection and one
    per concurrent file of its handler and one its crawl's walk holds (reading the
    config's assets in path order), plus maintenance. Too few would make heartbeats
    wait for a connection behind the handler's writes."""
    return concurrency * (3 + settings.max_concurrent_files) + 2


async def open_app_database(
    settings: Settings,
    *,
    concurrency: int = 2,
    run_migrations: bool = True,
    resolved: tuple[str, Any] | None = None,
) -> Database:  # pragma: no mutate block
    """Open (and migrate, unless told not to) the configured database, or the embedded
    one; ``resolved`` as :func:`~safelight.db.database.open_database` takes it."""
    return await open_database(
        settings.database_url,
        settings.home,
        run_migrations=run_migrations,
        max_size=pool_size(settings, concurrency),
        # A transaction left open by a Worker cut off mid-write must not hold its item
        # past half a lease: recovery (after a full lease) skips locked rows.
        idle_in_transaction_seconds=settings.lease_seconds / 2,
        resolved=resolved,
    )


async def open_when_ready(
    open_once: Callable[[], Awaitable[T]], settings: Settings, clock: Clock
) -> T:
    """``open_once()`` (opening the database), tried again for as long as it fails in a way
    that passes by waiting (the server still starting, ``db.availability``): one warning
    line a try, after the wait of a Worker's own backoff, ``poll_seconds`` doubling up to
    ``outage_backoff_max_seconds``. A failure that will not pass is raised at once."""
    backoff = Backoff(settings.poll_seconds, settings.outage_backoff_max_seconds)
    while True:
        try:
            return await open_once()
        except DatabaseUnavailable as exc:
            if not exc.transient:
                raise
            wait = backoff.failed()
            _log.warning("%s; trying again in %g s", exc, wait)
        await clock.sleep(wait)
