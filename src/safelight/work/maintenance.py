"""Maintenance services: lease recovery and the scheduler of periodic kinds.

Each has a ``run_once()`` that tests call directly, and a thin loop on the injected
clock. Every Worker process runs both: whichever does the work first does it, and the
database makes sure nothing is done twice (SKIP LOCKED for recovery, the schedule row
for periodic kinds).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import psycopg

from safelight.core.clock import Clock
from safelight.work.errors import describe_briefly
from safelight.work.model import RecoveryReport
from safelight.work.store import WorkStore

_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Periodic:
    """An unscoped kind enqueued once every ``interval_seconds`` across all Workers."""

    kind: str
    interval_seconds: float


@dataclass(frozen=True, slots=True)
class ScheduleSettings:
    crawl_interval_seconds: float = 4 * 3600.0
    periodic: tuple[Periodic, ...] = ()


class LeaseRecovery:
    def __init__(self, store: WorkStore) -> None:
        self._store = store

    async def run_once(self) -> RecoveryReport:
        report = await self._store.recover_expired_leases()
        if report.total:
            _log.info(
                "lease recovery: %d requeued, %d failed as stalled, %d superseded",
                report.requeued,
                report.failed,
                report.superseded,
            )
        return report


class Scheduler:
    """Enqueues the periodic kinds, and a crawl of every active config it serves."""

    def __init__(
        self, store: WorkStore, settings: ScheduleSettings, *, owner: str | None = None
    ) -> None:
        self._store = store
        self._settings = settings
        self._owner = owner

    async def run_once(self) -> list[int]:
        """Enqueue whatever is due now; return the ids enqueued."""
        enqueued: list[int] = []
        for periodic in self._settings.periodic:
            if periodic.kind not in self._store.kind_names:
                continue
            item = await self._store.schedule_if_due(
                periodic.kind, periodic.kind, periodic.interval_seconds
            )
            if item is not None:
                enqueued.append(item)
        if "crawl" in self._store.kind_names:
            for config_id in await self._store.active_config_ids(self._owner):
                item = await self._store.schedule_if_due(
                    f"crawl:{config_id}",
                    "crawl",
                    self._settings.crawl_interval_seconds,
                    config_id=config_id,
                )
                if item is not None:
                    enqueued.append(item)
        return enqueued


async def every(
    clock: Clock, seconds: float, name: str, action: Callable[[], Awaitable[object]]
) -> None:
    """Run ``action()`` now and then every ``seconds`` until cancelled.

    A failure (the database is away) is logged and retried at the next round; it
    never ends the loop.
    """
    while True:
        try:
            await action()
        except (psycopg.Error, OSError, TimeoutError) as exc:
            _log.warning("%s failed (%s); retrying in %g s", name, describe_briefly(exc), seconds)
        await clock.sleep(seconds)
