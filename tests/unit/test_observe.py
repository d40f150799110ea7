"""The metrics, /healthz and the metrics server without a database: a scripted pool, a
real socket on the loopback, the FakeClock for every timeout."""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from types import SimpleNamespace
from typing import Any
from uuid import UUID

import psycopg
import pytest
from prometheus_client.parser import text_string_to_metric_families

from safelight.app import serve_metrics
from safelight.core.connections import ConnectionLimits
from safelight.logs import REFUSALS_LOG_SECONDS
from safelight.observe.metrics import Metrics, QueueSnapshot
from safelight.observe.server import PROBE_SECONDS, Health, MetricsServer, exposure_warning
from safelight.settings import Settings, SettingsError
from safelight.testing.executor import FakeExecutor
from safelight.testing.fakeclock import FakeClock
from safelight.testing.items import noop_item
from safelight.testing.workers import noop_worker
from safelight.testing.workstore import ScriptedStore
from safelight.work.model import RecoveryReport, Status
from safelight.work.supervisor import Background, BackgroundFailed, supervise

pytestmark = pytest.mark.usefixtures("loop_errors", "unwind")

HEAD_SECONDS = 5.0
REFRESH_SECONDS = 5.0
LIMITS = ConnectionLimits(max_connections=8, head_seconds=HEAD_SECONDS)
C1 = UUID("00000000-0000-4000-8000-0000000000c1")
SECRET = "s3cret-Passw0rd"


class Pool:
    """Stands in for the async pool: each connection raises ``error``, hangs (``hang``),
    or answers the queue's queries from ``snapshot``."""

    def __init__(self) -> None:
        self.error: BaseException | None = None
        self.hang = False
        self.snapshot = QueueSnapshot()

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        if self.hang:
            await asyncio.Event().wait()
        if self.error is not None:
            raise self.error
        yield Connection(self.snapshot)


class Connection:
    def __init__(self, snapshot: QueueSnapshot) -> None:
        self.snapshot = snapshot
        self.rows: list[dict[str, Any]] = []

    async def execute(self, sql: str) -> None:
        self.rows = self._answer(sql)

    def cursor(self, row_factory: Any = None) -> Connection:
        return self

    async def fetchall(self) -> list[dict[str, Any]]:
        return self.rows

    async def fetchone(self) -> dict[str, Any] | None:
        return self.rows[0] if self.rows else None

    def _answer(self, sql: str) -> list[dict[str, Any]]:
        if "FROM paused_kinds" in sql:
            paused = self.snapshot.paused
            return [{"kinds": paused.get("kind", 0), "configs": paused.get("config", 0)}]
        if "FROM work_attempts" in sql:
            return [{"stalled": self.snapshot.stalled_attempts}]
        if "FROM assets" in sql:
            return [{"changed": self.snapshot.originals_changed}]
        if "storage_configs" in sql:
            return [{"config_id": c, "running": n} for c, n in self.snapshot.running.items()]
        return [{"kind": k, "status": s, "count": n} for (k, s), n in self.snapshot.items.items()]


Scrape = dict[tuple[str, frozenset[tuple[str, str]]], float]


def scrape(metrics: Metrics) -> Scrape:
    text = metrics.render().decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def get(scraped: Scrape, name: str, **labels: str) -> float | None:
    return scraped.get((name, frozenset(labels.items())))


# --- the metrics ------------------------------------------------------------------------


