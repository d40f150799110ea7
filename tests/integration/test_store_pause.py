"""ADR 0060: a paused kind or config is claimed by no Worker, in every look of the
claim, and holds up nothing else; a resume releases it; a running item finishes."""

from __future__ import annotations

from typing import Any
from uuid import UUID

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.db.pool import connect
from safelight.observe.metrics import read_queue
from safelight.testing.fakeclock import FakeClock
from safelight.testing.rows import add_config
from safelight.testing.stores import ALL_KINDS, LEASE, count, make_store
from safelight.views.queries import queue_status
from safelight.work.model import Status
from safelight.work.pausing import Pauses
from safelight.work.store import QUERIES, WorkStore

pytestmark = pytest.mark.integration

FAST_LOOK = 16  # items_claim's first look reads the oldest 16 queued


async def _ids(store: WorkStore, n: int, worker: str = "w") -> list[int | None]:
    got = [await store.claim(f"{worker}{i}", ALL_KINDS, lease_seconds=LEASE) for i in range(n)]
    return [g.id if g else None for g in got]


async def _fill_fast_look(
    store: WorkStore, pool: AsyncConnectionPool[Any], clock: FakeClock
) -> None:
    """A busy config with more queued items than the first look reads, all older than
    what follows: that look finds nothing eligible, so the claim's answer comes from
    its second look (unscoped heads, idle configs' heads)."""
    busy = await add_config(pool, clock, root="/busy")
    await store.enqueue("crawl", config_id=busy)
    running = await store.claim("busy-worker", ["crawl"], lease_seconds=LEASE)
    assert running is not None
    for _ in range(FAST_LOOK + 2):
        await clock.advance(1)
        await store.enqueue("noop", config_id=busy)
    await clock.advance(1)


async def test_a_paused_config_holds_on_two_workers_until_resumed(
    pool: AsyncConnectionPool[Any],
) -> None:
    """First look: the paused config's head is the oldest item of all; the next
    config's, within the same 16, is taken instead, by either Worker."""
    clock = FakeClock()
    one, two = make_store(pool, clock), make_store(pool, clock)
    pauses = Pauses(pool, clock)
    c = await add_config(pool, clock, root="/c")
    d = await add_config(pool, clock, root="/d")
    c1 = await one.enqueue("crawl", config_id=c)
    await clock.advance(1)
    d1 = await one.enqueue("crawl", config_id=d)
    assert await pauses.pause_config(c, "alice")

    assert await _ids(one, 1, "one") == [d1]
    assert await _ids(two, 1, "two") == [None]
    assert await _ids(one, 1, "one") == [None]
    assert await pauses.resume_config(c)
    assert await _ids(two, 1, "two") == [c1]


