"""Cancel requests heard by notification (ADR 0070): the registry, the listener's
dispatch, and the executor stopping an attempt at once, or before its handler starts.

On a FakeClock with a scripted store: that the clock never moves proves the stop came
from the notification, not from a heartbeat (due 10 s after the claim).
"""

from __future__ import annotations

import asyncio
import logging
from functools import partial
from typing import Any

import pytest

from safelight.settings import Settings
from safelight.testing.fakeclock import FakeClock
from safelight.testing.items import ITEM
from safelight.testing.workstore import ScriptedStore
from safelight.work import cancels
from safelight.work.cancels import CancelRequests, parse
from safelight.work.context import HandlerContext
from safelight.work.executor import Executor, RunResult
from safelight.work.outcome import Cancel, Cancelled, Complete, Succeeded
from safelight.work.wakeup import Listener, WakeupHub

pytestmark = pytest.mark.usefixtures("loop_errors", "unwind")

LOGGER = "test.cancels"
TEXT = f"{ITEM.id}:{ITEM.attempt}"


class Handler:
    """Records its start, then waits until it is cancelled or let go."""

    def __init__(self) -> None:
        self.started: list[int] = []
        self.cancelled = False
        self.go = asyncio.Event()

    async def __call__(self, ctx: HandlerContext) -> dict[str, Any] | None:
        self.started.append(ctx.item.id)
        try:
            await self.go.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return {"done": True}


def executor(
    store: ScriptedStore, clock: FakeClock, handler: Handler, heard: CancelRequests | None
) -> Executor:
    return Executor(
        store,
        clock,
        {"crawl": handler},
        Settings().executor(),
        logging.getLogger(LOGGER),
        cancels=heard,
    )


# --- the payload and the registry ---------------------------------------------------


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("7:3", (7, 3)),
        ("123456789012:1", (123456789012, 1)),
        ("7", None),
        ("7:", None),
        (":3", None),
        ("7:3:1", None),
        ("a:3", None),
        ("7:-3", None),
        ("-7:3", None),
        (" 7:3", None),
        ("", None),
    ],
    ids=lambda v: repr(v),
)
def test_a_payload_names_one_attempt_or_nothing(text: str, key: tuple[int, int] | None) -> None:
    assert parse(text) == key


def test_a_request_heard_stops_the_attempt_watching_it_and_no_other() -> None:
    heard = CancelRequests()
    stops: list[str] = []
    heard.watch(7, 3, lambda: stops.append("7:3"))
    heard.watch(8, 1, lambda: stops.append("8:1"))
    heard.heard("7:2")  # an earlier attempt of the same item
    heard.heard("9:3")
    assert stops == []
    heard.heard("7:3")
    assert stops == ["7:3"]


def test_a_request_heard_before_the_watch_stops_the_attempt_as_it_begins() -> None:
    heard = CancelRequests()
    heard.heard("7:3")
    stops: list[str] = []
    heard.watch(7, 3, lambda: stops.append("stop"))
    assert stops == ["stop"]


def test_an_attempt_that_ended_forgets_its_request() -> None:
    heard = CancelRequests()
    heard.heard("7:3")
    heard.unwatch(7, 3)
    stops: list[str] = []
    heard.watch(7, 3, lambda: stops.append("stop"))
    assert stops == []
    heard.unwatch(7, 3)
    heard.heard("7:3")
    assert stops == []  # no longer watched


def test_only_the_last_requests_are_kept() -> None:
    heard = CancelRequests(kept=2)
    for text in ("1:1", "2:1", "1:1", "3:1"):  # 1:1 heard again: the newest but one
        heard.heard(text)
    stops: list[int] = []
    for item_id in (1, 2, 3):
        heard.watch(item_id, 1, partial(stops.append, item_id))
    assert stops == [1, 3]