def test_the_hooks_count_into_the_metrics() -> None:
    metrics = Metrics(["noop", "crawl"], listening=lambda: True)
    metrics.item_ended("noop", "succeeded", 0.2)
    metrics.item_ended("noop", "succeeded", 7.0)
    metrics.item_ended("crawl", "selfstopped", 120.0)
    metrics.heartbeat_failed()
    metrics.heartbeat_failed()
    metrics.self_stopped()
    metrics.claim_lost()
    metrics.leases_recovered(RecoveryReport(requeued=2, failed=1))
    metrics.leases_recovered(RecoveryReport())
    metrics.files_crawled(1)
    metrics.files_crawled(1)
    metrics.proxies_made(3)
    metrics.file_errors(2)
    scraped = scrape(metrics)
    duration = "safelight_item_duration_seconds"
    assert get(scraped, f"{duration}_count", kind="noop", outcome="succeeded") == 2
    assert get(scraped, f"{duration}_sum", kind="noop", outcome="succeeded") == 7.2
    assert get(scraped, f"{duration}_bucket", kind="noop", outcome="succeeded", le="1.0") == 1
    assert get(scraped, f"{duration}_bucket", kind="noop", outcome="succeeded", le="15.0") == 2
    assert get(scraped, f"{duration}_count", kind="crawl", outcome="selfstopped") == 1
    assert get(scraped, "safelight_heartbeat_failures_total") == 2
    assert get(scraped, "safelight_self_stops_total") == 1
    assert get(scraped, "safelight_claims_lost_total") == 1
    recoveries = "safelight_lease_recoveries_total"
    assert get(scraped, recoveries, result="requeued") == 2
    assert get(scraped, recoveries, result="failed") == 1
    assert get(scraped, recoveries, result="superseded") == 0
    assert get(scraped, "safelight_files_crawled_total") == 2
    assert get(scraped, "safelight_proxies_made_total") == 3
    assert get(scraped, "safelight_file_errors_total") == 2
    assert get(scraped, "process_resident_memory_bytes") is not None  # a leak shows here


def test_without_a_reading_of_the_queue_its_gauges_are_left_out() -> None:
    listening = [False]
    metrics = Metrics(["noop"], listening=lambda: listening[0])
    scraped = scrape(metrics)
    assert get(scraped, "safelight_database_up") == 0
    assert get(scraped, "safelight_listener_connected") == 0
    assert not [name for name, _ in scraped if name.startswith("safelight_queue_items")]
    listening[0] = True
    assert get(scrape(metrics), "safelight_listener_connected") == 1


async def test_a_scrape_reads_the_queue_zeros_included(clock: FakeClock) -> None:
    pool = Pool()
    pool.snapshot = QueueSnapshot(
        items={("noop", "queued"): 4, ("noop", "failed"): 1, ("retired", "succeeded"): 2},
        running={C1: 1, None: 0},
        stalled_attempts=5,
        originals_changed=2,
        paused={"kind": 2, "config": 1},
    )
    metrics = Metrics(["noop", "crawl"], listening=lambda: True)
    assert await metrics.refresh(pool, clock, PROBE_SECONDS)
    scraped = scrape(metrics)
    assert get(scraped, "safelight_database_up") == 1
    depth = "safelight_queue_items"
    assert get(scraped, depth, kind="noop", status="queued") == 4
    assert get(scraped, depth, kind="noop", status="failed") == 1
    assert get(scraped, depth, kind="noop", status="running") == 0
    # Every status of every kind this process runs, and any other kind the queue holds.
    assert {labels for name, labels in scraped if name == depth} == {
        frozenset({("kind", kind), ("status", status.value)})
        for kind in ("noop", "crawl", "retired")
        for status in Status
    }
    assert get(scraped, "safelight_running_items", config=str(C1)) == 1
    assert get(scraped, "safelight_running_items", config="none") == 0
    assert get(scraped, "safelight_stalled_attempts") == 5
    assert get(scraped, "safelight_originals_changed") == 2
    assert get(scraped, "safelight_paused", what="kind") == 2
    assert get(scraped, "safelight_paused", what="config") == 1


async def test_a_scrape_the_database_does_not_answer_drops_the_queue_gauges(
    clock: FakeClock,
) -> None:
    pool = Pool()
    metrics = Metrics(["noop"], listening=lambda: True)
    assert await metrics.refresh(pool, clock, PROBE_SECONDS)
    pool.error = psycopg.OperationalError("server closed the connection")
    assert not await metrics.refresh(pool, clock, PROBE_SECONDS)
    assert get(scrape(metrics), "safelight_database_up") == 0
    pool.error, pool.hang = None, True
    refresh = asyncio.ensure_future(metrics.refresh(pool, clock, PROBE_SECONDS))
    await clock.advance(PROBE_SECONDS - 0.001)
    assert not refresh.done()
    await clock.advance(0.001)
    assert refresh.done() and refresh.result() is False


async def test_a_bug_in_the_reading_is_not_mistaken_for_an_outage(clock: FakeClock) -> None:
    pool = Pool()
    pool.error = KeyError("a bug")
    metrics = Metrics(["noop"], listening=lambda: True)
    with pytest.raises(KeyError):
        await metrics.refresh(pool, clock, PROBE_SECONDS)


# --- /healthz ----------------------------------------------------------------------------


