"""The Prometheus metrics of one Worker process (docs/operations.md lists them).

:class:`Metrics` is the observer the engine and the crawl call (``work.observer``,
``handlers.services.CrawlObserver``): counters and a histogram of what this process did
since it started. The queue's gauges are the database's, read at each scrape by
:meth:`Metrics.refresh` and handed out by a custom collector, so that every Worker
process reports the same queue and nothing goes stale between scrapes; a scrape that
cannot read them says so in ``safelight_database_up`` and leaves them out rather than
repeat old values.

Each ``Metrics`` has a registry of its own (never the library's global one), so that
tests and benchmarks can build as many engines as they like in one process.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

import psycopg
from prometheus_client import CollectorRegistry, Counter, Histogram, ProcessCollector
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.exposition import generate_latest
from psycopg.rows import dict_row

from safelight.core.clock import Clock, wait_with_timeout
from safelight.core.sql import load_queries
from safelight.db.pool import Connections
from safelight.work.model import RecoveryReport, Status

__all__ = ["DURATION_BUCKETS", "UNSCOPED", "Metrics", "QueueSnapshot", "ping"]

QUERIES = load_queries("safelight.observe", "queries.sql")

# From a no-op's milliseconds to a first crawl's hours.
DURATION_BUCKETS = (0.05, 0.25, 1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0)
UNSCOPED = "none"
"""The ``config`` label of running items that belong to no storage config."""


@dataclass(frozen=True, slots=True)
class QueueSnapshot:
    """The queue as one scrape read it."""

    items: dict[tuple[str, str], int] = field(default_factory=dict)
    """(kind, status) -> how many items."""
    running: dict[UUID | None, int] = field(default_factory=dict)
    """Active config (None: unscoped items) -> running items."""
    stalled_attempts: int = 0
    originals_changed: int = 0
    """Live originals whose content changed under the same size and time (ADR 0062)."""
    paused: dict[str, int] = field(default_factory=dict)
    """"kind" and "config" -> how many are paused."""


async def ping(conn: psycopg.AsyncConnection[Any]) -> None:
    """Whether the database answers (/healthz): raises if it does not."""
    await conn.execute(QUERIES["database_ping"])


async def read_queue(pool: Connections) -> QueueSnapshot:
    async with pool.connection() as conn:
        cur = conn.cursor(row_factory=dict_row)
        await cur.execute(QUERIES["items_by_kind_and_status"])
        items = {(r["kind"], r["status"]): int(r["count"]) for r in await cur.fetchall()}
        await cur.execute(QUERIES["configs_running_items"])
        running = {r["config_id"]: int(r["running"]) for r in await cur.fetchall()}
        await cur.execute(QUERIES["attempts_stalled_count"])
        row = await cur.fetchone()
        await cur.execute(QUERIES["assets_changed_count"])
        changed = await cur.fetchone()
        await cur.execute(QUERIES["paused_counts"])
        paused = await cur.fetchone()
    return QueueSnapshot(
        items,
        running,
        int(row["stalled"]) if row else 0,
        paused={"kind": int(paused["kinds"]), "config": int(paused["configs"])} if paused else {},
        originals_changed=int(changed["changed"]) if changed else 0,
    )


class _QueueCollector:
    """Hands out the last :class:`QueueSnapshot` (a prometheus_client custom collector)."""

    def __init__(self, kinds: Collection[str], listening: Callable[[], bool]) -> None:
        self._kinds = sorted(kinds)
        self._listening = listening
        self.snapshot: QueueSnapshot | None = None

    def collect(self) -> Iterator[Metric]:
        listener = GaugeMetricFamily(
            "safelight_listener_connected",
            "1 while this process's wake-up listener is connected to the database.",
        )
        listener.add_metric([], 1.0 if self._listening() else 0.0)
        yield listener
        up = GaugeMetricFamily(
            "safelight_database_up",
            "1 if this scrape could read the queue from the database; without it the "
            "queue's gauges are left out.",
        )
        snapshot = self.snapshot
        up.add_metric([], 0.0 if snapshot is None else 1.0)
        yield up
        if snapshot is None:
            return
        depth = GaugeMetricFamily(
            "safelight_queue_items",
            "Work items in the queue by kind and status, across all Worker processes.",
            labels=["kind", "status"],
        )
        # Every kind this process runs in every status, zeros included, so that a series
        # never vanishes when its count falls to nothing; and any other kind queued.
        kinds = sorted({*self._kinds, *(kind for kind, _ in snapshot.items)})
        for kind in kinds:
            for status in Status:
                depth.add_metric([kind, status.value], snapshot.items.get((kind, status.value), 0))
        yield depth
        running = GaugeMetricFamily(
            "safelight_running_items",
            "Running work items per active storage config (at most 1, ADR 0008); "
            f'config="{UNSCOPED}": unscoped items.',
            labels=["config"],
        )
        for config, count in sorted(snapshot.running.items(), key=lambda kv: str(kv[0])):
            running.add_metric([UNSCOPED if config is None else str(config)], count)
        yield running
        stalled = GaugeMetricFamily(
            "safelight_stalled_attempts",
            "Attempts whose lease expired and were recovered (stalls), as the database "
            "keeps them (their items are deleted after the work retention).",
        )
        stalled.add_metric([], snapshot.stalled_attempts)
        yield stalled
        changed = GaugeMetricFamily(
            "safelight_originals_changed",
            "Originals whose content changed while their size and modification time did "
            "not, as the scrub found them (bit rot or tampering; ADR 0062).",
        )
        changed.add_metric([], snapshot.originals_changed)
        yield changed
        paused = GaugeMetricFamily(
            "safelight_paused",
            "Kinds and storage configs paused across all Workers (safelight pause, ADR "
            "0060): none of their queued items is claimed until resumed.",
            labels=["what"],
        )
        for what in ("kind", "config"):
            paused.add_metric([what], snapshot.paused.get(what, 0))
        yield paused


class Metrics:
    """One Worker process's metrics: the observer of its engine and crawls, and what
    ``/metrics`` renders. Every hook is called on the event loop's thread."""

    def __init__(self, kinds: Collection[str], listening: Callable[[], bool]) -> None:
        """``kinds``: those this process runs (their queue gauges are always present);
        ``listening``: whether the process's wake-up listener is connected now."""
        self.registry = CollectorRegistry(auto_describe=True)
        registry = self.registry
        self._durations = Histogram(
            "safelight_item_duration_seconds",
            "Seconds from an item's claim to its end, by kind and outcome, in this process.",
            ["kind", "outcome"],
            buckets=DURATION_BUCKETS,
            registry=registry,
        )
        self._duration_series: dict[tuple[str, str], Histogram] = {}
        self._recovered = Counter(
            "safelight_lease_recoveries",
            "Running items whose expired lease this process's lease recovery took back, "
            "by what became of them (requeued, failed: stalled too often, superseded).",
            ["result"],
            registry=registry,
        )
        for result in ("requeued", "failed", "superseded"):
            self._recovered.labels(result)
        self._self_stops = Counter(
            "safelight_self_stops",
            "Attempts that stopped themselves: no heartbeat succeeded for half a lease.",
            registry=registry,
        )
        self._heartbeat_failures = Counter(
            "safelight_heartbeat_failures",
            "Heartbeat calls that failed or timed out (the attempt goes on).",
            registry=registry,
        )
        self._claims_lost = Counter(
            "safelight_claims_lost",
            "Claim statements that lost the race for a storage config to another claim.",
            registry=registry,
        )
        self._files = Counter(
            "safelight_files_crawled",
            "Files crawls dealt with, whatever became of each.",
            registry=registry,
        )
        self._proxies = Counter(
            "safelight_proxies_made", "Proxy files crawls wrote and recorded.", registry=registry
        )
        self._file_errors = Counter(
            "safelight_file_errors",
            "Files crawls could not ingest (each in its crawl's result and asset_errors).",
            registry=registry,
        )
        self._queue = _QueueCollector(kinds, listening)
        registry.register(self._queue)
        # Memory, CPU, open files of this process: what a leak over months shows in.
        ProcessCollector(registry=registry)

    # --- the engine's hooks (work.observer.EngineObserver) ---------------------------

    def item_ended(self, kind: str, outcome: str, seconds: float) -> None:
        # Each (kind, outcome) series looked up once: labels() validates and locks on
        # every call, a cost paid for every item otherwise (docs/benchmarks.md, 3).
        series = self._duration_series.get((kind, outcome))
        if series is None:
            series = self._duration_series[(kind, outcome)] = self._durations.labels(kind, outcome)
        series.observe(max(0.0, seconds))

    def heartbeat_failed(self) -> None:
        self._heartbeat_failures.inc()

    def self_stopped(self) -> None:
        self._self_stops.inc()

    def leases_recovered(self, report: RecoveryReport) -> None:
        for result, count in (
            ("requeued", report.requeued),
            ("failed", report.failed),
            ("superseded", report.superseded),
        ):
            if count:
                self._recovered.labels(result).inc(count)

    def claim_lost(self) -> None:
        self._claims_lost.inc()

    # --- the crawl's hooks (handlers.services.CrawlObserver) -------------------------

    def files_crawled(self, count: int) -> None:
        self._files.inc(count)

    def proxies_made(self, count: int) -> None:
        self._proxies.inc(count)

    def file_errors(self, count: int) -> None:
        self._file_errors.inc(count)

    # --- a scrape --------------------------------------------------------------------

    async def refresh(self, pool: Connections, clock: Clock, timeout_seconds: float) -> bool:
        """Read the queue for the next :meth:`render`; False (and no queue gauges) if
        the database did not answer within ``timeout_seconds``."""
        try:
            snapshot = await wait_with_timeout(clock, read_queue(pool), timeout_seconds)
        except (psycopg.Error, OSError, TimeoutError):
            self._queue.snapshot = None
            return False
        self._queue.snapshot = snapshot
        return True

    def render(self) -> bytes:
        """The metrics in Prometheus's text format."""
        return generate_latest(self.registry)

    def collect(self) -> Iterable[Metric]:
        """Every metric as prometheus_client's families (for tests and tools)."""
        return self.registry.collect()
