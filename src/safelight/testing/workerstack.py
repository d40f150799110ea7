"""The real engine (``build_engine``) on a test database and a FakeClock: its store and
executor, and Workers on them."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from psycopg_pool import AsyncConnectionPool

from safelight.app import Engine, WorkerOptions, build_engine
from safelight.handlers import Services, build_handlers
from safelight.settings import Settings
from safelight.testing.fakeclock import FakeClock
from safelight.testing.handlers import database_of
from safelight.work.context import Handler
from safelight.work.executor import Executor, RunResult
from safelight.work.model import WorkItem
from safelight.work.store import WorkStore
from safelight.work.worker import Worker

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
    engine: Engine
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
        """A Worker on the engine's store and executor, as the engine's own are made."""
        return Worker(
            self.store,
            self.executor,
            self.clock,
            self.settings.worker(worker_id, self.engine.kinds, owner=owner, until_idle=until_idle),
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

        await asyncio.wait_for(_wait(), timeout=30)  # noqa: TID251  # a real-time guard


def make_stack(
    pool: AsyncConnectionPool[Any],
    tmp_path: Path,
    handlers: Callable[[Services], Mapping[str, Handler]] = build_handlers,
) -> Stack:
    clock = FakeClock()
    settings = Settings(
        database_url="postgresql://unused",
        home=tmp_path / "home",
        lease_seconds=LEASE,
        heartbeat_seconds=HEARTBEAT,
        poll_seconds=POLL,
        decode_processes=0,
    )
    engine = build_engine(settings, database_of(pool), clock, WorkerOptions(), handlers=handlers)
    return Stack(pool, clock, engine.store, engine.executor, settings, engine)
