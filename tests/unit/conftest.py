"""Unit-test fixtures: a fake clock, and a check that the event loop reported no error."""

from __future__ import annotations

import asyncio
import gc
from collections.abc import AsyncIterator
from typing import Any

import pytest

from safelight.work.fakeclock import FakeClock


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
    yield errors
    gc.collect()
    await asyncio.sleep(0)
    loop.set_exception_handler(None)
    assert errors == []
