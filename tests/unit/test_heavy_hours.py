"""Heavy hours (ADR 0060): the window, its setting, the Worker leaving heavy kinds out of
its claim outside it, and the executor winding a heavy attempt down at its end, all on
a FakeClock."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from datetime import UTC, datetime, time, timedelta, timezone
from typing import Any

import pytest

from safelight.handlers import CRAWL, HEAVY_KINDS, KINDS
from safelight.settings import Settings, SettingsError
from safelight.testing.executor import FakeExecutor, as_executor
from safelight.testing.fakeclock import FakeClock
from safelight.testing.items import ITEM, noop_item
from safelight.testing.workstore import ScriptedStore, as_work_store
from safelight.work.context import HandlerContext
from safelight.work.errors import WoundDown
from safelight.work.executor import Executor, RunResult
from safelight.work.hours import HeavyHours, HeavyWindow
from safelight.work.outcome import Defer, Deferred, Fail, Failed, Succeeded
from safelight.work.worker import Worker, WorkerSettings

pytestmark = pytest.mark.usefixtures("loop_errors", "unwind")

NIGHT = HeavyHours.parse("01:00-07:00", UTC)
WRAPPED = HeavyHours.parse("22:30-06:00", UTC)


def at(hour: int, minute: int = 0, second: int = 0, day: int = 1) -> datetime:
    return datetime(2026, 1, day, hour, minute, second, tzinfo=UTC)


# --- the window ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [("01:00-07:00", time(1), time(7)), (" 22:30 - 6:05 ", time(22, 30), time(6, 5))],
)
def test_a_window_is_read_from_its_text(text: str, start: time, end: time) -> None:
    hours = HeavyHours.parse(text)
    assert (hours.start, hours.end, hours.zone) == (start, end, None)


@pytest.mark.parametrize("text", ["", "01:00", "1-7", "25:00-07:00", "01:60-07:00", "x"])
def test_a_bad_window_says_what_is_expected(text: str) -> None:
    with pytest.raises(ValueError, match=r"HH:MM-HH:MM on a 24-hour clock, such as 01:00-07:00"):
        HeavyHours.parse(text)


@pytest.mark.parametrize(
    ("text", "start", "end"),
    [("24:00-07:00", time(0), time(7)), ("23:59-24:00", time(23, 59), time(0)),
     ("00:00-23:59", time(0), time(23, 59))],
)  # fmt: skip
def test_the_clocks_edges_are_hours(text: str, start: time, end: time) -> None:
    hours = HeavyHours.parse(text)
    assert (hours.start, hours.end) == (start, end)


@pytest.mark.parametrize("text", ["24:01-07:00", "01:00-24:30", "23:60-07:00", "01:00-07:60"])
def test_past_the_clocks_edges_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match=r"HH:MM-HH:MM"):
        HeavyHours.parse(text)


def test_an_empty_window_is_refused() -> None:
    with pytest.raises(
        ValueError, match=r"^'03:00-03:00' starts where it ends; leave it unset for always$"
    ):
        HeavyHours.parse("03:00-03:00")
    with pytest.raises(ValueError, match=r"^a window that starts where it ends is empty$"):
        HeavyHours(time(3), time(3))


@pytest.mark.parametrize(
    ("moment", "inside"),
    [(at(0, 59, 59), False), (at(1), True), (at(6, 59, 59), True), (at(7), False)],
)
def test_a_window_is_half_open(moment: datetime, inside: bool) -> None:
    assert NIGHT.contains(moment) is inside


@pytest.mark.parametrize(
    ("moment", "inside"),
    [(at(22, 29), False), (at(22, 30), True), (at(23, 59), True), (at(0), True), (at(5, 59), True),
     (at(6), False), (at(12), False)],
)  # fmt: skip
def test_a_window_wraps_past_midnight(moment: datetime, inside: bool) -> None:
    assert WRAPPED.contains(moment) is inside


def test_when_a_window_ends_and_starts_again() -> None:
    assert NIGHT.seconds_to_end(at(6, 59, 50)) == 10
    assert NIGHT.seconds_to_end(at(7)) is None
    assert NIGHT.seconds_to_start(at(3)) == 0
    assert NIGHT.seconds_to_start(at(7)) == 18 * 3600
    assert NIGHT.seconds_to_start(at(0, 30)) == 1800
    assert NIGHT.next_start(at(3)) == at(1, day=2)  # inside: the next day's
    assert NIGHT.next_start(at(1)) == at(1, day=2)  # strictly after
    assert NIGHT.next_start(at(0, 59)) == at(1)
    assert WRAPPED.seconds_to_end(at(23)) == 7 * 3600  # past midnight
    assert WRAPPED.seconds_to_start(at(12)) == 10.5 * 3600
    assert str(WRAPPED) == "22:30-06:00"


def test_without_a_zone_the_window_is_the_machines_local_time() -> None:
    local = HeavyHours.parse("01:00-07:00")
    # 06:59:50 on this machine's clock, whatever its zone.
    moment = datetime(2026, 1, 1, 6, 59, 50).astimezone()
    assert local.contains(moment)
    assert local.seconds_to_end(moment) == 10
    assert local.next_start(moment) == datetime(2026, 1, 2, 1, 0).astimezone()


def test_what_a_waiting_heavy_kind_says() -> None:
    window = HeavyWindow(NIGHT, frozenset({"crawl"}))
    assert window.waits_for(at(12)) == "waits for heavy hours (01:00)"
    assert window.waits_for(at(3)) == ""


def test_the_window_is_read_in_its_zone() -> None:
    east = HeavyHours.parse("01:00-07:00", timezone(timedelta(hours=2)))
    assert east.contains(at(23, 30))  # 01:30 two hours east
    assert not east.contains(at(5, 30))  # 07:30 there
    assert east.seconds_to_end(at(4, 59)) == 60


# --- the setting and the kinds ---------------------------------------------------------


def test_the_setting_is_checked_with_its_name() -> None:
    with pytest.raises(SettingsError, match=r"heavy_hours \(SAFELIGHT_HEAVY_HOURS\) must be"):
        Settings.load(env={"SAFELIGHT_HEAVY_HOURS": "1am-7am"})
    settings = Settings.load(env={"SAFELIGHT_HEAVY_HOURS": "01:00-07:00"})
    window = settings.heavy_window(frozenset({"crawl"}))
    assert window is not None and str(window.hours) == "01:00-07:00"
    assert window.hours.zone is None  # the machine's local time
    assert settings.executor(frozenset({"crawl"})).heavy == window
    worker = settings.worker("w", frozenset({"crawl"}), heavy_kinds=frozenset({"crawl"}))
    assert worker.heavy == window
    assert settings.heavy_window(frozenset()) is None
    assert Settings().heavy_window(frozenset({"crawl"})) is None  # unset: always


def test_the_heavy_kinds_are_those_that_read_the_originals() -> None:
    """And the faces, which read only the previews but take about a second of CPU a
    photo (ADR 0067)."""
    assert CRAWL.heavy
    heavy = {"crawl", "proxy_remake", "scrub", "faces"}
    assert HEAVY_KINDS == heavy == {k.name for k in KINDS if k.heavy}


# --- the Worker ------------------------------------------------------------------------

WORKER = WorkerSettings(
    worker_id="w1",
    kinds=frozenset({"noop", "crawl"}),
    owner=None,
    until_idle=True,
    lease_seconds=60.0,
    poll_seconds=5.0,
    backoff_max_seconds=30.0,
    heavy=HeavyWindow(NIGHT, frozenset({"crawl"})),
)


def worker_on(clock: FakeClock, store: ScriptedStore, settings: WorkerSettings) -> Worker:
    return Worker(as_work_store(store), as_executor(FakeExecutor()), clock, settings)


async def test_a_worker_claims_heavy_kinds_only_inside_the_window() -> None:
    clock = FakeClock(start=at(0, 59, 55))
    store = ScriptedStore(clock, [None, noop_item(1)])
    worker = worker_on(clock, store, WORKER)
    assert await worker.run_once() is None
    await clock.advance(5)  # 01:00: the window opens
    assert await worker.run_once() is not None
    claims = [c[3] for c in store.calls if c[1] == "claim"]
    assert claims == [["noop"], ["crawl", "noop"]]


async def test_a_worker_of_heavy_kinds_only_claims_nothing_outside_and_is_idle() -> None:
    clock = FakeClock(start=at(12))
    store = ScriptedStore(clock, [noop_item(1)], pending=[3])
    worker = worker_on(clock, store, dataclasses.replace(WORKER, kinds=frozenset({"crawl"})))
    await worker.run(asyncio.Event())  # until idle: nothing it may claim now
    assert store.calls == []


async def test_until_idle_counts_only_what_may_be_claimed_now() -> None:
    clock = FakeClock(start=at(12))
    store = ScriptedStore(clock, [None], pending=[0])
    worker = worker_on(clock, store, WORKER)
    await worker.run(asyncio.Event())
    assert [c[1:] for c in store.calls] == [
        ("claim", "w1", ["noop"], None, 60.0),
        ("pending", ["noop"], None),
    ]


# --- the executor ----------------------------------------------------------------------

LOGGER = "test.executor.heavy"


def executor_on(
    store: ScriptedStore, clock: FakeClock, handler: Any, heavy: bool = True
) -> Executor:
    settings = Settings().executor()
    if heavy:
        settings = dataclasses.replace(settings, heavy=HeavyWindow(NIGHT, frozenset({"crawl"})))
    return Executor(store, clock, {"crawl": handler}, settings, logging.getLogger(LOGGER))


async def winds_down(ctx: HandlerContext) -> dict[str, Any]:
    """A heavy handler: works until asked to wind down, then stops cleanly."""
    await ctx.winding_down.wait()
    raise WoundDown("stopped at the end of heavy hours after 3 files")


NOTE = "stopped at the end of heavy hours after 3 files; goes on when heavy hours start (01:00)"


async def test_a_heavy_attempt_winds_down_at_the_windows_end_and_waits_for_the_next(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    clock = FakeClock(start=at(6, 59, 50))
    store = ScriptedStore(clock)
    task = asyncio.create_task(executor_on(store, clock, winds_down).run(ITEM))
    await clock.advance(9)
    assert not task.done()
    await clock.advance(1)  # 07:00
    assert task.done()
    wait = 18 * 3600.0  # until 01:00 the next day
    assert task.result() == RunResult(Deferred(NOTE, wait), Defer(NOTE, wait), True)
    assert [c[1:] for c in store.calls if c[1] != "heartbeat"] == [("defer", 7, 3, NOTE, wait)]
    assert not Deferred.counts_as_failure
    assert clock.deadlines() == []
    assert [r.getMessage() for r in caplog.records if r.name == LOGGER] == [
        "work item 7 attempt 3: heavy hours (01:00-07:00) are over: finishing the work "
        "started, then stopping until 01:00"
    ]


async def test_a_heavy_attempt_claimed_after_the_window_winds_down_at_once() -> None:
    clock = FakeClock(start=at(7, 0, 1))
    store = ScriptedStore(clock)
    task = asyncio.create_task(executor_on(store, clock, winds_down).run(ITEM))
    await clock.advance(0)
    assert task.result().outcome == Deferred(NOTE, 18 * 3600.0 - 1)


async def test_a_handler_that_finishes_first_succeeds() -> None:
    async def quick(ctx: HandlerContext) -> dict[str, Any]:
        await clock.sleep(5)
        return {"done": not ctx.winding_down.is_set()}

    clock = FakeClock(start=at(6, 59, 50))
    store = ScriptedStore(clock)
    task = asyncio.create_task(executor_on(store, clock, quick).run(ITEM))
    await clock.advance(5)
    assert task.result().outcome == Succeeded({"done": True})
    assert clock.deadlines() == []


async def test_wound_down_unasked_is_a_failure() -> None:
    async def unasked(ctx: HandlerContext) -> dict[str, Any]:
        raise WoundDown()

    clock = FakeClock(start=at(3))
    for heavy in (True, False):  # inside its window, and with no window at all
        store = ScriptedStore(clock)
        result = await executor_on(store, clock, unasked, heavy).run(ITEM)
        error = "WoundDown: stopped at the end of heavy hours"
        assert result == RunResult(Failed(error), Fail(error), True)


async def test_a_kind_that_is_not_heavy_is_never_wound_down() -> None:
    clock = FakeClock(start=at(6, 59, 50))
    store = ScriptedStore(clock)
    item = dataclasses.replace(ITEM, kind="crawl")
    settings = dataclasses.replace(
        Settings().executor(), heavy=HeavyWindow(NIGHT, frozenset({"proxy_remake"}))
    )

    async def long(ctx: HandlerContext) -> dict[str, Any]:
        await clock.sleep(20)
        return {"asked": ctx.winding_down.is_set()}

    executor = Executor(store, clock, {"crawl": long}, settings, logging.getLogger(LOGGER))
    task = asyncio.create_task(executor.run(item))
    await clock.advance(20)
    assert task.result().outcome == Succeeded({"asked": False})
