"""A real Worker process's /metrics and /healthz (``run_workers`` on real PostgreSQL):
the counts of what it ran, the queue's gauges, and health when the database goes away."""

from __future__ import annotations

import asyncio
import urllib.error
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable
from datetime import timedelta
from pathlib import Path
from typing import Any
from uuid import UUID

import pytest
from prometheus_client.parser import text_string_to_metric_families
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from psycopg_pool import AsyncConnectionPool

from safelight.app import RunReport, WorkerOptions, app_store, build_engine, leave, run_workers
from safelight.core.clock import Clock, SystemClock
from safelight.db.database import Database
from safelight.db.pool import open_pool
from safelight.handlers import schedule_settings
from safelight.observe.metrics import UNSCOPED
from safelight.settings import Settings
from safelight.testing.fakeclock import FakeClock
from safelight.testing.handlers import crawl_result, database_of, jpeg, write
from safelight.testing.rows import add_config
from safelight.work.model import Status
from tests.faults.cluster import free_port
from tests.faults.netproxy import TcpProxy

pytestmark = pytest.mark.integration

# A real guard for a test that would otherwise hang on a bug; none is a tested deadline.
GUARD_SECONDS = 60


def settings(database_url: str, tmp_path: Path, **changes: Any) -> Settings:
    return Settings(
        **{
            "database_url": database_url,
            "home": tmp_path / "home",
            "proxy_root": tmp_path / "proxies",
            "decode_processes": 0,
            "thumbnail_width": 64,
            "preview_width": 256,
            "poll_seconds": 0.05,
            "metrics_port": free_port(),
            **changes,
        }
    )


def get(port: int, path: str) -> tuple[int, str, str]:
    """(status, content type, body) of GET ``path``, with a real HTTP client."""
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=30) as response:
            return response.status, response.headers["Content-Type"], response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read().decode()


async def fetch(port: int, path: str) -> tuple[int, str, str]:
    return await asyncio.to_thread(get, port, path)


def samples(text: str) -> Scrape:
    """Every sample of a scrape: (name, labels) -> value, as Prometheus would parse it."""
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


Scrape = dict[tuple[str, frozenset[tuple[str, str]]], float]


def value(scraped: Scrape, name: str, **labels: str) -> float | None:
    return scraped.get((name, frozenset(labels.items())))


async def until(check: Callable[[], Awaitable[bool]]) -> None:
    """Wait, bounded by the guard, for ``check()``; it looks again every 20 ms."""

    async def poll() -> None:
        # What changes is the database or a server, not an event this test could await.
        while not await check():  # noqa: ASYNC110
            await asyncio.sleep(0.02)

    await asyncio.wait_for(poll(), GUARD_SECONDS)


async def put_off_schedules(
    pool: AsyncConnectionPool[Any], config: Settings, config_ids: list[UUID]
) -> None:
    """Make every schedule due in a year: only the items a test enqueues run."""
    plan = schedule_settings(config)
    rows = [(p.kind, p.kind, None) for p in plan.periodic] + [
        (s.schedule_name(c), s.kind, c) for s in plan.per_config for c in config_ids
    ]
    async with pool.connection() as conn:
        for name, kind, config_id in rows:
            await conn.execute(
                "INSERT INTO work_schedules (name, kind, storage_config_id, next_run_at)"
                " VALUES (%s, %s, %s, now() + interval '1 year')",
                (name, kind, config_id),
            )


@pytest.fixture
async def running() -> AsyncIterator[Callable[..., asyncio.Task[RunReport]]]:
    """Start ``run_workers`` (two Workers) in a task; stopped (shutdown) and awaited at
    the end."""
    started: list[tuple[asyncio.Task[RunReport], asyncio.Event]] = []

    def start(
        config: Settings, database: Database, clock: Clock | None = None
    ) -> asyncio.Task[RunReport]:
        shutdown = asyncio.Event()
        task = asyncio.create_task(
            run_workers(
                config,
                WorkerOptions(concurrency=2, serve_metrics=True, name="m"),
                database=database,
                install_signal_handlers=False,
                clock=clock,
                shutdown=shutdown,
            )
        )
        started.append((task, shutdown))
        return task

    yield start
    for task, shutdown in started:
        shutdown.set()
        await asyncio.wait_for(task, GUARD_SECONDS)


