"""ADR 0069 on real PostgreSQL: a Worker claims its next item while its last outcome
commits, and that claim never takes the same config's next item before the outcome has
committed (the rule of ADR 0008, kept by the database)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.db.pool import connect
from safelight.handlers import Services, build_handlers
from safelight.testing.rows import add_config
from safelight.testing.workerstack import LEASE, Stack, make_stack
from safelight.views.queries import queue_status
from safelight.work.context import Handler, HandlerContext
from safelight.work.model import CancelResult, RecoveryReport, Status
from safelight.work.store import WorkStore

pytestmark = pytest.mark.integration


async def _status(store: WorkStore, item_id: int) -> Status:
    item = await store.get(item_id)
    assert item is not None
    return item.status


async def _until_outcome_blocked(admin: psycopg.AsyncConnection[Any]) -> None:
    """Wait (on the database's answers, not a timer) until an outcome's statement waits
    on a lock."""
    for _ in range(10_000):
        cur = await admin.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
            " AND query LIKE '%%UPDATE work_attempts%%' AND query NOT LIKE '%%pg_stat%%'"
        )
        row = await cur.fetchone()
        if row and row[0] > 0:
            return
        await asyncio.sleep(0.005)  # a poll of the server, not a deadline
    raise AssertionError("the outcome never blocked on the held lock")


async def _until_running(store: WorkStore, item_id: int) -> None:
    for _ in range(10_000):
        if await _status(store, item_id) is Status.RUNNING:
            return
        await asyncio.sleep(0.005)  # a poll of the server, not a deadline
    raise AssertionError(f"item {item_id} was never claimed")


async def _three_items(stack: Stack, pool: AsyncConnectionPool[Any]) -> tuple[int, int, int]:
    """a (config c, 5 s on the clock), then b (config c), then u (unscoped)."""
    store, clock = stack.store, stack.clock
    c = await add_config(pool, clock)
    a = await store.enqueue("noop", config_id=c, payload={"seconds": 5})
    await clock.advance(1)
    b = await store.enqueue("noop", config_id=c)
    await clock.advance(1)
    u = await store.enqueue("noop")
    return a, b, u


async def _hold_the_outcome_of(
    stack: Stack, holder: psycopg.AsyncConnection[Any], admin: psycopg.AsyncConnection[Any], a: int
) -> None:
    """Once a runs, hold its attempt row so that its outcome waits on it, uncommitted,
    and let a's handler end."""
    await _until_running(stack.store, a)
    await stack.clock.settle()
    await holder.execute("BEGIN")
    await holder.execute("SELECT 1 FROM work_attempts WHERE work_item_id = %s FOR UPDATE", (a,))
    await stack.clock.advance(5)  # a's handler ends and its outcome goes out
    await _until_outcome_blocked(admin)


async def test_the_claim_beside_an_uncommitted_outcome_passes_over_its_config(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> None:
    stack = make_stack(pool, tmp_path)
    store = stack.store
    a, b, u = await _three_items(stack, pool)
    shutdown = asyncio.Event()
    run = asyncio.create_task(stack.worker("w1").run(shutdown))
    holder = await connect(database_url, "holder")
    admin = await connect(database_url, "observer")
    try:
        await _hold_the_outcome_of(stack, holder, admin, a)
        # The claim went out beside it: the unscoped item, never c's next one.
        await _until_running(store, u)
        assert await _status(store, a) is Status.RUNNING
        assert await _status(store, b) is Status.QUEUED
        assert stack.finished == []
        await holder.execute("COMMIT")
        await stack.wait_finished(3)
    finally:
        shutdown.set()
        await asyncio.wait_for(run, timeout=30)  # a real-time guard
        await holder.close()
        await admin.close()
    assert [i.id for i, _ in stack.finished] == [a, u, b]
    assert all(r.applied for _, r in stack.finished)
    for item_id in (a, b, u):
        assert await _status(store, item_id) is Status.SUCCEEDED


async def test_a_worker_killed_beside_its_outcome_gives_both_items_back_with_a_stall_each(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> None:
    """ADR 0069, consequences: the item claimed beside an outcome and never started is
    taken back by lease recovery like the other, and its stall is counted."""
    stack = make_stack(pool, tmp_path)
    store = stack.store
    a, b, u = await _three_items(stack, pool)
    run = asyncio.create_task(stack.worker("w1").run(asyncio.Event()))
    holder = await connect(database_url, "holder")
    admin = await connect(database_url, "observer")
    try:
        await _hold_the_outcome_of(stack, holder, admin, a)
        await _until_running(store, u)
        # The kill: the Worker goes, and its outcome's transaction with its connection.
        run.cancel()
        await asyncio.gather(run, return_exceptions=True)
        await admin.execute(
            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
            " WHERE wait_event_type = 'Lock' AND query LIKE '%%UPDATE work_attempts%%'"
            " AND pid <> pg_backend_pid()"
        )
        await holder.execute("COMMIT")
    finally:
        await holder.close()
        await admin.close()
    assert run.cancelled()
    assert stack.finished == []
    await stack.clock.advance(LEASE + 1)
    assert await store.recover_expired_leases() == RecoveryReport(requeued=2)
    for item_id, stalls in ((a, 1), (u, 1), (b, 0)):
        item = await store.get(item_id)
        assert item is not None and (item.status, item.stalls) == (Status.QUEUED, stalls)


def _recording(started: list[int]) -> Callable[[Services], Mapping[str, Handler]]:
    """The engine's handlers, each recording the item it starts on."""

    def handlers(services: Services) -> Mapping[str, Handler]:
        def recorded(handler: Handler) -> Handler:
            async def run(ctx: HandlerContext) -> dict[str, Any] | None:
                started.append(ctx.item.id)
                return await handler(ctx)

            return run

        return {kind: recorded(handler) for kind, handler in build_handlers(services).items()}

    return handlers


async def _listening(stack: Stack) -> tuple[asyncio.Task[None], asyncio.Event]:
    """The engine's listener, running; the event is set by each cancel it hears."""
    heard = asyncio.Event()
    cancels = stack.engine.cancels
    hear = cancels.heard

    def heard_one(text: str) -> None:
        hear(text)
        heard.set()

    cancels.heard = heard_one  # type: ignore[method-assign]
    listener = asyncio.create_task(stack.engine.listener.run())
    await asyncio.wait_for(stack.engine.listener.connected.wait(), timeout=30)  # a real-time guard
    return listener, heard


async def test_a_cancel_of_the_item_claimed_beside_an_outcome_takes_effect_before_it_starts(
    pool: AsyncConnectionPool[Any], database_url: str, tmp_path: Path
) -> None:
    """ADR 0070: the item claimed beside a's outcome is held until that outcome answers;
    a cancel heard meanwhile means its handler never runs."""
    started: list[int] = []
    stack = make_stack(pool, tmp_path, handlers=_recording(started))
    store = stack.store
    listener, heard = await _listening(stack)
    a, b, u = await _three_items(stack, pool)
    shutdown = asyncio.Event()
    run = asyncio.create_task(stack.worker("w1").run(shutdown))
    holder = await connect(database_url, "holder")
    admin = await connect(database_url, "observer")
    try:
        await _hold_the_outcome_of(stack, holder, admin, a)
        await _until_running(store, u)  # claimed beside a's outcome, held
        # The operator sees it so (ADR 0069): its Worker's earlier item is still running.
        status = await queue_status(pool, None, limit=10, owner=None)
        assert {r["id"]: r["held"] for r in status["running"]} == {a: False, u: True}
        assert await store.request_cancel(u) is CancelResult.REQUESTED
        await asyncio.wait_for(heard.wait(), timeout=30)  # a real-time guard
        await holder.execute("COMMIT")
        await stack.wait_finished(3)
    finally:
        shutdown.set()
        await asyncio.wait_for(run, timeout=30)  # a real-time guard
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
        await holder.close()
        await admin.close()
    assert started == [a, b]
    assert [(i.id, type(r.outcome).__name__) for i, r in stack.finished] == [
        (a, "Succeeded"),
        (u, "Cancelled"),
        (b, "Succeeded"),
    ]
    assert await _status(store, u) is Status.CANCELLED


async def test_a_cancel_heard_stops_a_running_item_before_its_first_heartbeat(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    stack = make_stack(pool, tmp_path)
    store = stack.store
    listener, heard = await _listening(stack)
    item = await store.enqueue("noop", payload={"seconds": 3600})
    shutdown = asyncio.Event()
    run = asyncio.create_task(stack.worker("w1").run(shutdown))
    try:
        await _until_running(store, item)
        assert await store.request_cancel(item) is CancelResult.REQUESTED
        await stack.wait_finished(1)  # the fake clock never moved: no heartbeat was due
    finally:
        shutdown.set()
        await asyncio.wait_for(run, timeout=30)  # a real-time guard
        listener.cancel()
        await asyncio.gather(listener, return_exceptions=True)
    assert heard.is_set()
    assert await _status(store, item) is Status.CANCELLED