async def test_health_says_why_in_one_line_without_a_password(clock: FakeClock) -> None:
    pool = Pool()
    listening = [True]
    health = Health(pool, clock, lambda: listening[0])
    assert await health.check() is None
    listening[0] = False
    assert await health.check() == (
        "the wake-up listener is not connected to the database (reconnecting)"
    )
    pool.error = psycopg.OperationalError(
        f"connection to server at postgresql://safelight:{SECRET}@db:5432/x failed\nmore"
    )
    assert await health.check() == (
        "the database does not answer: OperationalError: connection to server at "
        "postgresql://safelight:***@db:5432/x failed"
    )
    pool.error, pool.hang = None, True
    checking = asyncio.ensure_future(health.check())
    await clock.advance(PROBE_SECONDS)
    assert checking.result() == "the database did not answer within 3 s"


# --- the server --------------------------------------------------------------------------


def metrics_server(
    metrics: Metrics, pool: Pool, clock: FakeClock, limits: ConnectionLimits = LIMITS
) -> MetricsServer:
    health = Health(pool, clock, lambda: True)
    return MetricsServer(metrics, health, pool, clock, limits, refresh_seconds=REFRESH_SECONDS)


@pytest.fixture
async def served(clock: FakeClock) -> AsyncIterator[tuple[MetricsServer, int, Pool, Metrics]]:
    pool = Pool()
    metrics = Metrics(["noop"], listening=lambda: True)
    server = metrics_server(metrics, pool, clock)
    host, port = await server.bind("127.0.0.1", 0)
    assert host == "127.0.0.1" and port > 0
    serving = asyncio.create_task(server.serve())
    yield server, port, pool, metrics
    serving.cancel()
    await asyncio.gather(serving, return_exceptions=True)


async def request(port: int, raw: bytes) -> bytes:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(raw)
    await writer.drain()
    answer = await reader.read()
    writer.close()
    await writer.wait_closed()
    return answer


def status_and_body(answer: bytes) -> tuple[str, bytes]:
    head, _, body = answer.partition(b"\r\n\r\n")
    return head.split(b"\r\n")[0].decode(), body


