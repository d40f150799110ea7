"""Hostile clients of a Worker's metrics port and of the dashboard (issue #27): a
scrape flood with a short lease, slow-header clients, connections past the cap. The
1,100 idle connections during a crawl, in real processes with a low descriptor limit,
are in ``tests/acceptance/test_hostile_connections.py``."""

from __future__ import annotations

import asyncio
import socket
import urllib.request
from collections.abc import AsyncIterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from psycopg_pool import AsyncConnectionPool

from safelight.app import (
    METRICS_APPLICATION_NAME,
    RunReport,
    WorkerOptions,
    app_store,
    run_workers,
)
from safelight.db.database import Database
from safelight.db.pool import Connections, OneConnection
from safelight.observe import metrics as metrics_module
from safelight.settings import Settings
from safelight.testing.fakeclock import FakeClock
from safelight.testing.web import TODAY, clock_on, web_settings
from safelight.testing.webserver import dashboard_in_thread
from safelight.work.model import Status
from tests.faults.cluster import free_port

pytestmark = pytest.mark.integration

GUARD_SECONDS = 60  # a bound on a hang, never a tested deadline
LEASE_SECONDS = 2.0
HEARTBEAT_SECONDS = 0.5
FLOOD = 300


def get(url: str) -> tuple[int, bytes]:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.status, response.read()


def scrape(port: int) -> tuple[int, bytes]:
    """A scrape with a raw socket: urllib's own pool of threads would cap the flood."""
    with socket.create_connection(("127.0.0.1", port), timeout=GUARD_SECONDS) as sock:
        sock.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


async def scrape_async(port: int) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
    await writer.drain()
    answer = await reader.read()
    writer.close()
    return answer


async def until(check: Any) -> None:
    async def poll() -> None:
        while not await check():  # noqa: ASYNC110
            await asyncio.sleep(0.01)

    await asyncio.wait_for(poll(), GUARD_SECONDS)


