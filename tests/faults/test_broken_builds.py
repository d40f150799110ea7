"""The checker fails the run when a layer of the guarantee is broken (issue #13, item 4).

A short random run found nothing against each broken build (docs/reliability.md): the
layers cover for one another, so a random fault rarely lands where only one of them
stands. Each test here places its fault there, deterministically, and runs every check
of a fault run (``checker.check_everything``) over what happened:

- the self-stop: a Worker stopped right after a thumbnail's rename (``faultpoints``),
  cut off from the database and thawed once its lease has run out, with the preview's
  rename still to do;
- the ``(id, attempt)`` fence: the same Worker thawed after another attempt took its
  item, with every heartbeat held back (a table lock the test holds, which the fenced
  transaction's ``FOR SHARE`` passes), so that its fenced write is all that stands;
- the unique index of running items: two claims of one config made to race past the
  ``running_item_id`` hint (a transaction holding the first claim open).

Each runs the real build too, as a control: the same fault must find nothing.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.library.proxystore.layout import parse_proxy_name
from safelight.settings import Settings
from safelight.testing.stores import (
    TEST_KINDS,
    DatabaseTimeClock,
    wait_until_blocked_on_a_lock,
)
from safelight.work.store import QUERIES, RUNNING_CONFIG_INDEX, WorkStore
from tests.faults import checker
from tests.faults.processes import wait_for
from tests.faults.rig import RECOVERY_SECONDS, Rig

pytestmark = pytest.mark.faults

STOP_AFTER_THUMBNAIL = "write:thumbnail"


def _lease_over(rig: Rig, item_id: int) -> bool:
    """Whether the item's lease has run out by the database's clock."""
    ((over,),) = rig.query(
        "SELECT lease_expires_at < clock_timestamp() FROM work_items WHERE id = %s", item_id
    )
    return bool(over)


def _previews_after(rig: Rig, item_id: int, attempt: int, since: float) -> list[str]:
    """The previews the attempt renamed into place after ``since`` (monotonic)."""
    return [
        e.target
        for e in rig.effects()
        if e.owner == (item_id, attempt)
        and e.action == "write"
        and e.ok
        and e.start >= since
        and "full_preview." in e.target
    ]


def _rows_of_attempt(rig: Rig, item_id: int, attempt: int) -> list[str]:
    """The proxy rows written that name a file of the attempt (the audit trigger's)."""
    return [
        path
        for (path,) in rig.query("SELECT path FROM faults_proxy_rows WHERE path IS NOT NULL")
        if (name := parse_proxy_name(path)) is not None
        and name.written_by is not None
        and (name.written_by.item_id, name.written_by.attempt) == (item_id, attempt)
    ]


def _finish(rig: Rig, item_id: int) -> tuple[list[checker.Violation], list[checker.Explained]]:
    for proxy in rig.proxies:
        proxy.heal()
    wait_for("the crawl to succeed", lambda: rig.status(item_id)[0] == "succeeded", 120)
    wait_for("the queue to drain", rig.idle, 60)
    for worker in rig.workers:
        worker.terminate()
    return rig.check_everything()


def _checks(found: list[checker.Violation]) -> set[str]:
    return {v.check for v in found}


@pytest.mark.parametrize("build", ["intact", "no_self_stop"])
def test_a_worker_thawed_past_its_lease_writes_nothing_more(rig: Rig, build: str) -> None:
    worker, proxy = rig.start(
        "thawed", through_proxy=True, build=build, stop_after=STOP_AFTER_THUMBNAIL
    )
    assert proxy is not None
    wait_for("the start-up schedule to be done", rig.idle)
    rig.add_config(10)
    item_id = rig.enqueue_crawl()
    worker.wait_until_it_stops_itself()
    # Its heartbeat cannot renew the lease once it wakes: the self-stop alone stands
    # between it and the preview's rename.
    proxy.cut()
    wait_for("its lease to run out", lambda: _lease_over(rig, item_id))
    thawed = worker.frozen_since
    assert thawed is not None
    worker.thaw()
    wait_for(
        "the thawed attempt to stop itself, or to write",
        lambda: "self-stopped" in worker.log_text() or _previews_after(rig, item_id, 1, thawed),
    )
    found, _ = _finish(rig, item_id)
    if build == "intact":
        assert "attempt 1: self-stopped" in worker.log_text()
        assert found == []
    else:
        assert _previews_after(rig, item_id, 1, thawed)
        assert "stale_effects" in _checks(found), found
        # The fence still held: no row of a stale attempt.
        assert not _checks(found) & {"stale_writes", "proxy_rows"}, found


@pytest.mark.parametrize("build", ["intact", "no_self_stop", "no_fence"])
def test_a_stale_attempt_at_its_fenced_write_commits_nothing(rig: Rig, build: str) -> None:
    stale, _ = rig.start("stale", build=build, stop_after=STOP_AFTER_THUMBNAIL)
    wait_for("the start-up schedule to be done", rig.idle)
    rig.add_config(10)
    item_id = rig.enqueue_crawl()
    stale.wait_until_it_stops_itself()
    rig.start("fresh")
    wait_for("another attempt to take the item", lambda: rig.status(item_id)[1] >= 2)
    with psycopg.connect(rig.url) as lock:
        # Every heartbeat (an UPDATE) waits on this lock, so the stale attempt cannot
        # learn from one that it lost its item; a fenced transaction's FOR SHARE passes.
        lock.execute("LOCK TABLE work_items IN SHARE MODE")
        stale.thaw()
        wait_for(
            "the stale attempt to stop, or to commit",
            lambda: (
                "attempt 1: self-stopped" in stale.log_text()
                or "attempt 1: lost the item" in stale.log_text()
                or _rows_of_attempt(rig, item_id, 1)
            ),
        )
    found, _ = _finish(rig, item_id)
    checks = _checks(found)
    if build == "intact":
        assert "attempt 1: self-stopped" in stale.log_text()
        assert found == []
    elif build == "no_self_stop":
        assert "attempt 1: lost the item" in stale.log_text()
        assert "stale_effects" in checks, found
        assert not checks & {"stale_writes", "proxy_rows"}, found
    else:
        assert _rows_of_attempt(rig, item_id, 1)
        assert "proxy_rows" in checks, found


@pytest.mark.parametrize("index", ["kept", "dropped"])
async def test_two_claims_racing_for_one_config(
    fault_database: str, tmp_path: Path, index: str
) -> None:
    """Claim A holds its claim open; claim B, of another kind (so the config's other
    item is its candidate), passes the running check, which cannot see A's uncommitted
    ``running_item_id``: only the index then keeps B out."""
    url = fault_database
    if index == "dropped":
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute(f"DROP INDEX {RUNNING_CONFIG_INDEX}")
    clock = DatabaseTimeClock()
    pools = {
        app: AsyncConnectionPool(
            psycopg.conninfo.make_conninfo(url, application_name=app),
            min_size=1,
            max_size=2,
            kwargs={"autocommit": True},
            open=False,
        )
        for app in ("setup", "claim-b")
    }
    for pool in pools.values():
        await pool.open()
    a_conn = await psycopg.AsyncConnection.connect(url, autocommit=True, application_name="claim-a")
    admin = await psycopg.AsyncConnection.connect(url, autocommit=True)
    try:
        store = WorkStore(pools["setup"], clock, TEST_KINDS, max_stalls=Settings().max_stalls)
        cur = await admin.execute(
            "INSERT INTO storage_configs (owner, root_path, created_at) "
            "VALUES ('alice', '/photos/race', now()) RETURNING id"
        )
        row = await cur.fetchone()
        assert row is not None
        config = row[0]
        crawl = await store.enqueue("crawl", config_id=config)
        bursts = await store.enqueue("burst_detection", config_id=config)
        await a_conn.execute("BEGIN")
        cur = await a_conn.execute(
            QUERIES["items_claim"],
            {
                "worker_ids": ["A"],
                "limit": 1,
                "kinds": ["crawl"],
                "owner": None,
                "lease_seconds": 60.0,
                "now": None,
            },
        )
        claimed_a = await cur.fetchone()
        assert claimed_a is not None and claimed_a[0] == crawl
        b_store = WorkStore(pools["claim-b"], clock, TEST_KINDS, max_stalls=Settings().max_stalls)
        b_claim = asyncio.create_task(b_store.claim("B", ["burst_detection"], lease_seconds=60.0))
        # B waits on A: on the index entry of A's running item, or (dropped) on the
        # config row A's trigger updated.
        await wait_until_blocked_on_a_lock(admin, "claim-b")
        await a_conn.execute("COMMIT")
        claimed_b = await b_claim
        if claimed_b is not None:
            assert claimed_b.id == bursts
            assert await store.complete(bursts, 1)
        assert await store.complete(crawl, 1)
    finally:
        await a_conn.close()
        await admin.close()
        for pool in pools.values():
            await pool.close()

    with psycopg.connect(url) as conn:
        found, _ = checker.check_everything(conn, [], {}, tmp_path)
    if index == "kept":
        assert claimed_b is None
        assert found == []
    else:
        assert claimed_b is not None
        assert "attempts" in _checks(found), found
        assert any("overlap in the attempt history" in str(v) for v in found), found
        assert any("while item" in str(v) for v in found), found


def _noop(rig: Rig, seconds: float) -> int:
    with psycopg.connect(rig.url, autocommit=True) as conn:
        row = conn.execute(
            "INSERT INTO work_items (kind, payload, requested_at) "
            "VALUES ('noop', %s, now()) RETURNING id",
            (psycopg.types.json.Jsonb({"seconds": seconds}),),
        ).fetchone()
    assert row is not None
    return int(row[0])


def _liveness(rig: Rig) -> list[checker.Violation]:
    with psycopg.connect(rig.url) as conn:
        return checker.check_liveness(
            conn,
            {},
            recovery_seconds=RECOVERY_SECONDS,
            backoff_max_seconds=Settings().outage_backoff_max_seconds,
        )


@pytest.mark.parametrize("build", ["intact", "no_recovery"])
def test_an_item_whose_worker_died_is_taken_back_while_another_is_up(rig: Rig, build: str) -> None:
    """Check 2 (liveness) against a Worker that runs its loops but recovers nothing: the
    item a killed Worker left running is reported once another Worker has been up and
    connected past the grace; the real build takes it back, and the check finds nothing."""
    item_id = _noop(rig, 60.0)
    first, _ = rig.start("first", build=build)
    wait_for("the first Worker to claim the item", lambda: rig.status(item_id)[2] == "first")
    second, _ = rig.start("second", build=build)
    wait_for("the second Worker to serve", lambda: "worker(s) second serving" in second.log_text())
    first.kill()
    if build == "intact":
        wait_for("recovery to take the item back", lambda: rig.status(item_id)[1] == 2, 60)
        assert _liveness(rig) == []
    else:
        found = wait_for("the check to report the item", lambda: _liveness(rig), 60)
        assert [v.check for v in found] == ["items"], found
        assert f"item {item_id} (noop) attempt 1 of worker first" in str(found[0])
        assert rig.status(item_id)[:2] == ("running", 1)
