"""The one fake of :class:`~safelight.work.executor.Executor`, for Workers run on a
:class:`~safelight.testing.fakeclock.FakeClock` by the Worker-loop, supervisor and
observer tests.

Its :meth:`FakeExecutor.run` has the real executor's signature; the function at the
bottom makes mypy check that it still does.
"""

from __future__ import annotations

import asyncio
import logging
from typing import cast

from safelight.core.clock import Clock
from safelight.work.attemptlog import AttemptLog
from safelight.work.executor import Executor, RunResult, Shutdown, Written
from safelight.work.model import WorkItem
from safelight.work.outcome import Complete, Release, Released, Succeeded


class FakeExecutor:
    """Records each run (``ran``: the item's id and the shutdown watch it was handed;
    ``claimed_at``) and sets ``started``.

    By default an item succeeds at once with ``{"id": <its id>}``. With ``gate`` it runs
    until the gate is set, then succeeds (``finished``). With ``until_shutdown`` it runs
    until the Worker's shutdown watch fires, then releases the item as the real executor
    does (``released``). With ``ignore_shutdown`` it runs until cancelled.
    """

    def __init__(
        self,
        *,
        gate: asyncio.Event | None = None,
        until_shutdown: bool = False,
        ignore_shutdown: bool = False,
        write_clock: Clock | None = None,
    ) -> None:
        self.gate = gate
        self.until_shutdown = until_shutdown
        self.ignore_shutdown = ignore_shutdown
        self.started = asyncio.Event()
        self.ran: list[tuple[int, Shutdown | None]] = []
        self.claimed_at: list[float | None] = []
        self.released: list[int] = []
        self.finished: list[int] = []
        # Outcomes on their way: item id -> the future of its write's answer.
        self.answers: dict[int, asyncio.Future[bool]] = {}
        self.write_clock = write_clock
        self.write_seconds = 10.0

    async def run_to_write(
        self,
        item: WorkItem,
        shutdown: Shutdown | None = None,
        *,
        claimed_at: float | None = None,
    ) -> Written:
        """:meth:`run`, its answer ready at once unless ``answers`` holds a future for
        it (``answers[item.id]``, resolved by the test: an outcome still on its way)."""
        result = await self.run(item, shutdown, claimed_at=claimed_at)
        pending = self.answers.get(item.id)
        if pending is None:
            return Written.answered(result)
        assert self.write_clock is not None, "an outcome on its way needs write_clock"
        return Written(
            self.write_clock,
            self.write_seconds,
            result.outcome,
            Complete({"id": item.id}),
            pending,
            AttemptLog(logging.getLogger(__name__), item),
        )

    async def run(
        self,
        item: WorkItem,
        shutdown: Shutdown | None = None,
        *,
        claimed_at: float | None = None,
    ) -> RunResult:
        self.ran.append((item.id, shutdown))
        self.claimed_at.append(claimed_at)
        self.started.set()
        succeeded = RunResult(outcome=Succeeded({"id": item.id}), write=None, applied=True)
        if self.gate is None and not (self.until_shutdown or self.ignore_shutdown):
            return succeeded
        # A Worker's loop hands its attempts its watch of the shutdown
        # (executor.shutdown_watch).
        assert isinstance(shutdown, asyncio.Future)
        if self.ignore_shutdown:
            await asyncio.Event().wait()
        if self.gate is not None:
            await self.gate.wait()
            self.finished.append(item.id)
            return succeeded
        await asyncio.shield(shutdown)
        self.released.append(item.id)
        return RunResult(Released(), Release(), True)


def as_executor(executor: FakeExecutor) -> Executor:
    """``executor`` where the Worker asks for the real one (it names the class)."""
    return cast(Executor, executor)


def _the_fake_runs_as_the_real_one(real: Executor, fake: FakeExecutor) -> object:
    """Never called: mypy checks the fake's run() against the real one's."""
    run = real.run
    run = fake.run
    to_write = real.run_to_write
    to_write = fake.run_to_write
    return run, to_write