@pytest.fixture
async def slow_reads(
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[tuple[list[Any], asyncio.Event]]:
    """Every reading of the queue takes a connection from what it is given and holds it
    until the test lets go, as a slow database would: (readings, the release)."""
    readings: list[Any] = []
    release = asyncio.Event()
    real = metrics_module.read_queue

    async def slow(pool: Connections) -> metrics_module.QueueSnapshot:
        readings.append(pool)
        async with pool.connection():
            await release.wait()
        return await real(pool)

    monkeypatch.setattr(metrics_module, "read_queue", slow)
    yield readings, release
    release.set()


async def test_a_scrape_flood_with_a_short_lease_neither_starves_the_workers_nor_stops_one(
    database_url: str,
    pool: AsyncConnectionPool[Any],
    tmp_path: Path,
    slow_reads: tuple[list[Any], asyncio.Event],
) -> None:
    """Once, every scrape took a connection of the Workers' pool: a flood of them, each
    waiting on the database, left the heartbeats none, and the Worker stopped itself
    (8 s lease). Scrapes now share one reading, on a connection of their own."""
    readings, release = slow_reads
    clock = FakeClock()
    port = free_port()
    config = Settings(
        database_url=database_url,
        home=tmp_path / "home",
        proxy_root=tmp_path / "proxies",
        decode_processes=0,
        poll_seconds=0.05,
        lease_seconds=LEASE_SECONDS,
        heartbeat_seconds=HEARTBEAT_SECONDS,
        metrics_port=port,
        metrics_max_connections=FLOOD + 10,
    )
    database = Database(url=database_url, pool=pool)
    store = app_store(database, config, clock)
    item_id = await store.enqueue("noop", payload={"seconds": 3600})
    shutdown = asyncio.Event()
    run = asyncio.create_task(
        run_workers(
            config,
            WorkerOptions(concurrency=1, serve_metrics=True, name="flooded", until_idle=True),
            database=database,
            install_signal_handlers=False,
            clock=clock,
            shutdown=shutdown,
        )
    )

    async def lease_at(now: datetime) -> bool:
        item = await store.get(item_id)
        assert item is not None and item.status in (Status.QUEUED, Status.RUNNING), item
        lease = item.lease_expires_at
        return lease is not None and (lease - now).total_seconds() >= LEASE_SECONDS - 0.25

    try:
        await until(lambda: lease_at(clock.now()))
        flood = [asyncio.ensure_future(scrape_async(port)) for _ in range(FLOOD)]
        await until(lambda: _true(len(readings) == 1))
        # Four leases long, a heartbeat due at every other step; each lands, the pool
        # being free, before the clock moves on.
        for _ in range(int(4 * LEASE_SECONDS / 0.25)):
            await clock.advance(0.25)
            now = clock.now()
            await until(lambda now=now: lease_at(now))
        assert not run.done()
        item = await store.get(item_id)
        assert item is not None and (item.status, item.attempt) == (Status.RUNNING, 1)
        # Two refresh intervals went by on the clock: at most two readings, each on the
        # metrics port's own connection, whatever the flood.
        release.set()
        answers = await asyncio.wait_for(asyncio.gather(*flood), GUARD_SECONDS)
        assert all(a.startswith(b"HTTP/1.1 200 OK") for a in answers)
        assert all(b"safelight_self_stops_total 0.0" in a for a in answers)
        assert all(b"safelight_heartbeat_failures_total 0.0" in a for a in answers)
        assert 1 <= len(readings) <= 2 and all(r is not pool for r in readings)
        # The first reading timed out at PROBE_SECONDS on the clock and its failure was
        # kept an interval from then, which ended as the clock stopped: whether a flood
        # scrape came that late, and read again, is the kernel's (its listen backlog
        # holds connects back for a retry, in real time). One more scrape settles it:
        # two readings, the last at this instant, after the release.
        settled = await asyncio.wait_for(scrape_async(port), GUARD_SECONDS)
        assert b"safelight_database_up 1.0" in settled
        read = len(readings)
        assert read == 2 and all(r is not pool for r in readings)
        # Within the interval, another flood is answered from the snapshot.
        again = await asyncio.wait_for(
            asyncio.gather(*(scrape_async(port) for _ in range(100))), GUARD_SECONDS
        )
        assert all(a.startswith(b"HTTP/1.1 200 OK") for a in again)
        assert all(b"safelight_database_up 1.0" in a for a in again)
        assert len(readings) == read
    finally:
        release.set()
        shutdown.set()
        report: RunReport = await asyncio.wait_for(run, GUARD_SECONDS)
    assert report.exit_code == 0


async def _true(value: bool) -> bool:
    return value


def closed_unanswered(sock: socket.socket) -> bool:
    try:
        return sock.recv(1024) == b""
    except ConnectionResetError:
        return True


def port_of(url: str) -> int:
    return int(url.rstrip("/").rsplit(":", 1)[1])


async def test_the_dashboard_drops_a_slow_header_client(database_url: str, tmp_path: Path) -> None:
    settings = web_settings(database_url, tmp_path, request_head_seconds=0.2)
    with dashboard_in_thread(settings, clock=clock_on(TODAY)) as url:
        port = port_of(url)
        # A head that never ends, and a client that never sends: both dropped.
        slow = socket.create_connection(("127.0.0.1", port), timeout=GUARD_SECONDS)
        slow.sendall(b"GET / HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        silent = socket.create_connection(("127.0.0.1", port), timeout=GUARD_SECONDS)
        assert await asyncio.to_thread(closed_unanswered, slow)
        assert await asyncio.to_thread(closed_unanswered, silent)
        # A kept-alive connection that starts a second request and stalls: dropped too.
        kept = socket.create_connection(("127.0.0.1", port), timeout=GUARD_SECONDS)
        host = f"Host: 127.0.0.1:{port}".encode()
        kept.sendall(b"GET /static/blurhash.js HTTP/1.1\r\n" + host + b"\r\n\r\n")
        first = await asyncio.to_thread(kept.recv, 65536)
        assert first.startswith(b"HTTP/1.1 200 OK")
        kept.sendall(b"GET /static/blurhash.js HTTP/1.1\r\nHo")
        while await asyncio.to_thread(closed_unanswered, kept) is False:
            pass  # the rest of the first answer, then the close
        for sock in (slow, silent, kept):
            sock.close()
        status, body = await asyncio.to_thread(get, url + "static/blurhash.js")
        assert status == 200 and b"decode83" in body


async def test_the_dashboard_closes_connections_past_its_cap_as_they_come(
    database_url: str, tmp_path: Path
) -> None:
    settings = web_settings(database_url, tmp_path, web_max_connections=4)
    with dashboard_in_thread(settings, clock=clock_on(TODAY)) as url:
        port = port_of(url)
        held = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
        for sock in held:
            sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n")  # and stall
        extra = socket.create_connection(("127.0.0.1", port), timeout=GUARD_SECONDS)
        extra.sendall(b"GET /static/blurhash.js HTTP/1.1\r\nHost: x\r\n\r\n")
        assert await asyncio.to_thread(closed_unanswered, extra)
        extra.close()
        held.pop().close()

        # One let go: a real request gets its place.
        def answered() -> tuple[int, bytes]:
            while True:
                try:
                    return get(url + "static/blurhash.js")
                except OSError:
                    continue  # the server has not seen the close yet

        status, body = await asyncio.wait_for(asyncio.to_thread(answered), GUARD_SECONDS)
        assert status == 200 and b"decode83" in body
        for sock in held:
            sock.close()


async def test_the_metrics_port_connection_shows_under_its_own_name(database_url: str) -> None:
    """An operator tells the scrapes' connection from the Workers' in pg_stat_activity."""
    scrapes = OneConnection(database_url, METRICS_APPLICATION_NAME)
    try:
        async with scrapes.connection() as conn:
            cur = await conn.execute("SELECT current_setting('application_name')")
            assert await cur.fetchone() == ("safelight-metrics",)
    finally:
        await scrapes.close()
