"""The Worker's pipeline (ADR 0069): its next claim goes out while its last outcome is
on its way, and that outcome is seen to its end before the next item runs. On a
FakeClock, with a scripted store and executor whose outcomes the tests answer."""

from __future__ import annotations

import asyncio
import inspect
import logging
from typing import Any
from uuid import UUID

import psycopg
import pytest

from safelight.testing.executor import FakeExecutor, as_executor
from safelight.testing.fakeclock import FakeClock
from safelight.testing.items import noop_item, running_item
from safelight.testing.workstore import ScriptedStore, as_work_store
from safelight.work.attemptlog import AttemptLog
from safelight.work.executor import RunResult, Written
from safelight.work.model import WorkItem
from safelight.work.outcome import Complete, Release, Released, Succeeded
from safelight.work.worker import Worker, WorkerSettings

pytestmark = pytest.mark.usefixtures("loop_errors", "unwind")

SETTINGS = WorkerSettings(
    worker_id="w1",
    kinds=frozenset({"noop"}),
    owner=None,
    until_idle=False,
    lease_seconds=60.0,
    poll_seconds=5.0,
    backoff_max_seconds=30.0,
)


def claims(store: ScriptedStore) -> int:
    return sum(1 for c in store.calls if c[1] == "claim")


def make(
    clock: FakeClock, store: ScriptedStore, executor: FakeExecutor
) -> tuple[Worker, list[Any], list[str]]:
    finished: list[Any] = []
    pokes: list[str] = []
    worker = Worker(
        as_work_store(store),
        as_executor(executor),
        clock,
        SETTINGS,
        on_finished=lambda i, r: finished.append((i.id, r.outcome, r.applied)),
        after_item=lambda: pokes.append("poke"),
    )
    return worker, finished, pokes


async def test_the_next_claim_goes_out_while_the_last_outcome_is_on_its_way(
    clock: FakeClock,
) -> None:
    store = ScriptedStore(clock, [noop_item(1), noop_item(2)])
    executor = FakeExecutor(write_clock=clock)
    answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    executor.answers[1] = answer
    worker, finished, pokes = make(clock, store, executor)
    shutdown = asyncio.Event()
    run = asyncio.create_task(worker.run(shutdown))
    await clock.settle()
    # Item 1's outcome is unanswered: the claim of item 2 went out beside it, but item 2
    # does not run, and item 1's end is not reported (its config may still be busy).
    assert claims(store) == 2
    assert [i for i, _ in executor.ran] == [1]
    assert finished == [] and pokes == []
    answer.set_result(True)
    await clock.settle()
    assert [i for i, _ in executor.ran] == [1, 2]
    assert finished == [(1, Succeeded({"id": 1}), True), (2, Succeeded({"id": 2}), True)]
    assert pokes == ["poke", "poke"]
    shutdown.set()
    await clock.settle()
    assert run.done() and run.exception() is None


async def test_a_shut_down_worker_claims_nothing_more_and_waits_for_its_last_outcome(
    clock: FakeClock,
) -> None:
    store = ScriptedStore(clock, [noop_item(1), noop_item(2)])
    gate = asyncio.Event()
    executor = FakeExecutor(gate=gate, write_clock=clock)
    answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    executor.answers[1] = answer
    worker, finished, _ = make(clock, store, executor)
    shutdown = asyncio.Event()
    run = asyncio.create_task(worker.run(shutdown))
    await clock.settle()
    shutdown.set()
    gate.set()
    await clock.settle()
    assert claims(store) == 1
    assert not run.done() and finished == []
    answer.set_result(False)
    await clock.settle()
    assert run.done() and run.exception() is None
    assert finished == [(1, Succeeded({"id": 1}), False)]


async def test_a_worker_cancelled_during_its_claim_gives_up_its_last_outcome(
    clock: FakeClock,
) -> None:
    class HangingSecondClaim(ScriptedStore):
        async def claim(self, *args: Any, **kwargs: Any) -> WorkItem | None:
            if claims(self) == 1:
                self._record("claim")
                await asyncio.Event().wait()
            return await super().claim(*args, **kwargs)

    store = HangingSecondClaim(clock, [noop_item(1)])
    executor = FakeExecutor(write_clock=clock)
    answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    executor.answers[1] = answer
    worker, finished, _ = make(clock, store, executor)
    run = asyncio.create_task(worker.run(asyncio.Event()))
    await clock.settle()
    assert claims(store) == 2 and not run.done()
    run.cancel()
    await clock.settle()
    assert run.cancelled()
    # Given up, not waited for: a batched write not yet sent is never sent.
    assert answer.cancelled()
    assert finished == []


