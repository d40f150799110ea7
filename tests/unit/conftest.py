"""Unit-test fixtures: a fake clock, a scripted store, and a check that the event loop
reported no error."""

from __future__ import annotations

import asyncio
import contextlib
import gc
from collections.abc import AsyncIterator
from typing import Any

import pytest

from safelight.testing.fakeclock import FakeClock
from safelight.testing.workstore import ScriptedStore


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


# --- the scripted store (safelight.testing.workstore) -----------------------------------


@pytest.fixture
def store(clock: FakeClock) -> ScriptedStore:
    return ScriptedStore(clock)