async def test_a_paused_config_is_passed_over_by_the_second_look(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    one, two = make_store(pool, clock), make_store(pool, clock)
    pauses = Pauses(pool, clock)
    await _fill_fast_look(one, pool, clock)
    c = await add_config(pool, clock, root="/c")
    c1 = await one.enqueue("crawl", config_id=c)
    assert await pauses.pause_config(c, "alice")
    assert await _ids(one, 1, "one") == [None]
    assert await _ids(two, 1, "two") == [None]
    assert await pauses.resume_config(c)
    assert await _ids(two, 1, "two") == [c1]


async def test_a_paused_kind_holds_in_the_first_look_and_hides_no_other_item(
    pool: AsyncConnectionPool[Any],
) -> None:
    """The paused kind's item heads config C and the queue; C's next item, of another
    kind, and the unscoped item behind are taken; the paused one waits for resume."""
    clock = FakeClock()
    one, two = make_store(pool, clock), make_store(pool, clock)
    pauses = Pauses(pool, clock)
    c = await add_config(pool, clock, root="/c")
    crawl = await one.enqueue("crawl", config_id=c)
    await clock.advance(1)
    bursts = await one.enqueue("burst_detection", config_id=c)
    await clock.advance(1)
    assert await pauses.pause_kind("crawl", "alice")
    assert not await pauses.pause_kind("crawl", "bob")  # the first pause is kept
    assert await _ids(one, 1, "one") == [bursts]
    assert await two.complete(bursts, 1)
    assert await _ids(two, 1, "two") == [None]
    assert await pauses.resume_kind("crawl")
    assert not await pauses.resume_kind("crawl")
    assert await _ids(one, 1, "one") == [crawl]


async def test_a_paused_kind_holds_in_the_second_look_scoped_and_unscoped(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    one, two = make_store(pool, clock), make_store(pool, clock)
    pauses = Pauses(pool, clock)
    await _fill_fast_look(one, pool, clock)
    c = await add_config(pool, clock, root="/c")
    scoped = await one.enqueue("crawl", config_id=c)
    await clock.advance(1)
    unscoped = await one.enqueue("token_cleanup")
    assert await pauses.pause_kind("crawl", "alice")
    assert await pauses.pause_kind("token_cleanup", "alice")
    assert await _ids(one, 1, "one") == [None]
    assert await _ids(two, 1, "two") == [None]
    assert await pauses.resume_kind("token_cleanup")
    assert await _ids(two, 2, "two") == [unscoped, None]
    resumed = await pauses.resume_all()
    assert (resumed.kinds, resumed.configs) == (1, 0)
    assert await _ids(one, 1, "one") == [scoped]


async def test_a_paused_kinds_running_item_finishes_and_nothing_follows_it(
    pool: AsyncConnectionPool[Any],
) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    pauses = Pauses(pool, clock)
    c = await add_config(pool, clock, root="/c")
    first = await store.enqueue("crawl", config_id=c)
    running = await store.claim("w", ALL_KINDS, lease_seconds=LEASE)
    assert running is not None and running.id == first
    await clock.advance(1)
    await store.enqueue("crawl", config_id=c, dedup_key=None)
    assert await pauses.pause_kind("crawl", "alice")
    assert await pauses.pause_config(c, "alice")
    assert await store.complete(first, 1, {"ok": True})
    item = await store.get(first)
    assert item is not None and item.status is Status.SUCCEEDED
    assert await _ids(store, 1) == [None]
    # A run until idle does not wait for paused work: it counts only the unpaused.
    assert await store.pending_count(ALL_KINDS) == 0
    assert await pauses.resume_kind("crawl")
    assert await store.pending_count(ALL_KINDS) == 0  # the config is still paused
    assert await pauses.resume_config(c)
    assert await store.pending_count(ALL_KINDS) == 1


async def test_what_is_paused_is_listed_with_who_and_when(pool: AsyncConnectionPool[Any]) -> None:
    clock = FakeClock()
    store = make_store(pool, clock)
    pauses = Pauses(pool, clock)
    c = await add_config(pool, clock, owner="bob", root="/c")
    await store.enqueue("crawl", config_id=c)
    assert await pauses.pause_kind("crawl", "alice")
    await clock.advance(60)
    assert await pauses.pause_config(c, "bob")
    assert not await pauses.pause_config(UUID(int=1), "bob")
    listed = await pauses.paused()
    assert [(p.kind, p.config_id, p.paused_by, p.queued) for p in listed] == [
        ("crawl", None, "alice", 1),
        (None, c, "bob", 1),
    ]
    assert listed[1].root_path == "/c" and listed[1].paused_at == clock.now()
    assert listed[0].since().startswith("paused (by alice at ")
    assert [p.kind for p in await pauses.paused(owner="carol")] == ["crawl"]  # not bob's
    # Shown everywhere: status (CLI and dashboard) and the metrics.
    document = await queue_status(pool, None, limit=5, owner=None)
    assert [(p["kind"], p["config_id"], p["queued"]) for p in document["paused"]] == [
        ("crawl", None, 1),
        (None, c, 1),
    ]
    assert document["paused"][1]["shown"].startswith("paused (by bob at ")
    snapshot = await read_queue(pool)
    assert snapshot.paused == {"kind": 1, "config": 1}
    assert (await pauses.resume_all()).configs == 1
    assert (await read_queue(pool)).paused == {"kind": 0, "config": 0}


async def test_a_pause_that_commits_during_a_claim_binds_the_next_claim(
    pool: AsyncConnectionPool[Any], database_url: str
) -> None:
    """The race: a claim's statement is held open in its transaction while the pause
    commits. The claim read the queue before the pause: it keeps its one item, which
    runs to its end like any running item; every claim after it sees the pause."""
    clock = FakeClock()
    store = make_store(pool, clock)
    pauses = Pauses(pool, clock)
    c = await add_config(pool, clock, root="/c")
    d = await add_config(pool, clock, root="/d")
    c1 = await store.enqueue("crawl", config_id=c)
    await clock.advance(1)
    await store.enqueue("crawl", config_id=d)
    claimer = await connect(database_url, "claim-held")
    try:
        await claimer.execute("BEGIN")
        cur = await claimer.execute(
            QUERIES["items_claim"],
            {
                "worker_ids": ["held"],
                "limit": 1,
                "kinds": ["crawl"],
                "owner": None,
                "lease_seconds": LEASE,
                "now": clock.now(),
            },
        )
        row = await cur.fetchone()
        assert row is not None and row[0] == c1
        assert await pauses.pause_kind("crawl", "alice")  # not blocked by the claim
        await claimer.execute("COMMIT")
    finally:
        await claimer.close()
    assert await count(pool, "SELECT count(*) FROM work_items WHERE status = 'running'") == 1
    assert await _ids(store, 1) == [None]