async def test_an_outcome_whose_answer_never_comes_holds_the_worker_one_limit_from_its_send(
    clock: FakeClock,
) -> None:
    class SlowSecondClaim(ScriptedStore):
        async def claim(self, *args: Any, **kwargs: Any) -> WorkItem | None:
            if claims(self) == 1:
                await clock.sleep(6)  # the next claim takes 6 s of the outcome's 10
            return await super().claim(*args, **kwargs)

    store = SlowSecondClaim(clock, [noop_item(1), noop_item(2)])
    executor = FakeExecutor(write_clock=clock)
    executor.write_seconds = 10.0
    executor.answers[1] = asyncio.get_running_loop().create_future()
    worker, finished, _ = make(clock, store, executor)
    shutdown = asyncio.Event()
    run = asyncio.create_task(worker.run(shutdown))
    await clock.settle()
    await clock.advance(9.999)
    assert [i for i, _ in executor.ran] == [1]
    await clock.advance(0.001)
    # Timed out: not applied, lease recovery will requeue item 1; item 2 runs.
    assert [i for i, _ in executor.ran] == [1, 2]
    assert finished[0] == (1, Succeeded({"id": 1}), False)
    shutdown.set()
    await clock.settle()
    assert run.done() and run.exception() is None


@pytest.mark.parametrize(("answer", "applied"), [(True, True), (False, False), (OSError(), False)])
async def test_an_outcome_answered_while_the_worker_claimed_is_read_as_it_came(
    clock: FakeClock, answer: bool | Exception, applied: bool
) -> None:
    store = ScriptedStore(clock, [noop_item(1)])
    executor = FakeExecutor(write_clock=clock)
    done: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    if isinstance(answer, Exception):
        done.set_exception(answer)
    else:
        done.set_result(answer)
    executor.answers[1] = done
    worker, finished, _ = make(clock, store, executor)
    result = await worker.run_once()
    assert result is not None and result.applied is applied
    assert finished == [(1, Succeeded({"id": 1}), applied)]


async def test_an_abandoned_write_not_yet_sent_is_never_sent(clock: FakeClock) -> None:
    store = ScriptedStore(clock)
    item = noop_item(1)
    log = AttemptLog(logging.getLogger(__name__), item)
    # A release is a coroutine, sent only once its answer is waited for.
    releasing = store.release(item.id, item.attempt)
    assert inspect.iscoroutine(releasing)
    Written(clock, 10.0, Released(), Release(), releasing, log).abandon()
    assert inspect.getcoroutinestate(releasing) == inspect.CORO_CLOSED
    assert store.calls == []
    # A batched outcome is the batcher's future: cancelling it is giving up.
    batched: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    Written(clock, 10.0, Succeeded(None), Complete(None), batched, log).abandon()
    assert batched.cancelled()
    # Nothing to write, nothing to give up.
    Written.answered(RunResult(Released(), None, False)).abandon()


CONFIG = UUID("00000000-0000-4000-8000-000000000001")


@pytest.mark.parametrize(
    ("config", "applied", "claimed_again"),
    [(CONFIG, True, True), (CONFIG, False, False), (None, True, False)],
)
async def test_a_claim_that_found_its_own_config_busy_is_made_again_once_the_outcome_is_in(
    clock: FakeClock, config: UUID | None, applied: bool, claimed_again: bool
) -> None:
    first = running_item(id=1, attempt=1, config=config, kind="noop")
    second = running_item(id=2, attempt=1, config=config, kind="noop")
    # The claim beside item 1's outcome finds nothing (its config still busy).
    store = ScriptedStore(clock, [first, None, second])
    executor = FakeExecutor(write_clock=clock)
    answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    executor.answers[1] = answer
    worker, _, _ = make(clock, store, executor)
    shutdown = asyncio.Event()
    run = asyncio.create_task(worker.run(shutdown))
    await clock.settle()
    assert claims(store) == 2
    answer.set_result(applied)
    await clock.settle()
    # Once the outcome has committed the config is free: claimed at once, not at the
    # next wake-up. Not applied (the item was lost), or unscoped: nothing was freed.
    # (Again: the claim beside item 2's outcome, and once more after it, found nothing.)
    assert claims(store) == (5 if claimed_again else 2)
    assert [i for i, _ in executor.ran] == ([1, 2] if claimed_again else [1])
    shutdown.set()
    await clock.settle()
    assert run.done() and run.exception() is None


