"""Unit-test fixtures: a fake clock, a scripted store, a work item, and a check that the
event loop reported no error."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any
from uuid import UUID

import pytest

from safelight.testing.fakeclock import FakeClock
from safelight.work.model import Beat
from tests.items import running_item


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
async def loop_errors() -> AsyncIterator[list[dict[str, Any]]]:
    """Fail the test if its event loop reported an error.

    Opt in per module (``pytestmark = pytest.mark.usefixtures("loop_errors")``) so
    other suites' synchronous tests are not given an event loop they did not ask for.

    asyncio does not raise "Task exception was never retrieved", "Task was destroyed but
    it is pending!" or an exception in a callback: it hands them to the loop's exception
    handler, which only logs them, so ``filterwarnings = error`` cannot catch them. This
    collects them instead; the garbage collection at the end makes the "never
    retrieved" and "destroyed" reports happen while the test still owns the loop.
    """
    loop = asyncio.get_running_loop()
    errors: list[dict[str, Any]] = []
    loop.set_exception_handler(lambda _loop, context: errors.append(context))
    # Only what this test creates needs collecting: freezing the rest keeps the full
    # collection below at a millisecond instead of scanning every module ever loaded.
    gc.freeze()
    yield errors
    gc.collect()
    await asyncio.sleep(0)
    loop.set_exception_handler(None)
    assert errors == []


@pytest.fixture
async def unwind(clock: FakeClock) -> AsyncIterator[None]:
    """After a failed test, end what it left running.

    Closing the event loop cancels every task once and then waits for all of them, so
    a handler parked on the fake clock, or one that ignores a cancellation, would hang
    the run (and turn a mutant that a test caught into a timeout). Opt in like
    ``loop_errors``; a passing test leaves nothing, and then this does nothing.
    """
    yield
    for _ in range(3):
        for task in asyncio.all_tasks() - {asyncio.current_task()}:
            task.cancel()
        # Real-time bound: a test that failed in a busy loop of timers would hang here.
        with contextlib.suppress(Exception):
            await asyncio.wait_for(clock.advance(3600), 1)


# --- a scripted AttemptStore -------------------------------------------------------------

HANG: Any = "hang"
"""A scripted reply that never comes: the call waits until it is cancelled.

Compared by equality, not identity: pytest imports this file as ``conftest`` (there is
no ``tests/unit/__init__.py``) while test modules import ``tests.unit.conftest``, so
module-level objects exist twice. For the same reason tests compare ``ITEM`` with ``==``.
"""


def at(clock: FakeClock) -> float:
    """Seconds since the fake clock's start, rounded to the microsecond for comparisons."""
    return round(clock.monotonic() - 1000.0, 6)


class ScriptedStore:
    """A fake :class:`~safelight.work.context.AttemptStore` that records every call.

    ``calls`` holds ``(seconds since start, name, *arguments)`` in call order. Heartbeats
    answer from ``beats`` in order, then ``beat_default``; writes answer ``writes``. A
    reply may be a value, an exception to raise, an ``asyncio.Future`` to await (the
    test resolves it), or :data:`HANG`. ``abandoned`` records when a hanging call was
    cancelled.
    """

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.calls: list[tuple[Any, ...]] = []
        self.beats: list[Any] = []
        self.beat_default: Any = Beat.ALIVE
        self.writes: Any = True
        self.fenced_error: BaseException | None = None
        self.connection: Any = object()
        self.abandoned: list[tuple[float, str]] = []
        self.beat_progress: list[tuple[float, dict[str, Any]]] = []
        """The progress each heartbeat carried (kept apart from ``calls``), with its time."""

    async def _answer(self, name: str, reply: Any) -> Any:
        if isinstance(reply, str) and reply == HANG:
            try:
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                self.abandoned.append((at(self.clock), name))
                raise
        if isinstance(reply, asyncio.Future):
            return await reply
        if isinstance(reply, BaseException):
            raise reply
        return reply

    async def heartbeat(
        self,
        item_id: int,
        attempt: int,
        lease_seconds: float,
        progress: Mapping[str, Any] | None = None,
    ) -> Beat:
        self.calls.append((at(self.clock), "heartbeat", item_id, attempt, lease_seconds))
        if progress is not None:
            self.beat_progress.append((at(self.clock), dict(progress)))
        reply = self.beats.pop(0) if self.beats else self.beat_default
        beat: Beat = await self._answer("heartbeat", reply)
        return beat

    async def save_progress(self, item_id: int, attempt: int, progress: Mapping[str, Any]) -> bool:
        return await self._write("save_progress", item_id, attempt, dict(progress))

    async def _write(self, name: str, *args: Any) -> bool:
        self.calls.append((at(self.clock), name, *args))
        applied: bool = await self._answer(name, self.writes)
        return applied

    async def complete(self, item_id: int, attempt: int, result: dict[str, Any] | None) -> bool:
        return await self._write("complete", item_id, attempt, result)

    async def fail(self, item_id: int, attempt: int, error: str) -> bool:
        return await self._write("fail", item_id, attempt, error)

    async def retry_later(
        self, item_id: int, attempt: int, error: str, delay_seconds: float
    ) -> bool:
        return await self._write("retry_later", item_id, attempt, error, delay_seconds)

    async def retry(self, item_id: int, attempt: int, error: str) -> bool:
        return await self._write("retry", item_id, attempt, error)

    async def cancel(self, item_id: int, attempt: int) -> bool:
        return await self._write("cancel", item_id, attempt)

    async def release(self, item_id: int, attempt: int) -> bool:
        return await self._write("release", item_id, attempt)

    def fenced(self, item_id: int, attempt: int) -> AbstractAsyncContextManager[Any]:
        self.calls.append((at(self.clock), "fenced", item_id, attempt))
        return self._fenced()

    @asynccontextmanager
    async def _fenced(self) -> AsyncIterator[Any]:
        if self.fenced_error is not None:
            raise self.fenced_error
        yield self.connection


@pytest.fixture
def store(clock: FakeClock) -> ScriptedStore:
    return ScriptedStore(clock)


ITEM = running_item(
    id=7,
    attempt=3,
    config=UUID("00000000-0000-4000-8000-000000000001"),
    payload={"root": "/photos/ann"},
    worker_id="worker-a",
)
