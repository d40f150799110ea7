"""Many claimers on separate connections: every item once, and no config ever doubled,
neither by the server's order of events nor in the attempt history's own times."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.db.pool import open_pool
from safelight.testing.rows import add_config
from safelight.testing.stores import (
    ALL_KINDS,
    LEASE,
    DatabaseTimeClock,
    count,
    make_store,
    overlapping_attempts,
    running_item_mismatches,
)

pytestmark = pytest.mark.integration

CLAIMERS = 8
CONFIGS = 20
SCOPED_ITEMS = 2000
UNSCOPED_ITEMS = 200

# Test-only instrumentation: a sequence number drawn inside each claim and each end of
# a scoped item. A claim can only see its config free after the previous item's end
# committed, so in a correct run every config's events alternate claim, end, claim,
# end; a second running item would show up as two claims in a row.
AUDIT = """
CREATE SEQUENCE audit_seq;
CREATE TABLE audit (seq bigint, config uuid, item bigint, event text);
CREATE FUNCTION audit_status() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.status = 'running' AND OLD.status <> 'running' THEN
        INSERT INTO audit VALUES (nextval('audit_seq'), NEW.storage_config_id, NEW.id, 'claim');
    ELSIF OLD.status = 'running' AND NEW.status <> 'running' THEN
        INSERT INTO audit VALUES (nextval('audit_seq'), NEW.storage_config_id, NEW.id, 'end');
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER audit_status AFTER UPDATE OF status ON work_items
    FOR EACH ROW WHEN (NEW.storage_config_id IS NOT NULL) EXECUTE FUNCTION audit_status();
"""


async def test_many_claimers_complete_every_item_once_without_overlap(
    pool: AsyncConnectionPool[Any], database_url: str
) -> None:
    rng = random.Random(337)
    # The statements stamp the database's times, as in production: the history below
    # is the one an operator would read.
    clock = DatabaseTimeClock()
    async with pool.connection() as conn:
        await conn.execute(AUDIT.encode())
    store = make_store(pool, clock)
    configs = [await add_config(pool, clock, root=f"/c{i}") for i in range(CONFIGS)]
    for i in range(SCOPED_ITEMS):
        await store.enqueue("noop", config_id=configs[i % CONFIGS], payload={"i": i})
    await store.enqueue_many("noop", [{"u": i} for i in range(UNSCOPED_ITEMS)])
    total = SCOPED_ITEMS + UNSCOPED_ITEMS

    completed: list[int] = []
    empty_claims = 0

    async def claimer(n: int) -> None:
        nonlocal empty_claims
        own_pool = await open_pool(database_url, min_size=1, max_size=1)
        try:
            own = make_store(own_pool, clock)
            idle_rounds = 0
            while idle_rounds < 50:
                item = await own.claim(f"w{n}", ALL_KINDS, lease_seconds=LEASE)
                if item is None:
                    # Nothing eligible right now (all configs busy, or a lost race).
                    empty_claims += 1
                    idle_rounds += 1
                    await asyncio.sleep(0)
                    continue
                idle_rounds = 0
                for _ in range(rng.randrange(4)):
                    await asyncio.sleep(0)  # let others claim while this item "runs"
                assert await own.complete(item.id, item.attempt, {"by": n})
                completed.append(item.id)
        finally:
            await own_pool.close()

    await asyncio.gather(*(claimer(n) for n in range(CLAIMERS)))

    assert len(completed) == total
    assert len(set(completed)) == total
    assert await count(pool, "SELECT count(*) FROM work_items WHERE status = 'succeeded'") == total
    assert (
        await count(pool, "SELECT count(*) FROM work_attempts WHERE outcome = 'succeeded'") == total
    )
    assert await count(pool, "SELECT count(*) FROM work_attempts WHERE attempt <> 1") == 0
    async with pool.connection() as conn:
        cur = await conn.execute("SELECT config, event FROM audit ORDER BY seq")
        events = await cur.fetchall()
    last: dict[Any, str] = {}
    for config, event in events:
        assert last.get(config, "end") != event, f"config {config}: two {event}s in a row"
        last[config] = event
    assert sum(1 for _, e in events if e == "claim") == SCOPED_ITEMS
    # Through all those races, every config's running_item_id (the claim's index of idle
    # configs, migration 0005) followed its items: none is left named.
    assert await running_item_mismatches(pool) == []
    assert (
        await count(pool, "SELECT count(*) FROM storage_configs WHERE running_item_id IS NOT NULL")
        == 0
    )
    # The operator's check, from the history's times alone: per config, no two attempts'
    # [claimed_at, ended_at) overlap. The times are the database's, not the fake clock's
    # (which stood still: every interval would be empty and the check vacuous).
    assert await overlapping_attempts(pool) == []
    assert (
        await count(
            pool,
            "SELECT count(*) FROM work_attempts WHERE NOT claimed_at < ended_at OR claimed_at = %s",
            clock.now(),
        )
        == 0
    )