async def test_a_workers_metrics_count_what_it_ran_and_show_the_queue(
    database_url: str,
    pool: AsyncConnectionPool[Any],
    tmp_path: Path,
    running: Callable[..., asyncio.Task[RunReport]],
) -> None:
    library = tmp_path / "library"
    write(library, "a.jpg", jpeg(1))
    write(library, "b.jpg", jpeg(2))
    write(library, "broken.jpg", b"not a photo at all")
    gone = tmp_path / "unmounted"
    gone.mkdir()
    crawled, failing = (
        await add_config(pool, FakeClock(), root=str(library)),
        await add_config(pool, FakeClock(), root=str(gone)),
    )
    gone.rmdir()  # its crawl fails: the root is missing
    config = settings(database_url, tmp_path)
    await put_off_schedules(pool, config, [crawled, failing])
    database = Database(url=database_url, pool=pool)
    store = app_store(database, config, SystemClock())
    ids = [
        await store.enqueue("crawl", config_id=crawled),
        await store.enqueue("crawl", config_id=failing),
        await store.enqueue("noop"),
        await store.enqueue("noop"),
    ]
    # Runs on the failing config once its crawl has failed, for the running gauge.
    waiting = await store.enqueue("noop", config_id=failing, payload={"seconds": 3600})

    task = running(config, database)

    async def all_ended() -> bool:
        items = [await store.get(i) for i in ids]
        if any(i is None or i.status in (Status.QUEUED, Status.RUNNING) for i in items):
            return False
        held = await store.get(waiting)
        async with pool.connection() as conn:
            cur = await conn.execute(
                "SELECT count(*) FROM work_items"
                " WHERE kind = 'burst_detection' AND status = 'succeeded'"
            )
            row = await cur.fetchone()
        # The crawl's follow-up has run too, and the long noop holds its config.
        return held is not None and held.status is Status.RUNNING and row == (1,)

    await until(all_ended)
    status, content_type, text = await fetch(config.metrics_port or 0, "/metrics")
    assert not task.done()
    assert status == 200 and content_type.startswith("text/plain; version=0.0.4")
    scraped = samples(text)

    def ended(kind: str, outcome: str) -> float | None:
        return value(scraped, "safelight_item_duration_seconds_count", kind=kind, outcome=outcome)

    # Item durations by kind and outcome, a histogram with its buckets.
    assert ended("noop", "succeeded") == 2
    assert ended("crawl", "succeeded") == 1 and ended("crawl", "failed") == 1
    assert (
        value(
            scraped,
            "safelight_item_duration_seconds_bucket",
            kind="noop",
            outcome="succeeded",
            le="+Inf",
        )
        == 2
    )
    # What the crawl did, as its own result counts it: three files, one of them broken,
    # and the proxies of two photos.
    crawl = await store.get(ids[0])
    assert crawl is not None and crawl.result is not None
    assert (crawl_result(crawl).found, len(crawl_result(crawl).errors)) == (3, 1)
    assert crawl_result(crawl).proxies > 0
    assert value(scraped, "safelight_files_crawled_total") == 3
    assert value(scraped, "safelight_file_errors_total") == 1
    assert value(scraped, "safelight_proxies_made_total") == crawl_result(crawl).proxies
    # The queue, read from the database at this scrape: zeros included.
    assert value(scraped, "safelight_queue_items", kind="noop", status="succeeded") == 2
    assert value(scraped, "safelight_queue_items", kind="noop", status="running") == 1
    assert value(scraped, "safelight_queue_items", kind="crawl", status="failed") == 1
    assert value(scraped, "safelight_queue_items", kind="purge", status="queued") == 0
    assert value(scraped, "safelight_running_items", config=str(failing)) == 1
    assert value(scraped, "safelight_running_items", config=str(crawled)) == 0
    assert value(scraped, "safelight_running_items", config=UNSCOPED) == 0
    assert value(scraped, "safelight_stalled_attempts") == 0
    assert value(scraped, "safelight_paused", what="kind") == 0
    assert value(scraped, "safelight_paused", what="config") == 0
    assert value(scraped, "safelight_database_up") == 1
    assert value(scraped, "safelight_listener_connected") == 1
    # Nothing went wrong with the leases and claims of this run.
    for name in (
        "safelight_self_stops_total",
        "safelight_heartbeat_failures_total",
        "safelight_claims_lost_total",
    ):
        assert value(scraped, name) == 0, name
    assert value(scraped, "safelight_lease_recoveries_total", result="requeued") == 0
    assert (await fetch(config.metrics_port or 0, "/healthz"))[::2] == (200, "ok\n")
    # The crawl's follow-up (burst detection) shows under its own kind.
    assert ended("burst_detection", "succeeded") == 1


