"""The real engine stack on a test database and a FakeClock: store, handlers, executor."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from psycopg_pool import AsyncConnectionPool

from safelight.handlers import KIND_SPECS, Services, build_handlers
from safelight.settings import Settings
from safelight.testing.fakeclock import FakeClock
from safelight.work.executor import Executor, ExecutorSettings, RunResult
from safelight.work.model import WorkItem
from safelight.work.store import WorkStore
from safelight.work.worker import Worker, WorkerSettings

LEASE = 60.0
HEARTBEAT = 10.0
POLL = 5.0


@dataclass
class Stack:
    pool: AsyncConnectionPool[Any]
    clock: FakeClock
    store: WorkStore
    executor: Executor
    settings: Settings
    finished: list[tuple[WorkItem, RunResult]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)

    def on_finished(self, item: WorkItem, result: RunResult) -> None:
        self.finished.append((item, result))
        self.changed.set()

    def worker(
        self,
        worker_id: str,
        *,
        owner: str | None = None,
        until_idle: bool = False,
        wake: asyncio.Event | None = None,
        after_item: Callable[[], object] | None = None,
    ) -> Worker:
        return Worker(
            self.store,
            self.executor,
            self.clock,
            WorkerSettings(
                worker_id=worker_id,
                kinds=frozenset(s.name for s in KIND_SPECS),
                owner=owner,
                lease_seconds=LEASE,
                poll_seconds=POLL,
                until_idle=until_idle,
            ),
            wake=wake,
            on_finished=self.on_finished,
            after_item=after_item,
        )

    async def wait_finished(self, count: int) -> None:
        """Wait (bounded by a real guard, not a tested deadline) for ``count`` items."""

        async def _wait() -> None:
            while len(self.finished) < count:
                self.changed.clear()
                await self.changed.wait()

        await asyncio.wait_for(_wait(), timeout=30)


def make_stack(pool: AsyncConnectionPool[Any], tmp_path: Path) -> Stack:
    clock = FakeClock()
    settings = Settings(
        database_url="postgresql://unused",
        home=tmp_path / "home",
        lease_seconds=LEASE,
        heartbeat_seconds=HEARTBEAT,
        poll_seconds=POLL,
    )
    store = WorkStore(pool, clock, KIND_SPECS, max_stalls=3)
    services = Services(pool=pool, store=store, clock=clock, settings=settings)
    executor = Executor(
        store,
        clock,
        build_handlers(services),
        ExecutorSettings(
            lease_seconds=LEASE, heartbeat_seconds=HEARTBEAT, shutdown_grace_seconds=10.0
        ),
        logging.getLogger("test.executor"),
    )
    return Stack(pool, clock, store, executor, settings)
