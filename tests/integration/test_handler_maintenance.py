"""Token cleanup, retention, noop, and what an attempt that lost its item may still do
(nothing), through the real store and executor on real PostgreSQL."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.handlers import KIND_SPECS, build_handlers
from safelight.handlers.contract import Handler, HandlerContext
from safelight.library.proxystore.layout import PROXY_ROOT_MARKER
from safelight.testing.handlers import (
    KINDS,
    LEASE,
    files_under,
    jpeg,
    make_harness,
    write,
)
from safelight.work.errors import InvalidWorkItem
from safelight.work.kinds import Scope
from safelight.work.model import Status
from safelight.work.outcome import Lost, SelfStopped

pytestmark = pytest.mark.integration


def test_every_kind_has_its_scope_and_a_handler() -> None:
    assert {s.name: s.scope for s in KIND_SPECS} == {
        "crawl": Scope.REQUIRED,
        "burst_detection": Scope.REQUIRED,
        "purge": Scope.REQUIRED,
        "proxy_deletion": Scope.OPTIONAL,
        "proxy_sweep": Scope.FORBIDDEN,
        "token_cleanup": Scope.FORBIDDEN,
        "work_item_retention": Scope.FORBIDDEN,
        "noop": Scope.OPTIONAL,
        "catalogue_backup": Scope.FORBIDDEN,
        "scrub": Scope.REQUIRED,
        "proxy_remake": Scope.REQUIRED,
        "place_fill": Scope.REQUIRED,
        "faces": Scope.REQUIRED,
    }


async def test_token_cleanup_deletes_expired_tokens_and_sessions_only(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    now = h.clock.now()
    # Since migration 0019 a token and a session belong to a user.
    async with pool.connection() as conn:
        cur = await conn.execute(
            "INSERT INTO users (name, created_at) VALUES ('alice', %s) RETURNING id", (now,)
        )
        row = await cur.fetchone()
        assert row is not None
        user_id = row[0]
    for name, expires in (("old", -10), ("just", -1), ("later", 1), ("future", 3600)):
        async with pool.connection() as conn:
            await conn.execute(
                "INSERT INTO auth_tokens (user_name, token_hash, created_at, expires_at)"
                " VALUES ('alice', %s, %s, %s)",
                (name, now - timedelta(days=1), now + timedelta(seconds=expires)),
            )
            await conn.execute(
                "INSERT INTO web_sessions (id_digest, user_id, origin, csrf_digest,"
                " created_at, last_seen_at, expires_at)"
                " VALUES (%s, %s, 'http://127.0.0.1:8080', %s, %s, %s, %s)",
                (
                    name.encode(),
                    user_id,
                    b"csrf",
                    now - timedelta(days=1),
                    now - timedelta(days=1),
                    now + timedelta(seconds=expires),
                ),
            )

    item = await h.run("token_cleanup")

    assert item.status is Status.SUCCEEDED, item.error
    assert item.result == {"deleted": 2, "sessions_deleted": 2}
    assert [r[0] for r in await h.rows("SELECT token_hash FROM auth_tokens ORDER BY 1")] == [
        "future",
        "later",
    ]
    assert [bytes(r[0]) for r in await h.rows("SELECT id_digest FROM web_sessions ORDER BY 1")] == [
        b"future",
        b"later",
    ]


async def test_retention_deletes_items_finished_before_the_retention(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path, work_retention_days=2)
    old = await h.run("noop")
    failed = await h.run_stored("noop", payload={"seconds": "soon"})
    assert failed.status is Status.FAILED
    await h.clock.advance(3 * 86400)
    recent = await h.run("noop")
    queued = await h.store.enqueue("proxy_sweep")

    item = await h.run("work_item_retention")

    assert item.status is Status.SUCCEEDED, item.error
    assert item.result == {"deleted": 2, "retention_days": 2}
    remaining = {r[0] for r in await h.rows("SELECT id FROM work_items")}
    assert old.id not in remaining and failed.id not in remaining
    assert {recent.id, item.id, queued} <= remaining


async def test_noop_waits_on_the_clock_and_returns_its_result(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    h = make_harness(pool, tmp_path)
    assert (await h.run("noop")).result == {"slept": 0}
    assert (await h.run("noop", payload={"result": {"answer": 42}})).result == {"answer": 42}

    task = asyncio.create_task(h.run("noop", payload={"seconds": 5}))
    for _ in range(200):
        await asyncio.sleep(0.005)
        if await h.value("SELECT count(*) FROM work_items WHERE status = 'running'"):
            break
    await h.clock.advance(4.9)
    assert not task.done()
    await h.clock.advance(0.1)
    item = await asyncio.wait_for(task, timeout=10)
    assert item.status is Status.SUCCEEDED and item.result == {"slept": 5}


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        ({"seconds": "x"}, 'payload field "seconds": expected a number, got "x"'),
        ({"seconds": -1}, 'payload field "seconds": expected a number >= 0, got -1'),
        ({"result": [1]}, 'payload field "result": expected a JSON object, got [1]'),
        ({"sleep": 1}, 'payload field "sleep" is not one it takes (it takes: result, seconds)'),
    ],
)
async def test_noop_refuses_a_malformed_payload(
    pool: AsyncConnectionPool[Any],
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    payload: dict[str, Any],
    message: str,
) -> None:
    """At enqueue, with nothing written; and in the Worker, with one line and no
    traceback, for an item queued before payloads were checked."""
    h = make_harness(pool, tmp_path)
    with pytest.raises(InvalidWorkItem) as refused:
        await h.store.enqueue("noop", payload=payload)
    assert str(refused.value) == f"enqueue noop: {message}"
    assert await h.value("SELECT count(*) FROM work_items") == 0

    with caplog.at_level(logging.INFO):
        item = await h.run_stored("noop", payload=payload)
    assert item.status is Status.FAILED
    assert item.error == f"MalformedPayload: noop: {message}"
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert [r.getMessage() for r in errors] == [
        f"work item {item.id} attempt 1: failed: MalformedPayload: noop: {message}"
    ]
    assert errors[0].exc_info is None


def gated(
    handlers: dict[str, Handler], kind: str, gate: asyncio.Event, parked: asyncio.Event
) -> dict[str, Handler]:
    inner = handlers[kind]

    async def handler(ctx: HandlerContext) -> dict[str, Any] | None:
        parked.set()
        await gate.wait()
        return await inner(ctx)

    return {**handlers, kind: handler}


async def test_an_attempt_whose_item_was_taken_back_writes_nothing(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    base = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    write(root, "a.jpg", jpeg(1))
    write(root, "b.jpg", jpeg(2))
    config = await base.add_config(root)
    assert (await base.run("crawl", config_id=config)).status is Status.SUCCEEDED
    (root / "a.jpg").unlink()
    assert (await base.run("crawl", config_id=config)).status is Status.SUCCEEDED
    await base.run("noop")  # runs the queued follow-ups first: the queue is empty after
    proxies_before = files_under(base.proxy_root)
    rows_before = await base.rows("SELECT id, is_deleted FROM assets ORDER BY id")
    gate, parked = asyncio.Event(), asyncio.Event()
    h = make_harness(
        pool, tmp_path, clock=base.clock, handlers=gated(base.handlers, "purge", gate, parked)
    )
    item_id = await h.store.enqueue("purge", config_id=config)
    claimed = await h.store.claim("w1", KINDS, lease_seconds=LEASE)
    assert claimed is not None and claimed.id == item_id
    run = asyncio.create_task(h.run_claimed(claimed))
    await parked.wait()

    # Behind the attempt's back, its lease runs out in the database and lease recovery
    # hands the item to another Worker; the attempt's own clock has not moved.
    async with pool.connection() as conn:
        await conn.execute(
            "UPDATE work_items SET lease_expires_at = %s WHERE id = %s",
            (h.clock.now() - timedelta(seconds=1), item_id),
        )
    assert (await h.store.recover_expired_leases()).requeued == 1
    again = await h.store.claim("w2", KINDS, lease_seconds=LEASE)
    assert again is not None and again.attempt == 2
    gate.set()
    result = await asyncio.wait_for(run, timeout=10)

    assert isinstance(result.outcome, Lost)
    assert files_under(base.proxy_root) == proxies_before
    assert await base.rows("SELECT id, is_deleted FROM assets ORDER BY id") == rows_before
    current = await h.store.get(item_id)
    assert current is not None and current.status is Status.RUNNING and current.attempt == 2


async def test_an_attempt_frozen_past_its_lease_writes_no_file(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    base = make_harness(pool, tmp_path)
    root = tmp_path / "library"
    write(root, "a.jpg", jpeg(1))
    config = await base.add_config(root)
    gate, parked = asyncio.Event(), asyncio.Event()
    h = make_harness(
        pool,
        tmp_path,
        clock=base.clock,
        handlers=gated(build_handlers(base.services), "crawl", gate, parked),
    )
    item_id = await h.store.enqueue("crawl", config_id=config)
    claimed = await h.store.claim("w1", KINDS, lease_seconds=LEASE)
    assert claimed is not None
    run = asyncio.create_task(h.run_claimed(claimed))
    await parked.wait()

    # The process is frozen (no timer fires) past the whole lease; meanwhile recovery
    # elsewhere requeues the item and another Worker claims it.
    h.clock.jump(LEASE + 1)
    assert (await h.store.recover_expired_leases()).requeued == 1
    assert await h.store.claim("w2", KINDS, lease_seconds=LEASE) is not None
    gate.set()
    result = await asyncio.wait_for(run, timeout=10)

    assert isinstance(result.outcome, SelfStopped)
    # A thread that was encoding when the handler was cancelled finishes its step on its
    # own: its rename is refused and it removes its temporary file.
    # (The proxy root's marker, written when the live attempt began, is no config's file.)
    for _ in range(200):
        if not base.proxy_root.exists() or not files_under(base.proxy_root) - {PROXY_ROOT_MARKER}:
            break
        await asyncio.sleep(0.01)
    assert (
        not base.proxy_root.exists() or files_under(base.proxy_root) - {PROXY_ROOT_MARKER} == set()
    )
    assert await h.value("SELECT count(*) FROM assets") == 0
    current = await h.store.get(item_id)
    assert current is not None and current.attempt == 2