def through(proxy: TcpProxy, database_url: str, password: str) -> str:
    """``database_url`` reached through ``proxy``, with a password (which the test
    server does not ask for) that no reason may show."""
    params = conninfo_to_dict(database_url)
    params.update(host="127.0.0.1", port=str(proxy.port), password=password)
    return make_conninfo("", **params)


async def test_healthz_says_why_while_the_database_is_away(
    database_url: str,
    tmp_path: Path,
    running: Callable[..., asyncio.Task[RunReport]],
) -> None:
    params = conninfo_to_dict(database_url)
    proxy = TcpProxy(str(params.get("host") or "127.0.0.1"), int(params.get("port") or 5432))
    secret = "s3cret-Passw0rd"
    url = through(proxy, database_url, secret)
    pool = await open_pool(url, max_size=12)
    # The Worker's clock is fake: the probe's 3 s timeout runs out when the test says.
    clock = FakeClock()
    config = settings(url, tmp_path)
    port = config.metrics_port or 0
    try:
        running(config, Database(url=url, pool=pool), clock)

        async def healthy() -> bool:
            # Past the refresh interval: /healthz says what a new probe finds.
            await clock.advance(config.metrics_refresh_seconds)
            try:
                return (await fetch(port, "/healthz"))[0] == 200
            except OSError:
                return False  # not listening yet

        await until(healthy)
        assert await fetch(port, "/healthz") == (200, "text/plain; charset=utf-8", "ok\n")

        proxy.cut()  # silence: no error, no close, as behind a dead switch
        await clock.advance(config.metrics_refresh_seconds)
        answer = asyncio.ensure_future(fetch(port, "/healthz"))
        while not answer.done():
            await clock.advance(0.5)
            await asyncio.sleep(0.01)
        status, _, reason = answer.result()
        assert (status, reason) == (503, "the database did not answer within 3 s\n")

        proxy.heal()
        await until(healthy)
    finally:
        proxy.heal()
        await pool.close()
        proxy.close()
    assert secret not in reason


async def test_the_presence_is_written_each_round_forgotten_when_stale_and_deleted_on_leaving(
    pool: AsyncConnectionPool[Any], tmp_path: Path
) -> None:
    clock = FakeClock()
    config = Settings(home=tmp_path / "home", decode_processes=0, work_retention_days=7)
    engine = build_engine(
        config, database_of(pool), clock, WorkerOptions(concurrency=2, name="nas:7")
    )

    async def rows() -> list[tuple[Any, ...]]:
        async with pool.connection() as conn:
            cur = await conn.execute(
                "SELECT worker_id, started_at, last_seen_at FROM workers ORDER BY worker_id"
            )
            return list(await cur.fetchall())

    async with pool.connection() as conn:
        await conn.execute(
            "INSERT INTO workers VALUES ('dead:1', %s, %s), ('dead:2', %s, %s)",
            (
                clock.now() - timedelta(days=30),
                clock.now() - timedelta(days=8),
                clock.now() - timedelta(days=30),
                clock.now() - timedelta(days=6),
            ),
        )
    started = clock.now()
    await engine.presence.run_once()
    # Its Workers are seen now; a process dead for more than the retention is forgotten.
    assert await rows() == [
        ("dead:2", started - timedelta(days=30), started - timedelta(days=6)),
        ("nas:7/0", started, started),
        ("nas:7/1", started, started),
    ]
    await clock.advance(15)
    await engine.presence.run_once()
    assert [r[1:] for r in await rows()][1:] == [(started, clock.now())] * 2
    await leave(engine)
    assert [r[0] for r in await rows()] == ["dead:2"]
    await engine.close()
