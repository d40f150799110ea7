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
from uuid import UUID

import psycopg

from safelight.core.clock import Clock
from safelight.work.backoff import Backoff
from safelight.work.errors import describe_briefly
from safelight.work.model import RecoveryReport
from safelight.work.observer import NO_OBSERVER, EngineObserver
from safelight.work.store import WorkStore

_log = logging.getLogger(__name__)

# What a maintenance round survives by trying again later: the database being away, and
# any answer of the database's, which may differ next round (a config deleted between
# the scheduler's two statements fails the second with a foreign-key violation). A
# Python exception is a bug in the round, and ends the process.
RETRIED_ERRORS: tuple[type[BaseException], ...] = (psycopg.Error, OSError, TimeoutError)


@dataclass(frozen=True, slots=True)
class Periodic:
    """An unscoped kind enqueued once every ``interval_seconds`` across all Workers, under
    a schedule (and dedup key) named after the kind."""

    kind: str
    interval_seconds: float


@dataclass(frozen=True, slots=True)
class PerConfig:
    """A scoped kind enqueued once every ``interval_seconds`` for each active config,
    under the schedule (and dedup key) ``schedule_name(config_id)``."""

    kind: str
    interval_seconds: float
    schedule_name: Callable[[UUID], str]


@dataclass(frozen=True, slots=True)
class ScheduleSettings:
    """What the scheduler enqueues, and how often (the domain's kinds table says)."""

    periodic: tuple[Periodic, ...] = ()
    per_config: tuple[PerConfig, ...] = ()


class LeaseRecovery:
    def __init__(self, store: WorkStore, observer: EngineObserver = NO_OBSERVER) -> None:
        self._store = store
        self._observer = observer

    async def run_once(self) -> RecoveryReport:
        report = await self._store.recover_expired_leases()
        self._observer.leases_recovered(report)
        if report.total:
            _log.info(
                "lease recovery: %d requeued, %d failed as stalled, %d superseded",
                report.requeued,
                report.failed,
                report.superseded,
            )
        return report


class Scheduler:
    """Enqueues each periodic kind, then each per-config kind for every active config it
    serves, whenever its period is due. A kind the store does not know is skipped."""

    def __init__(
        self, store: WorkStore, settings: ScheduleSettings, *, owner: str | None = None
    ) -> None:
        self._store = store
        self._settings = settings
        self._owner = owner

    async def run_once(self) -> list[int]:
        """Enqueue whatever is due now; return the ids enqueued."""
        known = self._store.kind_names
        enqueued: list[int] = []
        for periodic in self._settings.periodic:
            if periodic.kind not in known:
                continue
            item = await self._store.schedule_if_due(
                periodic.kind, periodic.kind, periodic.interval_seconds
            )
            if item is not None:
                enqueued.append(item)
        per_config = [p for p in self._settings.per_config if p.kind in known]
        if not per_config:
            return enqueued
        config_ids = await self._store.active_config_ids(self._owner)
        for scoped in per_config:
            for config_id in config_ids:
                item = await self._store.schedule_if_due(
                    scoped.schedule_name(config_id),
                    scoped.kind,
                    scoped.interval_seconds,
                    config_id=config_id,
                )
                if item is not None:
                    enqueued.append(item)
        return enqueued


async def every(
    clock: Clock,
    seconds: float,
    name: str,
    action: Callable[[], Awaitable[object]],
    *,
    backoff_max_seconds: float,
) -> None:
    """Run ``action()`` now and then every ``seconds`` until cancelled.

    A database error or an outage (:data:`RETRIED_ERRORS`) is logged in one line and
    retried, ``seconds`` after the first failure in a row and twice as
    long after each next one, up to ``backoff_max_seconds``; a success brings back the
    period. Anything else is a bug: it ends the loop, for the supervisor to log with its
    traceback and end the process (docs/operations.md).
    """
    backoff = Backoff(seconds, backoff_max_seconds)
    while True:
        try:
            await action()
        except RETRIED_ERRORS as exc:
            wait = backoff.failed()
            _log.warning("%s failed (%s); retrying in %g s", name, describe_briefly(exc), wait)
        else:
            backoff.succeeded()
            wait = seconds
        await clock.sleep(wait)
