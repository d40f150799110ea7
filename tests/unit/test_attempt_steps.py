"""The executor's steps, each on its own: an attempt made starts nothing, the verdict is a
pure function of how the handler ended and why the attempt stopped, and every line of an
attempt's log names its item and attempt through one adapter."""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import psycopg
import pytest

from safelight.logs import JsonFormatter, SecretMasker
from safelight.settings import Settings
from safelight.testing.fakeclock import FakeClock
from safelight.testing.items import ITEM
from safelight.testing.workstore import ScriptedStore
from safelight.work.attemptlog import AttemptLog, attempt_fields
from safelight.work.context import HandlerContext
from safelight.work.errors import AttemptStopped, StopReason
from safelight.work.executor import Executor, _Attempt, _Ending, verdict
from safelight.work.outcome import (
    Cancelled,
    Failed,
    Interrupted,
    Lost,
    Released,
    SelfStopped,
    Succeeded,
)

RESULT = {"files": 3}
RETURNED = _Ending(cancelled=False, error=None, result=RESULT)
CANCELLED = _Ending(cancelled=True, error=None, result=None)
RAISED = _Ending(cancelled=False, error=RuntimeError("disk on fire"), result=None)
STOPPED = _Ending(cancelled=False, error=AttemptStopped(StopReason.SHUTDOWN), result=None)
DB_GONE = _Ending(
    cancelled=False, error=psycopg.OperationalError("server closed the connection"), result=None
)


# --- an attempt made, not started ------------------------------------------------------


async def test_making_an_attempt_starts_no_task_and_arms_no_timer() -> None:
    clock = FakeClock()
    calls: list[HandlerContext] = []

    async def handler(ctx: HandlerContext) -> dict[str, Any] | None:
        calls.append(ctx)
        return None

    executor = Executor(
        ScriptedStore(clock),
        clock,
        {"crawl": handler},
        Settings().executor(),
        logging.getLogger("test.steps"),
    )
    tasks_before = asyncio.all_tasks()
    attempt = _Attempt(executor, ITEM, handler, AttemptLog(logging.getLogger("t"), ITEM))
    await asyncio.sleep(0)
    assert asyncio.all_tasks() == tasks_before
    assert clock.deadlines() == []
    assert calls == []
    del attempt


# --- the verdict -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ending", "reason", "expected"),
    [
        (RETURNED, None, Succeeded(RESULT)),
        (
            CANCELLED,
            None,
            Failed("CancelledError: the handler was cancelled while its attempt was not stopped"),
        ),
        (RAISED, None, Failed("RuntimeError: disk on fire")),
        (DB_GONE, None, Interrupted("OperationalError: server closed the connection")),
        # A stopped attempt: why it stopped decides, whatever the handler did.
        (RETURNED, StopReason.LOST, Lost()),
        (RAISED, StopReason.LOST, Lost()),
        (RETURNED, StopReason.SELF_STOPPED, SelfStopped()),
        (DB_GONE, StopReason.SELF_STOPPED, SelfStopped()),
        # Finished before it noticed a request to stop: the work is kept.
        (RETURNED, StopReason.CANCEL_REQUESTED, Succeeded(RESULT)),
        (RETURNED, StopReason.SHUTDOWN, Succeeded(RESULT)),
        (CANCELLED, StopReason.CANCEL_REQUESTED, Cancelled()),
        (STOPPED, StopReason.CANCEL_REQUESTED, Cancelled()),
        (RAISED, StopReason.CANCEL_REQUESTED, Cancelled()),
        (CANCELLED, StopReason.SHUTDOWN, Released()),
        (STOPPED, StopReason.SHUTDOWN, Released()),
        (DB_GONE, StopReason.SHUTDOWN, Released()),
    ],
)
def test_the_verdict(ending: _Ending, reason: StopReason | None, expected: object) -> None:
    assert verdict(ending, reason) == expected


def test_the_verdict_logs_nothing(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    for ending in (RETURNED, CANCELLED, RAISED, STOPPED, DB_GONE):
        for reason in (None, *StopReason):
            verdict(ending, reason)
    assert caplog.records == []


async def test_an_ending_read_off_its_task() -> None:
    async def returns() -> dict[str, Any] | None:
        return RESULT

    async def raises() -> dict[str, Any] | None:
        raise RuntimeError("disk on fire")

    async def waits() -> dict[str, Any] | None:
        await asyncio.Event().wait()
        return None

    done = asyncio.create_task(returns())
    failed = asyncio.create_task(raises())
    cancelled = asyncio.create_task(waits())
    await asyncio.sleep(0)
    cancelled.cancel()
    await asyncio.wait({done, failed, cancelled})
    assert _Ending.of(done) == RETURNED
    ending = _Ending.of(failed)
    assert (ending.cancelled, type(ending.error), ending.result) == (False, RuntimeError, None)
    assert _Ending.of(cancelled) == CANCELLED


# --- the attempt's log -----------------------------------------------------------------


def test_every_line_names_its_item_and_attempt(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="test.steps")
    log = AttemptLog(logging.getLogger("test.steps"), ITEM)
    log.warning("heartbeat failed (%d in a row): %s", 2, "down")
    log.info("ended", extra={"outcome": "succeeded", "seconds": 1.5})
    first, second = caplog.records
    assert first.getMessage() == "work item 7 attempt 3: heartbeat failed (2 in a row): down"
    fields = attempt_fields(ITEM)
    assert fields == {
        "item_id": 7,
        "kind": "crawl",
        "attempt": 3,
        "storage_config_id": ITEM.storage_config_id,
    }
    for name, value in fields.items():
        assert getattr(first, name) == value
        assert getattr(second, name) == value
    # A call's own extra fields are added, not put in the attempt's place.
    assert (second.outcome, second.seconds) == ("succeeded", 1.5)  # type: ignore[attr-defined]
    assert not hasattr(first, "outcome")


def test_the_json_format_writes_the_attempts_fields(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="test.steps")
    AttemptLog(logging.getLogger("test.steps"), ITEM).info("claimed")
    line = json.loads(JsonFormatter(SecretMasker()).format(caplog.records[0]))
    assert line["message"] == "work item 7 attempt 3: claimed"
    assert (line["item_id"], line["kind"], line["attempt"]) == (7, "crawl", 3)
    assert line["storage_config_id"] == str(ITEM.storage_config_id)