def test_a_malformed_payload_is_reported_and_stops_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    heard = CancelRequests()
    stops: list[str] = []
    heard.watch(7, 3, lambda: stops.append("stop"))
    heard.heard("7;3")
    assert stops == []
    assert [r.getMessage() for r in caplog.records if r.name == "safelight.work.cancels"] == [
        "ignoring a cancel notification with a malformed payload: '7;3'"
    ]


# --- the listener's dispatch --------------------------------------------------------


def _listener(heard: CancelRequests | None) -> tuple[Listener, asyncio.Event]:
    hub = WakeupHub()
    wake = hub.subscribe()
    listener = Listener(
        "postgresql://unused",
        hub,
        FakeClock(),
        retry_seconds=5,
        retry_max_seconds=60,
        cancels=heard,
    )
    return listener, wake


def test_the_listener_hands_a_cancel_on_and_wakes_no_worker_for_it() -> None:
    heard = CancelRequests()
    listener, wake = _listener(heard)
    stops: list[str] = []
    heard.watch(7, 3, lambda: stops.append("stop"))
    listener.heard(cancels.CHANNEL, "7:3")
    assert (stops, wake.is_set()) == (["stop"], False)


def test_the_listener_wakes_the_workers_for_work() -> None:
    heard = CancelRequests()
    listener, wake = _listener(heard)
    stops: list[str] = []
    heard.watch(7, 3, lambda: stops.append("stop"))
    listener.heard("safelight_work", "7:3")
    assert (stops, wake.is_set()) == ([], True)


def test_a_listener_without_cancels_wakes_the_workers() -> None:
    listener, wake = _listener(None)
    listener.heard(cancels.CHANNEL, "7:3")
    assert wake.is_set()


# --- the executor -------------------------------------------------------------------


async def test_a_cancel_heard_before_the_attempt_starts_means_its_handler_never_runs(
    clock: FakeClock, store: ScriptedStore
) -> None:
    """An item claimed beside its Worker's last outcome waits for that outcome's answer
    before it starts (ADR 0069): a cancel heard meanwhile takes effect before it starts."""
    heard = CancelRequests()
    heard.heard(TEXT)
    handler = Handler()
    result = await executor(store, clock, handler, heard).run(ITEM)
    assert result == RunResult(Cancelled(), Cancel(), True)
    assert handler.started == []
    assert store.calls == [(0.0, "cancel", ITEM.id, ITEM.attempt)]
    assert clock.deadlines() == []


async def test_a_cancel_heard_while_the_attempt_runs_stops_it_at_once(
    clock: FakeClock, store: ScriptedStore
) -> None:
    heard = CancelRequests()
    handler = Handler()
    task = asyncio.create_task(executor(store, clock, handler, heard).run(ITEM))
    await clock.settle()
    assert handler.started == [ITEM.id]
    heard.heard(TEXT)
    result = await task  # the clock has not moved: no heartbeat was due
    assert result == RunResult(Cancelled(), Cancel(), True)
    assert handler.cancelled
    assert store.calls == [(0.0, "cancel", ITEM.id, ITEM.attempt)]


async def test_a_cancel_of_another_attempt_leaves_the_attempt_running(
    clock: FakeClock, store: ScriptedStore
) -> None:
    heard = CancelRequests()
    handler = Handler()
    task = asyncio.create_task(executor(store, clock, handler, heard).run(ITEM))
    await clock.settle()
    heard.heard(f"{ITEM.id}:{ITEM.attempt - 1}")
    await clock.settle()
    assert not task.done()
    handler.go.set()
    assert await task == RunResult(Succeeded({"done": True}), Complete({"done": True}), True)
    assert not handler.cancelled


async def test_an_attempt_stops_heeding_once_it_has_ended(
    clock: FakeClock, store: ScriptedStore, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    heard = CancelRequests()
    handler = Handler()
    handler.go.set()
    await executor(store, clock, handler, heard).run(ITEM)
    heard.heard(TEXT)  # late: the attempt has ended, nothing of it is called
    assert [r.getMessage() for r in caplog.records if r.name == LOGGER] == []
