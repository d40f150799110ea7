"""The Worker's loop on a FakeClock, with a scripted store and executor: what it claims,
when it waits, what wakes it, and what ends it."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from typing import Any
from uuid import UUID

import psycopg
import pytest

from safelight.settings import Settings
from safelight.testing.executor import FakeExecutor, as_executor
from safelight.testing.fakeclock import FakeClock
from safelight.testing.items import noop_item
from safelight.testing.workstore import ScriptedStore, as_work_store
from safelight.work.executor import RunResult
from safelight.work.model import WorkItem
from safelight.work.observer import NoObserver
from safelight.work.outcome import Complete, Fail, Failed, Lost, Succeeded
from safelight.work.worker import Worker, WorkerSettings, worker_ids

pytestmark = pytest.mark.usefixtures("loop_errors", "unwind")


SETTINGS = WorkerSettings(
    worker_id="w1",
    kinds=frozenset({"noop", "crawl"}),
    owner="alice",
    until_idle=False,
    lease_seconds=60.0,
    poll_seconds=5.0,
    backoff_max_seconds=30.0,
)


def claim_times(store: ScriptedStore) -> list[float]:
    """When each claim was made, in seconds since the start."""
    return [c[0] for c in store.calls if c[1] == "claim"]


def make(
    clock: FakeClock, store: ScriptedStore, **kwargs: Any
) -> tuple[Worker, FakeExecutor, list[Any]]:
    executor = FakeExecutor()
    finished: list[Any] = []
    settings = kwargs.pop("settings", SETTINGS)
    worker = Worker(
        as_work_store(store),
        as_executor(executor),
        clock,
        settings,
        on_finished=lambda i, r: finished.append((i.id, r.outcome)),
        **kwargs,
    )
    return worker, executor, finished


async def test_run_once_claims_runs_and_reports(clock: FakeClock) -> None:
    store = ScriptedStore(clock, [noop_item(1)])
    pokes: list[str] = []
    worker, executor, finished = make(clock, store, after_item=lambda: pokes.append("poke"))
    shutdown = asyncio.Event()
    result = await worker.run_once(shutdown)
    assert result is not None and result.outcome == Succeeded({"id": 1})
    assert store.calls == [(0.0, "claim", "w1", ["crawl", "noop"], "alice", 60.0)]
    assert executor.ran == [(1, shutdown)]
    assert finished == [(1, Succeeded({"id": 1}))]
    assert pokes == ["poke"]
    assert worker.settings is SETTINGS


async def test_the_attempt_counts_from_when_the_claim_was_sent(clock: FakeClock) -> None:
    class SlowStore(ScriptedStore):
        async def claim(self, *args: Any, **kwargs: Any) -> WorkItem | None:
            clock.jump(25)  # the claim's answer comes 25 s after it was sent
            return await super().claim(*args, **kwargs)

    store = SlowStore(clock, [noop_item(1)])
    worker, executor, _ = make(clock, store)
    await worker.run_once()
    assert executor.claimed_at == [1000.0]
    assert clock.monotonic() == 1025.0


async def test_run_once_with_nothing_to_claim_runs_nothing(clock: FakeClock) -> None:
    store = ScriptedStore(clock, [None])
    worker, executor, finished = make(clock, store)
    assert await worker.run_once() is None
    assert executor.ran == [] and finished == []


async def test_an_idle_worker_claims_again_at_each_poll_and_not_before(clock: FakeClock) -> None:
    store = ScriptedStore(clock, [noop_item(1), noop_item(2), None, None, noop_item(3)])
    worker, executor, _ = make(clock, store)
    shutdown = asyncio.Event()
    run = asyncio.create_task(worker.run(shutdown))
    await clock.settle()
    assert [i for i, _ in executor.ran] == [1, 2]
    assert claim_times(store) == [0.0, 0.0, 0.0]
    await clock.advance(4.999)
    assert len(claim_times(store)) == 3
    await clock.advance(0.001)
    assert claim_times(store) == [0.0, 0.0, 0.0, 5.0]
    await clock.advance(5)
    assert [i for i, _ in executor.ran] == [1, 2, 3]
    # Every attempt heeds one watch of the Worker's shutdown, done once it is set.
    watches = {id(watch) for _, watch in executor.ran}
    assert len(watches) == 1
    watch = executor.ran[0][1]
    assert isinstance(watch, asyncio.Future) and not watch.done()
    shutdown.set()
    await clock.settle()
    assert run.done() and run.exception() is None
    assert watch.done() and not watch.cancelled()


async def test_a_worker_that_stops_cancels_its_watch_of_the_shutdown(clock: FakeClock) -> None:
    """Until idle, the Worker returns with shutdown never set: its watch goes with it."""
    store = ScriptedStore(clock, [noop_item(1), None], pending=[0])
    worker, executor, _ = make(
        clock, store, settings=dataclasses.replace(SETTINGS, until_idle=True)
    )
    await worker.run(asyncio.Event())
    watch = executor.ran[0][1]
    await clock.settle()
    assert isinstance(watch, asyncio.Future) and watch.cancelled()
    assert [t for t in asyncio.all_tasks() if not t.done()] == [asyncio.current_task()]


async def test_a_retry_that_falls_due_before_the_poll_is_claimed_when_it_is_due(
    clock: FakeClock,
) -> None:
    """No notification comes when a not-before time passes: the Worker wakes for it."""
    store = ScriptedStore(clock, [None, noop_item(5)], dues=[3.0])
    worker, executor, _ = make(clock, store)
    shutdown = asyncio.Event()
    run = asyncio.create_task(worker.run(shutdown))
    await clock.settle()
    assert store.calls == [
        (0.0, "claim", "w1", ["crawl", "noop"], "alice", 60.0),
        (0.0, "next_due", ["crawl", "noop"], "alice"),
    ]
    await clock.advance(2.999)
    assert claim_times(store) == [0.0]
    await clock.advance(0.001)
    assert claim_times(store)[:2] == [0.0, 3.0]
    assert [i for i, _ in executor.ran] == [5]
    shutdown.set()
    await clock.settle()
    assert run.done() and run.exception() is None


async def test_a_retry_due_after_the_poll_waits_only_for_the_poll(clock: FakeClock) -> None:
    store = ScriptedStore(clock, [None, None], dues=[12.0, 7.0])
    worker, _, _ = make(clock, store)
    shutdown = asyncio.Event()
    run = asyncio.create_task(worker.run(shutdown))
    await clock.advance(5)
    assert claim_times(store) == [0.0, 5.0]
    shutdown.set()
    await clock.settle()
    assert run.done()


async def test_a_worker_until_idle_waits_for_a_retry_to_fall_due(clock: FakeClock) -> None:
    settings = Settings().worker("w1", frozenset({"noop"}), owner="alice", until_idle=True)
    store = ScriptedStore(clock, [None, noop_item(6), None], pending=[1, 0], dues=[1.5])
    worker, executor, _ = make(clock, store, settings=settings)
    run = asyncio.create_task(worker.run(asyncio.Event()))
    await clock.settle()
    assert [c[1] for c in store.calls] == ["claim", "pending", "next_due"]
    await clock.advance(1.5)
    assert run.done() and run.exception() is None
    assert [i for i, _ in executor.ran] == [6]
    assert claim_times(store) == [0.0, 1.5, 1.5]


async def test_a_database_outage_asking_for_the_next_retry_waits_for_the_poll(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = ScriptedStore(clock, [None, noop_item(8)], dues=[psycopg.OperationalError("down")])
    worker, executor, _ = make(clock, store)
    shutdown = asyncio.Event()
    run = asyncio.create_task(worker.run(shutdown))
    with caplog.at_level(logging.WARNING, logger="safelight.work.worker"):
        await clock.advance(4.999)
        assert executor.ran == []
        await clock.advance(0.001)
    assert [i for i, _ in executor.ran] == [8]
    assert [r.getMessage() for r in caplog.records] == [
        "worker w1 cannot reach the database (OperationalError); retrying in 5 s"
    ]
    shutdown.set()
    await clock.settle()
    assert run.done()


async def test_a_wake_up_claims_at_once_without_waiting_for_the_poll(clock: FakeClock) -> None:
    store = ScriptedStore(clock, [None, noop_item(7)])
    wake = asyncio.Event()
    worker, executor, _ = make(clock, store, wake=wake)
    shutdown = asyncio.Event()
    run = asyncio.create_task(worker.run(shutdown))
    await clock.settle()
    assert executor.ran == []
    wake.set()
    await clock.settle()
    assert [i for i, _ in executor.ran] == [7]
    assert claim_times(store) == [0.0, 0.0, 0.0]  # no time passed
    shutdown.set()
    await clock.settle()
    assert run.done()


async def test_a_wake_up_during_a_claim_is_not_lost(clock: FakeClock) -> None:
    wake = asyncio.Event()

    class WakingStore(ScriptedStore):
        async def claim(self, *args: Any, **kwargs: Any) -> WorkItem | None:
            wake.set()  # a notification arrives while the claim is in flight
            return await super().claim(*args, **kwargs)

    store = WakingStore(clock, [None, noop_item(4)])
    worker, executor, _ = make(clock, store, wake=wake)
    shutdown = asyncio.Event()
    run = asyncio.create_task(worker.run(shutdown))
    await clock.settle()
    assert [i for i, _ in executor.ran] == [4]
    shutdown.set()
    await clock.settle()
    assert run.done()


async def run_then_shut_down(clock: FakeClock, worker: Worker) -> asyncio.Task[None]:
    """Run ``worker`` until nothing is left to settle, then shut it down and settle again."""
    shutdown = asyncio.Event()
    run = asyncio.create_task(worker.run(shutdown))
    await clock.settle()
    shutdown.set()
    await clock.settle()
    return run


async def test_shutdown_ends_a_waiting_worker_at_once(clock: FakeClock) -> None:
    store = ScriptedStore(clock, [])
    worker, _, _ = make(clock, store)
    run = await run_then_shut_down(clock, worker)
    assert run.done() and run.exception() is None
    assert clock.deadlines() == []  # its poll timer went with it


async def test_waiting_leaves_no_waiter_behind(clock: FakeClock) -> None:
    worker, _, _ = make(clock, ScriptedStore(clock, []), wake=asyncio.Event())
    shutdown = asyncio.Event()
    shutdown.set()
    await worker._wait(shutdown, 5.0)
    # Its three waiters (shutdown, poll, wake-up) are finished, not merely cancelled.
    assert [t for t in asyncio.all_tasks() if not t.done()] == [asyncio.current_task()]
    assert clock.deadlines() == []


async def test_a_shut_down_worker_does_not_claim(clock: FakeClock) -> None:
    store = ScriptedStore(clock, [noop_item(1)])
    worker, executor, _ = make(clock, store)
    shutdown = asyncio.Event()
    shutdown.set()
    await worker.run(shutdown)
    assert store.calls == [] and executor.ran == []


async def test_until_idle_returns_only_when_nothing_is_pending(clock: FakeClock) -> None:
    settings = Settings().worker("w1", frozenset({"noop"}), owner="alice", until_idle=True)
    store = ScriptedStore(clock, [noop_item(1), None, None], pending=[1, 0])
    worker, executor, _ = make(clock, store, settings=settings)
    run = asyncio.create_task(worker.run(asyncio.Event()))
    await clock.settle()
    assert not run.done()  # one item still pending elsewhere
    await clock.advance(5)
    assert run.done() and run.exception() is None
    assert [c[1:] for c in store.calls if c[1] == "pending"] == [
        ("pending", ["noop"], "alice"),
        ("pending", ["noop"], "alice"),
    ]
    assert [i for i, _ in executor.ran] == [1]


async def test_without_until_idle_an_empty_queue_is_not_counted(clock: FakeClock) -> None:
    store = ScriptedStore(clock, [None])
    worker, _, _ = make(clock, store)
    run = await run_then_shut_down(clock, worker)
    assert run.done()
    assert [c[1] for c in store.calls] == ["claim", "next_due"]


async def test_a_database_outage_is_logged_and_retried_after_a_growing_wait(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    store = ScriptedStore(clock, [psycopg.OperationalError("down"), TimeoutError(), noop_item(9)])
    worker, executor, _ = make(clock, store)
    shutdown = asyncio.Event()
    run = asyncio.create_task(worker.run(shutdown))
    with caplog.at_level(logging.WARNING, logger="safelight.work.worker"):
        await clock.settle()
        assert executor.ran == []
        await clock.advance(5)
        assert executor.ran == []
        await clock.advance(9.999)
        assert executor.ran == []  # the second wait is twice the poll
        await clock.advance(0.001)
    assert [i for i, _ in executor.ran] == [9]
    assert [c[0] for c in store.calls[:3]] == [0.0, 5.0, 15.0]
    assert [r.getMessage() for r in caplog.records] == [
        "worker w1 cannot reach the database (OperationalError); retrying in 5 s",
        "worker w1 cannot reach the database (TimeoutError); retrying in 10 s",
    ]
    shutdown.set()
    await clock.settle()
    assert run.done()


async def test_the_outage_backoff_stops_at_its_ceiling_and_a_success_resets_it(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    down = psycopg.OperationalError("down")
    # Five failures, an empty claim (a success), then one more failure.
    store = ScriptedStore(clock, [down, down, down, down, down, None, down])
    worker, _, _ = make(clock, store)
    shutdown = asyncio.Event()
    run = asyncio.create_task(worker.run(shutdown))
    with caplog.at_level(logging.WARNING, logger="safelight.work.worker"):
        await clock.advance(5 + 10 + 20 + 30 + 30 + 5)
    # 5, 10, 20, then the ceiling (30 s here), the success waits one poll, and the next
    # failure starts again at one poll.
    assert claim_times(store) == [0.0, 5.0, 15.0, 35.0, 65.0, 95.0, 100.0]
    assert [r.getMessage().rsplit(" ", 2)[-2] for r in caplog.records] == [
        "5",
        "10",
        "20",
        "30",
        "30",
        "5",
    ]
    shutdown.set()
    await clock.settle()
    assert run.done()


async def test_a_wake_up_cuts_an_outage_wait_short(clock: FakeClock) -> None:
    store = ScriptedStore(clock, [psycopg.OperationalError("down"), noop_item(3)])
    wake = asyncio.Event()
    worker, executor, _ = make(clock, store, wake=wake)
    shutdown = asyncio.Event()
    run = asyncio.create_task(worker.run(shutdown))
    await clock.advance(1)
    wake.set()  # the listener is back and wakes everyone
    await clock.settle()
    assert [i for i, _ in executor.ran] == [3]
    assert [c[0] for c in store.calls[:2]] == [0.0, 1.0]
    shutdown.set()
    await clock.settle()
    assert run.done()


async def test_each_item_that_ends_is_reported_with_its_kind_outcome_and_seconds(
    clock: FakeClock,
) -> None:
    ended: list[tuple[str, str, float]] = []

    class Observer(NoObserver):
        def item_ended(self, kind: str, outcome: str, seconds: float) -> None:
            ended.append((kind, outcome, seconds))

    class Slow(FakeExecutor):
        async def run(self, item: WorkItem, *args: Any, **kwargs: Any) -> RunResult:
            await clock.sleep(7.5)
            return await super().run(item, *args, **kwargs)

    worker = Worker(
        as_work_store(ScriptedStore(clock, [noop_item(4)])),
        as_executor(Slow()),
        clock,
        SETTINGS,
        observer=Observer(),
    )
    running = asyncio.create_task(worker.run_once())
    await clock.advance(7.5)
    assert running.done() and ended == [("noop", "succeeded", 7.5)]


async def test_a_bug_is_not_mistaken_for_an_outage(clock: FakeClock) -> None:
    store = ScriptedStore(clock, [KeyError("bug")])
    worker, _, _ = make(clock, store)
    with pytest.raises(KeyError):
        await worker.run(asyncio.Event())


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"kinds": frozenset()}, "^a Worker needs at least one kind to run$"),
        ({"poll_seconds": 0.0}, "^poll_seconds and lease_seconds must be positive$"),
        ({"lease_seconds": 0.0}, "^poll_seconds and lease_seconds must be positive$"),
        ({"lease_seconds": -1.0}, "^poll_seconds and lease_seconds must be positive$"),
        ({"poll_seconds": -1.0}, "^poll_seconds and lease_seconds must be positive$"),
    ],
)
def test_worker_settings_are_validated(kwargs: dict[str, Any], message: str) -> None:
    base: dict[str, Any] = {"worker_id": "w", "kinds": frozenset({"noop"})}
    with pytest.raises(ValueError, match=message):
        dataclasses.replace(Settings().worker(**base), **kwargs)


def test_short_intervals_are_valid() -> None:
    s = dataclasses.replace(
        Settings().worker("w", frozenset({"noop"})), lease_seconds=0.5, poll_seconds=0.5
    )
    assert (s.lease_seconds, s.poll_seconds) == (0.5, 0.5)


def test_worker_settings_defaults() -> None:
    s = Settings().worker("w", frozenset({"noop"}))
    assert (s.owner, s.lease_seconds, s.poll_seconds, s.until_idle) == (None, 60.0, 5.0, False)


def test_worker_ids_are_numbered_only_when_there_are_several() -> None:
    assert worker_ids("host:1", 1) == ["host:1"]
    assert worker_ids("host:1", 3) == ["host:1/0", "host:1/1", "host:1/2"]


class TimedExecutor(FakeExecutor):
    """Takes ``seconds`` on the clock and ends as ``result`` says."""

    def __init__(self, clock: FakeClock, seconds: float, result: RunResult) -> None:
        super().__init__()
        self.clock, self.seconds, self.result = clock, seconds, result

    async def run(self, item: WorkItem, *args: Any, **kwargs: Any) -> RunResult:
        await self.clock.sleep(self.seconds)
        return self.result


@pytest.mark.parametrize(
    ("result", "config", "ended"),
    [
        (
            RunResult(Succeeded(None), Complete(None), True),
            None,
            "work item 4 attempt 1: ended succeeded after 2.500 s (noop, unscoped)",
        ),
        (
            RunResult(Failed("RuntimeError: x"), Fail("RuntimeError: x"), False),
            UUID("00000000-0000-4000-8000-000000000002"),
            "work item 4 attempt 1: ended failed after 2.500 s (noop, config "
            "00000000-0000-4000-8000-000000000002); its write did not apply",
        ),
        (
            RunResult(Lost(), None, False),
            None,
            "work item 4 attempt 1: ended lost after 2.500 s (noop, unscoped)",
        ),
    ],
)
async def test_an_item_running_past_a_second_has_one_info_line_then_and_one_when_it_ends(
    clock: FakeClock,
    caplog: pytest.LogCaptureFixture,
    result: RunResult,
    config: UUID | None,
    ended: str,
) -> None:
    """ADR 0032: at INFO a quick success is only counted (work.lifecycle); an item still
    running a second after its claim says so then, and how it ended when it ends."""
    claimed = dataclasses.replace(noop_item(4), storage_config_id=config)
    scope = "unscoped" if config is None else f"config {config}"
    worker = Worker(
        as_work_store(ScriptedStore(clock, [claimed])),
        as_executor(TimedExecutor(clock, 2.5004, result)),
        clock,
        SETTINGS,
    )
    with caplog.at_level(logging.INFO, logger="safelight.work.worker"):
        run = asyncio.create_task(worker.run_once())
        await clock.settle()
        await clock.advance(0.999)
        assert caplog.records == []
        await clock.advance(0.001)
        assert len(caplog.records) == 1
        await clock.advance(1.5004)
        assert run.done()
    first, last = caplog.records
    assert (first.levelname, first.getMessage()) == (
        "INFO",
        f"work item 4 attempt 1: running: claimed by w1 1 s ago (noop, {scope})",
    )
    assert (last.levelname, last.getMessage()) == ("INFO", ended)
    assert (first.worker_id, last.worker_id) == ("w1", "w1")  # type: ignore[attr-defined]
    for record in (first, last):
        fields = (record.item_id, record.kind, record.attempt, record.storage_config_id)  # type: ignore[attr-defined]
        assert fields == (4, "noop", 1, config)
    # The seconds to the millisecond, as the line says them.
    assert (last.outcome, last.seconds) == (result.outcome.name, 2.5)  # type: ignore[attr-defined]