@pytest.mark.parametrize("woken_before", [False, True])
async def test_the_workers_own_poke_after_an_item_does_not_make_it_claim_again(
    clock: FakeClock, woken_before: bool
) -> None:
    wake = asyncio.Event()
    store = ScriptedStore(clock, [noop_item(1)])
    executor = FakeExecutor(write_clock=clock)
    answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    executor.answers[1] = answer
    # A hub of one: the process's poke after an item wakes every Worker, this one too.
    worker = Worker(
        as_work_store(store),
        as_executor(executor),
        clock,
        SETTINGS,
        wake=wake,
        after_item=wake.set,
    )
    shutdown = asyncio.Event()
    run = asyncio.create_task(worker.run(shutdown))
    await clock.settle()
    assert claims(store) == 2
    if woken_before:
        wake.set()  # a notification while the outcome was on its way: kept
    answer.set_result(True)
    await clock.settle()
    # Its claim beside the outcome was its re-check; a notification is not lost.
    assert claims(store) == (3 if woken_before else 2)
    shutdown.set()
    await clock.settle()
    assert run.done() and run.exception() is None


@pytest.mark.parametrize("config", [CONFIG, None])
async def test_the_outcome_of_an_item_the_worker_waited_for_goes_alone(
    clock: FakeClock, config: UUID | None
) -> None:
    # docs/benchmarks.md, section 17: after a wait no backlog is known, and a claim beside
    # that item's outcome would only find its config busy and delay the outcome's commit
    # and its wake-ups. Once a claim follows an item, they go out beside the outcomes.
    first = running_item(id=1, attempt=1, config=config, kind="noop")
    second = running_item(id=2, attempt=1, config=config, kind="noop")
    store = ScriptedStore(clock, [None, first, second])
    executor = FakeExecutor(write_clock=clock)
    answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    executor.answers[1] = answer
    finished: list[int] = []
    wake = asyncio.Event()
    worker = Worker(
        as_work_store(store),
        as_executor(executor),
        clock,
        SETTINGS,
        wake=wake,
        on_finished=lambda i, r: finished.append(i.id),
    )
    shutdown = asyncio.Event()
    run = asyncio.create_task(worker.run(shutdown))
    await clock.settle()
    assert claims(store) == 1  # nothing queued: the Worker waits
    wake.set()
    await clock.settle()
    # Item 1 came after a wait: its outcome is on its way, and no claim beside it.
    assert [i for i, _ in executor.ran] == [1]
    assert claims(store) == 2 and finished == []
    answer.set_result(True)
    await clock.settle()
    # Claimed once item 1's outcome was in; item 2's outcome had a claim beside it.
    assert [i for i, _ in executor.ran] == [1, 2] and finished == [1, 2]
    assert claims(store) == (5 if config is not None else 4)
    shutdown.set()
    await clock.settle()
    assert run.done() and run.exception() is None


async def test_a_claim_that_fails_while_the_outcome_is_on_its_way_still_reports_the_item(
    clock: FakeClock,
) -> None:
    store = ScriptedStore(clock, [noop_item(1), psycopg.OperationalError("down"), noop_item(2)])
    executor = FakeExecutor(write_clock=clock)
    answer: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    executor.answers[1] = answer
    worker, finished, _ = make(clock, store, executor)
    shutdown = asyncio.Event()
    run = asyncio.create_task(worker.run(shutdown))
    await clock.settle()
    assert claims(store) == 2 and finished == []
    answer.set_result(True)
    await clock.settle()
    # Item 1's end is reported, and the outage is waited out as any other.
    assert finished == [(1, Succeeded({"id": 1}), True)]
    assert not run.done()
    await clock.advance(5)
    assert [i for i, _ in executor.ran] == [1, 2]
    shutdown.set()
    await clock.settle()
    assert run.done() and run.exception() is None
