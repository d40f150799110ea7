"""Regression tests for the bugs the fault-injection suite found, each fault made
deterministic: real ``safelight worker`` processes on the suite's own PostgreSQL.

- Bug 1 (fixed in 898a27f): an attempt counted its self-stop from when the claim's
  answer arrived, so a claim answered after its lease had expired (the link was cut
  while it was in flight) wrote proxies outside any lease.
- Bug 2 (fixed in 048225a): a Worker frozen or cut off inside a fenced transaction kept
  its item's row locked FOR SHARE, which lease recovery skips, for as long as the
  connection lived: its config was blocked.
"""

from __future__ import annotations

import time

import psycopg
import pytest

from tests.faults.processes import WorkerProcess, wait_for
from tests.faults.rig import LEASE_SECONDS, RECOVERY_SECONDS, Rig

pytestmark = pytest.mark.faults


def test_a_claim_answered_after_its_lease_expired_touches_no_file(rig: Rig) -> None:
    _, proxy = rig.start("late", through_proxy=True)
    assert proxy is not None
    wait_for("the start-up schedule to be done", rig.idle)
    rig.add_config(20)
    proxy.cut()
    # The idle Worker polls every 0.5 s: its next claim goes out into the cut link and
    # waits there, with the claim's "now" already read.
    time.sleep(1.0)
    item_id = rig.enqueue_crawl()
    # Cut off for longer than a lease after that claim went out: when the link heals,
    # the claim takes the crawl with a lease that has already expired.
    time.sleep(LEASE_SECONDS + 0.5)
    proxy.heal()
    wait_for("the crawl to finish", lambda: rig.status(item_id)[0] == "succeeded")
    # Another Worker could have claimed the config the moment that lease expired, so the
    # late attempt must not touch a file: its deadline had passed before it began.
    # (Before the fix it wrote proxies until its first heartbeat, which either found the
    # item recovered or, if it came first, renewed the expired lease.)
    assert rig.effects_outside_leases() == []


def _blocked_insert(rig: Rig) -> bool:
    rows = rig.query(
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
        "AND query LIKE '%%INSERT INTO assets%%'"
    )
    return bool(rows[0][0])


def _hold_inside_a_fenced_transaction(rig: Rig, item_id: int) -> WorkerProcess:
    """Make the crawl's first fenced transaction wait on a table lock the test holds,
    so that its Worker is known to be inside it; return that Worker. The caller
    releases the lock (``rig.lock``) once it has done its fault."""
    wait_for("the crawl's insert to wait on the test's lock", lambda: _blocked_insert(rig))
    (name,) = (w for w in (rig.status(item_id)[2],) if w)
    return next(w for w in rig.workers if w.name == name)


def _recovered_within(rig: Rig, item_id: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        status, attempt, _ = rig.status(item_id)
        if (status, attempt) != ("running", 1):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize("fault", ["freeze", "cut"])
def test_a_worker_stuck_inside_a_fenced_transaction_does_not_block_its_config(
    rig: Rig, fault: str
) -> None:
    rig.add_config(10)
    first, proxy_one = rig.start("one", through_proxy=True)
    _, proxy_two = rig.start("two", through_proxy=True)
    wait_for("the start-up schedule to be done", rig.idle)
    with psycopg.connect(rig.url) as lock:
        # Inserts into assets wait on this lock; reads do not.
        lock.execute("LOCK TABLE assets IN SHARE ROW EXCLUSIVE MODE")
        item_id = rig.enqueue_crawl()
        stuck = _hold_inside_a_fenced_transaction(rig, item_id)
        if fault == "freeze":
            stuck.freeze()
        else:
            proxy = proxy_one if stuck is first else proxy_two
            assert proxy is not None
            proxy.cut()
        # The insert goes through; the transaction then waits for a client that is
        # frozen, or cut off, while it holds the item row FOR SHARE.
    started = time.monotonic()
    recovered = _recovered_within(rig, item_id, LEASE_SECONDS + RECOVERY_SECONDS + 3.0)
    waited = time.monotonic() - started
    for proxy in rig.proxies:
        proxy.heal()
    if stuck.frozen_since is not None:
        stuck.thaw()
    assert recovered, (
        f"item {item_id} was still running its first attempt {waited:.1f} s after its "
        f"Worker was {'frozen' if fault == 'freeze' else 'cut off'} inside a fenced transaction"
    )
    wait_for("the crawl to finish", lambda: rig.status(item_id)[0] == "succeeded")
    assert rig.effects_outside_leases() == []
