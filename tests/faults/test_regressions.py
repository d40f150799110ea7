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
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
import pytest

from safelight.library.samplegen import generate_jpegs
from tests.faults import checker
from tests.faults.cluster import PrivateCluster
from tests.faults.effects import effects_of, read_lines
from tests.faults.netproxy import TcpProxy
from tests.faults.processes import WorkerProcess, start_worker, wait_for

pytestmark = pytest.mark.faults

LEASE_SECONDS = 2.0
RECOVERY_SECONDS = 0.5


@dataclass
class Rig:
    cluster: PrivateCluster
    url: str
    folder: Path
    config_id: str = ""
    workers: list[WorkerProcess] = field(default_factory=list)
    proxies: list[TcpProxy] = field(default_factory=list)
    wall_minus_monotonic: float = field(
        default_factory=lambda: datetime.now(UTC).timestamp() - time.monotonic()
    )

    def env(self, url: str) -> dict[str, str]:
        return {
            "SAFELIGHT_DATABASE_URL": url,
            "SAFELIGHT_HOME": str(self.folder / "home"),
            "SAFELIGHT_PROXY_ROOT": str(self.folder / "proxies"),
            "SAFELIGHT_LEASE_SECONDS": str(LEASE_SECONDS),
            "SAFELIGHT_HEARTBEAT_SECONDS": "0.5",
            "SAFELIGHT_POLL_SECONDS": "0.5",
            "SAFELIGHT_RECOVERY_INTERVAL_SECONDS": str(RECOVERY_SECONDS),
            "SAFELIGHT_SHUTDOWN_GRACE_SECONDS": "1",
            "SAFELIGHT_MAX_CONCURRENT_FILES": "1",
        }

    def start(
        self, name: str, *, through_proxy: bool = False
    ) -> tuple[WorkerProcess, TcpProxy | None]:
        proxy = None
        url = self.url
        if through_proxy:
            proxy = TcpProxy("127.0.0.1", self.cluster.port)
            self.proxies.append(proxy)
            url = url.replace(f":{self.cluster.port}/", f":{proxy.port}/")
        worker = start_worker(name, self.folder / "workers", self.env(url))
        self.workers.append(worker)
        return worker, proxy

    def query(self, sql: str, *params: Any) -> list[tuple[Any, ...]]:
        with psycopg.connect(self.url) as conn:
            return conn.execute(sql, params).fetchall()  # type: ignore[arg-type]

    def add_config(self, photos: int) -> None:
        library = self.folder / "library"
        generate_jpegs(library, photos, 0.3, seed=9, per_folder=10)
        with psycopg.connect(self.url, autocommit=True) as conn:
            row = conn.execute(
                "INSERT INTO storage_configs (owner, root_path, created_at) "
                "VALUES ('alice', %s, now()) RETURNING id",
                (str(library.resolve()),),
            ).fetchone()
            assert row is not None
            self.config_id = str(row[0])
            # No crawl from the Workers' scheduler beside the test's own.
            conn.execute(
                "INSERT INTO work_schedules (name, kind, storage_config_id, next_run_at) "
                "VALUES (%s, 'crawl', %s, now() + interval '1 day')",
                (f"crawl:{self.config_id}", self.config_id),
            )

    def enqueue_crawl(self) -> int:
        with psycopg.connect(self.url, autocommit=True) as conn:
            row = conn.execute(
                "INSERT INTO work_items (kind, storage_config_id, requested_at) "
                "VALUES ('crawl', %s, now()) RETURNING id",
                (self.config_id,),
            ).fetchone()
        assert row is not None
        return int(row[0])

    def idle(self) -> bool:
        """Every Worker is up (it logs so once its database is open) and every item,
        the Workers' start-up schedule included, is finished."""
        if not all(f"worker(s) {w.name} serving" in w.log_text() for w in self.workers):
            return False
        rows = self.query(
            "SELECT count(*) FILTER (WHERE status IN ('queued', 'running')), count(*) "
            "FROM work_items"
        )
        return rows[0][0] == 0 and rows[0][1] > 0

    def status(self, item_id: int) -> tuple[str, int, str | None]:
        ((status, attempt, worker),) = self.query(
            "SELECT status::text, attempt, worker_id FROM work_items WHERE id = %s", item_id
        )
        return status, attempt, worker

    def effects_outside_leases(self) -> list[checker.Violation]:
        died = {w.pid: w.died_at for w in self.workers}
        effects = effects_of(read_lines(w.journal for w in self.workers), died)
        with psycopg.connect(self.url) as conn:
            return checker.check_effects_within_lease(conn, effects, self.wall_minus_monotonic)


@pytest.fixture
def rig(private_cluster: PrivateCluster, fault_database: str, scratch: Path) -> Iterator[Rig]:
    state = Rig(private_cluster, fault_database, scratch)
    try:
        yield state
    finally:
        for proxy in state.proxies:
            proxy.heal()
        for worker in state.workers:
            worker.ensure_dead()
        for proxy in state.proxies:
            proxy.close()


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
