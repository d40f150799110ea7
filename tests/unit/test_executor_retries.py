"""The executor's outcome of a failed handler with retry policies (ADR 0024), on a
FakeClock with a scripted store: a failure that may pass with attempts left is
``Retrying`` and writes ``retry_later`` with its backoff; the last attempt, a failure
that would repeat, and a kind with no policy fail; an attempt that was stopped is never
retried, whatever its handler raised."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import logging
from typing import Any

import pytest

from safelight.settings import Settings
from safelight.testing.fakeclock import FakeClock
from safelight.testing.items import ITEM
from safelight.testing.workstore import ScriptedStore
from safelight.work.context import Handler, HandlerContext
from safelight.work.errors import Retryable
from safelight.work.executor import Executor, RunResult
from safelight.work.model import WorkItem
from safelight.work.outcome import Fail, Failed, Released, Retrying, RetryLater, UnknownKind
from safelight.work.retry import Retries, RetryPolicy

pytestmark = pytest.mark.usefixtures("loop_errors", "unwind")

LOGGER = "test.executor.retries"
POLICY = RetryPolicy(max_attempts=3, delay_seconds=30.0, max_delay_seconds=600.0, jitter=0.5)
EIO = "OSError: [Errno 5] Input/output error"


class Draws:
    """The jitter's randomness: ``values`` in turn, each call recorded."""

    def __init__(self, *values: float) -> None:
        self.values = list(values)
        self.calls = 0

    def __call__(self) -> float:
        self.calls += 1
        return self.values.pop(0)


@pytest.fixture(autouse=True)
def _capture(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)


def logs(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == LOGGER]


def executor_of(
    store: ScriptedStore, clock: FakeClock, handler: Handler, retries: Retries | None
) -> Executor:
    """An executor that runs ``handler`` for crawl items, retrying by ``retries``."""
    return Executor(
        store,
        clock,
        {"crawl": handler},
        Settings().executor(),
        logging.getLogger(LOGGER),
        retries=retries,
    )


def make(store: ScriptedStore, clock: FakeClock, error: BaseException, draws: Draws) -> Executor:
    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        await clock.sleep(3)
        raise error

    return executor_of(store, clock, handler, Retries({"crawl": POLICY}, draws))


async def run(executor: Executor, clock: FakeClock, item: WorkItem = ITEM) -> RunResult:
    task = asyncio.create_task(executor.run(item))
    await clock.advance(3)
    assert task.done(), "run() has not returned"
    assert clock.deadlines() == []
    return task.result()


async def test_a_failure_that_may_pass_goes_back_to_the_queue_after_its_backoff(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    error = OSError(errno.EIO, "Input/output error")
    draws = Draws(0.5)
    result = await run(make(store, clock, error, draws), clock)
    # The first failure: 30 s, less half of the 50% jitter.
    assert result == RunResult(Retrying(EIO, 22.5), RetryLater(EIO, 22.5), True)
    assert store.calls == [(3.0, "retry_later", 7, 3, EIO, 22.5)]
    assert draws.calls == 1
    assert logs(caplog) == [
        (
            "WARNING",
            f"work item 7 attempt 3: failed ({EIO}); it may pass: it goes back to the queue "
            "and is tried again in 22.5 s",
        )
    ]
    (record,) = [r for r in caplog.records if r.name == LOGGER]
    assert record.exc_info is not None and record.exc_info[1] is error  # with its traceback


async def test_the_backoff_grows_with_the_items_retries(
    clock: FakeClock, store: ScriptedStore
) -> None:
    again = dataclasses.replace(ITEM, retries=1)
    executor = make(store, clock, Retryable("the share is not mounted"), Draws(0.0))
    result = await run(executor, clock, again)
    text = "Retryable: the share is not mounted"
    assert result == RunResult(Retrying(text, 60.0), RetryLater(text, 60.0), True)


async def test_the_last_attempt_fails_the_item_for_good(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    last = dataclasses.replace(ITEM, retries=2)
    draws = Draws()
    result = await run(
        make(store, clock, TimeoutError("the NAS did not answer"), draws), clock, last
    )
    text = "failed 3 times; last: TimeoutError: the NAS did not answer"
    assert result == RunResult(Failed(text), Fail(text), True)
    assert store.calls == [(3.0, "fail", 7, 3, text)]
    assert draws.calls == 0
    assert logs(caplog) == [("ERROR", f"work item 7 attempt 3: failed: {text}")]


async def test_a_failure_that_would_repeat_fails_at_once(
    clock: FakeClock, store: ScriptedStore
) -> None:
    error = PermissionError(errno.EACCES, "Permission denied")
    result = await run(make(store, clock, error, Draws()), clock)
    text = "PermissionError: [Errno 13] Permission denied"
    assert result == RunResult(Failed(text), Fail(text), True)


@pytest.mark.parametrize("retries", [Retries({"noop": POLICY}, Draws()), None])
async def test_a_kind_without_a_policy_is_not_retried(
    clock: FakeClock, store: ScriptedStore, retries: Retries | None
) -> None:
    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        raise OSError(errno.ESTALE, "Stale file handle")

    executor = executor_of(store, clock, handler, retries)
    task = asyncio.create_task(executor.run(ITEM))
    await clock.settle()
    text = "OSError: [Errno 116] Stale file handle"
    assert task.result() == RunResult(Failed(text), Fail(text), True)


async def test_an_unknown_kind_is_not_retried(clock: FakeClock, store: ScriptedStore) -> None:
    executor = make(store, clock, OSError(errno.EIO, "Input/output error"), Draws())
    purge = dataclasses.replace(ITEM, kind="purge")
    result = await executor.run(purge)
    assert result == RunResult(UnknownKind("purge"), Fail("no handler for kind purge"), True)


async def test_a_stopped_attempt_is_released_not_retried_whatever_its_handler_raised(
    clock: FakeClock, store: ScriptedStore
) -> None:
    async def handler(ctx: HandlerContext) -> dict[str, Any]:
        try:
            await clock.sleep(100)
        except asyncio.CancelledError:
            raise OSError(errno.EIO, "Input/output error") from None
        return {}

    draws = Draws()
    executor = executor_of(store, clock, handler, Retries({"crawl": POLICY}, draws))
    shutdown = asyncio.Event()
    task = asyncio.create_task(executor.run(ITEM, shutdown))
    await clock.advance(1)
    shutdown.set()
    await clock.settle()
    assert task.result().outcome == Released()
    assert [c[1] for c in store.calls] == ["release"]
    assert draws.calls == 0