async def test_the_server_answers_metrics_health_and_nothing_else(
    served: tuple[MetricsServer, int, Pool, Metrics], clock: FakeClock
) -> None:
    _, port, pool, _ = served
    line, body = status_and_body(await request(port, b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"))
    assert line == "HTTP/1.1 200 OK" and b"safelight_database_up 1.0" in body
    answer = await request(port, b"GET /healthz?probe=1 HTTP/1.0\r\n\r\n")
    assert status_and_body(answer) == ("HTTP/1.1 200 OK", b"ok\n")
    assert b"Content-Type: text/plain; charset=utf-8\r\n" in answer
    assert b"Connection: close\r\n" in answer
    pool.error = psycopg.OperationalError("the database system is shutting down")
    # What the last probe found, until the refresh interval has passed.
    ok = await request(port, b"GET /healthz HTTP/1.1\r\n\r\n")
    assert status_and_body(ok) == ("HTTP/1.1 200 OK", b"ok\n")
    await clock.advance(REFRESH_SECONDS)
    reason = (
        b"the database does not answer: OperationalError: the database system is shutting down\n"
    )
    assert status_and_body(await request(port, b"GET /healthz HTTP/1.1\r\n\r\n")) == (
        "HTTP/1.1 503 Service Unavailable",
        reason,
    )
    head = await request(port, b"HEAD /healthz HTTP/1.1\r\n\r\n")
    assert status_and_body(head) == ("HTTP/1.1 503 Service Unavailable", b"")
    assert f"Content-Length: {len(reason)}\r\n".encode() in head  # the body a GET gets
    head = await request(port, b"HEAD /metrics HTTP/1.1\r\n\r\n")
    assert status_and_body(head) == ("HTTP/1.1 200 OK", b"")
    assert status_and_body(await request(port, b"GET / HTTP/1.1\r\n\r\n")) == (
        "HTTP/1.1 404 Not Found",
        b"not found: try /metrics or /healthz\n",
    )
    assert status_and_body(await request(port, b"POST /metrics HTTP/1.1\r\n\r\n")) == (
        "HTTP/1.1 405 Method Not Allowed",
        b"only GET and HEAD\n",
    )
    # Not HTTP at all: dropped without an answer, and the server goes on.
    assert await request(port, b"hello\r\n\r\n") == b""
    assert status_and_body(await request(port, b"GET /metrics HTTP/1.1\r\n\r\n"))[0].endswith("OK")


async def test_a_bug_while_answering_is_a_500_with_its_traceback_and_the_server_goes_on(
    served: tuple[MetricsServer, int, Pool, Metrics],
    caplog: pytest.LogCaptureFixture,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _, port, _, metrics = served
    bug = ValueError("a bug in a collector")
    render = metrics.render

    def broken() -> bytes:
        raise bug

    monkeypatch.setattr(metrics, "render", broken)
    answer = await request(port, b"GET /metrics HTTP/1.1\r\n\r\n")
    assert status_and_body(answer) == ("HTTP/1.1 500 Internal Server Error", b"internal error\n")
    assert b"\r\nContent-Type: text/plain; charset=utf-8\r\n" in answer
    (record,) = [r for r in caplog.records if r.name == "safelight.observe.server"]
    assert record.levelno == logging.ERROR
    assert record.getMessage() == "metrics server: answering GET /metrics failed"
    assert record.exc_info is not None and record.exc_info[1] is bug
    monkeypatch.setattr(metrics, "render", render)
    assert status_and_body(await request(port, b"GET /metrics HTTP/1.1\r\n\r\n"))[0].endswith("OK")


async def test_a_client_that_sends_nothing_is_dropped_after_the_request_timeout(
    served: tuple[MetricsServer, int, Pool, Metrics], clock: FakeClock
) -> None:
    _, port, _, _ = served
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /metr")  # and then nothing
    await writer.drain()
    await clock.advance(HEAD_SECONDS - 0.001)
    closed = asyncio.ensure_future(reader.read())
    await asyncio.sleep(0.05)
    assert not closed.done()
    await clock.advance(0.001)
    assert await asyncio.wait_for(closed, 5) == b""
    writer.close()
    await writer.wait_closed()


async def test_stopping_the_server_ends_the_connections_it_was_answering(
    clock: FakeClock,
) -> None:
    pool = Pool()
    pool.hang = True  # every scrape waits for the database
    metrics = Metrics(["noop"], listening=lambda: True)
    server = metrics_server(metrics, pool, clock)
    _, port = await server.bind("127.0.0.1", 0)
    serving = asyncio.create_task(server.serve())
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /metrics HTTP/1.1\r\n\r\n")
    await writer.drain()
    await asyncio.sleep(0.05)
    assert len(server._connections) == 1
    serving.cancel()
    await asyncio.gather(serving, return_exceptions=True)
    assert server._connections == set()
    assert await asyncio.wait_for(reader.read(), 5) == b""
    writer.close()
    await writer.wait_closed()


async def test_a_metrics_server_that_ends_ends_the_run(
    clock: FakeClock, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The supervision table's row: the server task ending (its listening socket gone)
    is a bug; the Workers stop, their items released, and the run fails."""
    pool = Pool()
    metrics = Metrics(["noop"], listening=lambda: True)
    server = metrics_server(metrics, pool, clock)
    await server.bind("127.0.0.1", 0)
    busy = FakeExecutor(until_shutdown=True)
    bug = OSError("the listening socket went away")
    assert server._server is not None

    async def broken() -> None:
        await busy.started.wait()
        raise bug

    monkeypatch.setattr(server._server, "serve_forever", broken)
    with pytest.raises(BackgroundFailed) as raised:
        await supervise(
            [noop_worker(clock, ScriptedStore(claims=[noop_item(1)]), busy, "w1")],
            [Background("metrics", server.serve)],
            shutdown=asyncio.Event(),
            log=logging.getLogger("test.observe"),
            install_signal_handlers=False,
        )
    assert raised.value.name == "metrics" and raised.value.__cause__ is bug
    assert busy.released == [1]
    (record,) = [r for r in caplog.records if r.name == "test.observe"]
    assert record.exc_info is not None and record.exc_info[1] is bug


async def test_serving_needs_a_bound_server(clock: FakeClock) -> None:
    pool = Pool()
    metrics = Metrics(["noop"], listening=lambda: True)
    server = metrics_server(metrics, pool, clock)
    with pytest.raises(RuntimeError, match=r"^bind\(\) the metrics server before serving$"):
        await server.serve()


# --- a hostile client (issue #27) -------------------------------------------------------


class CountingPool(Pool):
    """The scripted pool, counting the connections asked of it: one per reading of the
    queue (three queries) or ping."""

    def __init__(self) -> None:
        super().__init__()
        self.uses = 0
        self.release = asyncio.Event()
        self.held = False

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Any]:
        self.uses += 1
        if self.held:
            await self.release.wait()  # the slow database, for this reader only
        async with super().connection() as conn:
            yield conn


async def test_a_flood_of_scrapes_reads_the_queue_once_per_refresh_interval(
    clock: FakeClock,
) -> None:
    pool = CountingPool()
    pool.held = True
    metrics = Metrics(["noop"], listening=lambda: True)
    limits = ConnectionLimits(max_connections=200, head_seconds=HEAD_SECONDS)
    server = metrics_server(metrics, pool, clock, limits)
    _, port = await server.bind("127.0.0.1", 0)
    serving = asyncio.create_task(server.serve())
    try:
        flood = [asyncio.ensure_future(request(port, b"GET /metrics HTTP/1.1\r\n\r\n"))]
        # The first scrape has started the one reading (a socket's doing: polled).
        while pool.uses == 0:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        flood += [
            asyncio.ensure_future(request(port, b"GET /metrics HTTP/1.1\r\n\r\n"))
            for _ in range(150)
        ]
        while len(server._connections) < len(flood):  # noqa: ASYNC110 (all waiting)
            await asyncio.sleep(0.01)
        assert (pool.uses, server.refreshes) == (1, 1)
        pool.release.set()
        answers = await asyncio.gather(*flood)
        assert {status_and_body(a)[0] for a in answers} == {"HTTP/1.1 200 OK"}
        assert all(b"safelight_database_up 1.0" in a for a in answers)
        # Within the interval: answered from the snapshot, nothing read.
        await clock.advance(REFRESH_SECONDS - 0.001)
        again = await asyncio.gather(
            *(request(port, b"GET /metrics HTTP/1.1\r\n\r\n") for _ in range(50))
        )
        assert {status_and_body(a)[0] for a in again} == {"HTTP/1.1 200 OK"}
        assert (pool.uses, server.refreshes) == (1, 1)
        await clock.advance(0.001)
        await asyncio.gather(*(request(port, b"GET /metrics HTTP/1.1\r\n\r\n") for _ in range(50)))
        assert (pool.uses, server.refreshes) == (2, 2)
    finally:
        pool.release.set()
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)


async def closed_unanswered(port: int) -> bool:
    """Whether a connection to ``port`` is closed (or reset) before any answer."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        return await reader.read() == b""
    except ConnectionResetError:
        return True
    finally:
        writer.close()


async def test_connections_past_the_cap_are_closed_as_they_are_accepted(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    pool = Pool()
    metrics = Metrics(["noop"], listening=lambda: True)
    server = metrics_server(metrics, pool, clock, ConnectionLimits(2, HEAD_SECONDS))
    _, port = await server.bind("127.0.0.1", 0)
    serving = asyncio.create_task(server.serve())
    idle = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
    try:
        while len(server._connections) < 2:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        # Three more, each closed at once without an answer; one line says so.
        for _ in range(3):
            assert await asyncio.wait_for(closed_unanswered(port), 5)
        assert len(server._connections) == 2
        refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
        assert refusals == [
            "metrics server: a connection refused, 2 held already "
            "(SAFELIGHT_METRICS_MAX_CONNECTIONS)"
        ]
        # The idle ones are dropped after the head timeout, and a scrape gets in again.
        await clock.advance(HEAD_SECONDS)
        for reader, _ in idle:
            assert await asyncio.wait_for(reader.read(), 5) == b""
        answer = await request(port, b"GET /metrics HTTP/1.1\r\n\r\n")
        assert status_and_body(answer)[0] == "HTTP/1.1 200 OK"
    finally:
        for _, writer in idle:
            writer.close()
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)


@pytest.mark.parametrize(
    ("host", "warned"),
    [
        ("127.0.0.1", False),
        ("::1", False),
        ("localhost", False),
        ("127.0.0.53", False),
        ("0.0.0.0", True),
        ("::", True),
        ("192.0.2.7", True),
    ],
)
def test_a_metrics_port_beyond_loopback_is_warned_about(host: str, warned: bool) -> None:
    warning = exposure_warning(host)
    assert (warning is not None) == warned
    if warning is not None:
        assert warning == (
            f"the metrics port listens on {host}, beyond this machine: anyone who can reach "
            "it reads the queue and the configs' ids, without a password; keep it on "
            "127.0.0.1 (SAFELIGHT_METRICS_HOST) behind a proxy of yours, or firewall it"
        )


async def test_refusals_past_the_cap_are_said_once_a_minute_with_how_many_were_left_out(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    pool = Pool()
    metrics = Metrics(["noop"], listening=lambda: True)
    # A head deadline far beyond the minute this test moves on: only the cap acts.
    limits = ConnectionLimits(1, REFUSALS_LOG_SECONDS * 10)
    server = metrics_server(metrics, pool, clock, limits)
    _, port = await server.bind("127.0.0.1", 0)
    serving = asyncio.create_task(server.serve())
    held = await asyncio.open_connection("127.0.0.1", port)
    try:
        while len(server._connections) < 1:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        for _ in range(3):
            assert await asyncio.wait_for(closed_unanswered(port), 5)
        await clock.advance(REFUSALS_LOG_SECONDS)
        assert await asyncio.wait_for(closed_unanswered(port), 5)
        refusals = [r.getMessage() for r in caplog.records if "refused" in r.getMessage()]
        line = (
            "metrics server: a connection refused, 1 held already "
            "(SAFELIGHT_METRICS_MAX_CONNECTIONS)"
        )
        assert refusals == [line, line + " (2 more since the last such line)"]
    finally:
        held[1].close()
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)


# --- the Worker's wiring of its metrics port (app.serve_metrics) ------------------------


def engine_of(clock: FakeClock, settings: Settings) -> Any:
    """The parts of an Engine that serve_metrics reads."""
    listener = SimpleNamespace(connected=asyncio.Event())
    listener.connected.set()
    metrics = Metrics(["noop"], listening=listener.connected.is_set)
    return SimpleNamespace(settings=settings, clock=clock, listener=listener, metrics=metrics)


@asynccontextmanager
async def metrics_port(
    clock: FakeClock, settings: Settings, pool: Pool, host: str = "127.0.0.1", port: int = 0
) -> AsyncIterator[int]:
    server = await serve_metrics(engine_of(clock, settings), host, port, pool)
    serving = asyncio.create_task(server.serve())
    try:
        assert server._server is not None
        yield int(server._server.sockets[0].getsockname()[1])
    finally:
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)


async def test_the_worker_serves_its_metrics_port_from_its_own_connection_and_settings(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="safelight.app")
    settings = Settings(metrics_refresh_seconds=30.0, metrics_max_connections=1)
    pool = CountingPool()
    async with metrics_port(clock, settings, pool) as port:
        assert [r.getMessage() for r in caplog.records if r.name == "safelight.app"] == [
            f"metrics on http://127.0.0.1:{port}/metrics, health on /healthz"
        ]
        answer = await request(port, b"GET /metrics HTTP/1.1\r\n\r\n")
        assert b"safelight_database_up 1.0" in answer
        assert status_and_body(await request(port, b"GET /healthz HTTP/1.1\r\n\r\n")) == (
            "HTTP/1.1 200 OK",
            b"ok\n",
        )
        assert pool.uses == 2  # one reading of the queue, one ping: the given connection
        # The settings' refresh interval, not another.
        await clock.advance(29.999)
        await request(port, b"GET /metrics HTTP/1.1\r\n\r\n")
        assert pool.uses == 2
        await clock.advance(0.001)
        await request(port, b"GET /metrics HTTP/1.1\r\n\r\n")
        assert pool.uses == 3
        # The settings' cap: one held, the next closed unanswered.
        held = await asyncio.open_connection("127.0.0.1", port)
        await asyncio.sleep(0.05)
        assert await asyncio.wait_for(closed_unanswered(port), 5)
        held[1].close()
    # No warning about where it listens; the one refusal names the settings' cap.
    assert [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING] == [
        "metrics server: a connection refused, 1 held already (SAFELIGHT_METRICS_MAX_CONNECTIONS)"
    ]


async def test_a_metrics_port_open_beyond_this_machine_is_warned_about_in_the_log(
    clock: FakeClock, caplog: pytest.LogCaptureFixture
) -> None:
    async with metrics_port(clock, Settings(), Pool(), host="0.0.0.0"):
        pass
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert warnings == [exposure_warning("0.0.0.0")]


async def test_a_metrics_port_it_cannot_listen_on_is_a_setting_it_cannot_use(
    clock: FakeClock,
) -> None:
    taken = socket.create_server(("127.0.0.1", 0))
    port = taken.getsockname()[1]
    try:
        with pytest.raises(SettingsError) as refused:
            await serve_metrics(engine_of(clock, Settings()), "127.0.0.1", port, Pool())
    finally:
        taken.close()
    assert str(refused.value) == (
        f"metrics_port (SAFELIGHT_METRICS_PORT): cannot listen on 127.0.0.1 port {port}: "
        "Address already in use"
    )


async def test_a_metrics_host_that_does_not_resolve_says_why(clock: FakeClock) -> None:
    host = "no-such-host.invalid"
    with pytest.raises(socket.gaierror) as lookup:
        socket.getaddrinfo(host, 0)
    with pytest.raises(SettingsError) as refused:
        await serve_metrics(engine_of(clock, Settings()), host, 0, Pool())
    assert str(refused.value) == (
        f"metrics_port (SAFELIGHT_METRICS_PORT): cannot listen on {host} port 0: "
        f"{lookup.value.strerror}"
    )


async def test_a_reason_that_is_not_valid_text_is_still_answered(
    served: tuple[MetricsServer, int, Pool, Metrics],
) -> None:
    """A driver's message may carry bytes it could not decode (a lone surrogate)."""
    _, port, pool, _ = served
    pool.error = psycopg.OperationalError("FATAL: r\udcf4le inconnu")
    answer = await request(port, b"GET /healthz HTTP/1.1\r\n\r\n")
    assert status_and_body(answer) == (
        "HTTP/1.1 503 Service Unavailable",
        b"the database does not answer: OperationalError: FATAL: r?le inconnu\n",
    )


async def test_a_client_that_resets_its_connection_before_the_answer_is_no_error(
    clock: FakeClock,
) -> None:
    """The answer finds the connection reset: nothing to send it to, and nothing for
    the event loop to report (the ``loop_errors`` fixture)."""
    pool = CountingPool()
    pool.held = True
    metrics = Metrics(["noop"], listening=lambda: True)
    server = metrics_server(metrics, pool, clock)
    _, port = await server.bind("127.0.0.1", 0)
    serving = asyncio.create_task(server.serve())
    try:
        client = socket.create_connection(("127.0.0.1", port))
        client.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
        while pool.uses == 0:  # noqa: ASYNC110
            await asyncio.sleep(0.01)
        # Closed with SO_LINGER 0: a reset, not an orderly close.
        client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        client.close()
        await asyncio.sleep(0.05)  # the server's transport has seen the reset
        pool.release.set()

        async def answered() -> None:
            while server._connections:  # noqa: ASYNC110
                await asyncio.sleep(0.01)

        await asyncio.wait_for(answered(), 5)  # a bound on a hang
    finally:
        pool.release.set()
        serving.cancel()
        await asyncio.gather(serving, return_exceptions=True)


async def test_a_queue_without_a_count_of_stalled_attempts_has_none(clock: FakeClock) -> None:
    class NoStalledRow(Connection):
        def _answer(self, sql: str) -> list[dict[str, Any]]:
            return [] if "FROM work_attempts" in sql else super()._answer(sql)

    class NoStalledPool(Pool):
        @asynccontextmanager
        async def connection(self) -> AsyncIterator[Any]:
            yield NoStalledRow(self.snapshot)

    metrics = Metrics(["noop"], listening=lambda: True)
    assert await metrics.refresh(NoStalledPool(), clock, PROBE_SECONDS)
    assert get(scrape(metrics), "safelight_stalled_attempts") == 0


async def test_a_metrics_port_refused_without_a_reason_of_the_systems_says_what_it_was_told(
    clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def bind(self: MetricsServer, host: str, port: int) -> tuple[str, int]:
        raise OSError("no address of this family here")

    monkeypatch.setattr(MetricsServer, "bind", bind)
    with pytest.raises(SettingsError) as refused:
        await serve_metrics(engine_of(clock, Settings()), "127.0.0.1", 9100, Pool())
    assert str(refused.value) == (
        "metrics_port (SAFELIGHT_METRICS_PORT): cannot listen on 127.0.0.1 port 9100: "
        "no address of this family here"
    )
