"""The composition root of a Worker process: ``build_engine`` assembles its store,
services, handlers, executor, Workers and background services without starting any;
``run_workers`` checks the database and the folders, then runs them under the
supervisor (``safelight.work.supervisor``).

The CLI calls these; tests and benchmarks build the engine too, with a fake clock if
they like, and run its parts themselves.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import random
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from functools import partial
from typing import Any, TypeVar
from uuid import UUID

import psycopg

from safelight.core.clock import Clock, SystemClock, wait_with_timeout
from safelight.core.journal import Journal, attempt_scope
from safelight.db.database import Database
from safelight.db.embeddedwatch import EmbeddedServerStopped, watch_postmaster
from safelight.db.migrate import check_schema
from safelight.db.pool import Connections, OneConnection
from safelight.handlers import HEAVY_KINDS, KIND_SPECS, Services, build_handlers, schedule_settings
from safelight.handlers.guards import check_proxy_root
from safelight.library.render.decoding import ImageDecoder
from safelight.observe.metrics import Metrics
from safelight.observe.presence import Presence
from safelight.observe.server import PROBE_SECONDS, Health, MetricsServer, exposure_warning
from safelight.settings import Settings, SettingsError
from safelight.work.cancels import CancelRequests
from safelight.work.context import Handler, HandlerContext
from safelight.work.errors import describe_briefly
from safelight.work.executor import Executor, RunResult
from safelight.work.lifecycle import Lifecycle
from safelight.work.maintenance import LeaseRecovery, Scheduler, every
from safelight.work.model import WorkItem
from safelight.work.observer import NO_OBSERVER, EngineObserver
from safelight.work.outcome import Complete, Fail, Retry, RetryLater
from safelight.work.retry import Retries
from safelight.work.store import WorkStore
from safelight.work.supervisor import Background, supervise
from safelight.work.wakeup import Listener, WakeupHub
from safelight.work.worker import Worker, worker_ids

_log = logging.getLogger(__name__)

T = TypeVar("T")

# How often each process looks for due schedules. A schedule is taken at most once per
# period however often this runs; this only bounds how late a period starts.
SCHEDULER_TICK_SECONDS = 30.0
EXIT_INTERRUPTED = 130
# How the metrics port's connection shows in pg_stat_activity.
METRICS_APPLICATION_NAME = "safelight-metrics"


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    concurrency: int = 1
    user: str | None = None
    until_idle: bool = False
    name: str | None = None
    serve_metrics: bool = False
    """Serve /metrics and /healthz on the ``metrics_port`` setting, if it has one
    (``safelight worker``; not ``safelight run``)."""

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise ValueError("concurrency must be at least 1")


@dataclass(frozen=True, slots=True)
class FinishedItem:
    id: int
    kind: str
    storage_config_id: UUID | None
    outcome: str
    """The outcome's name (``safelight.work.outcome``)."""
    result: dict[str, Any] | None
    error: str | None
    counts_as_failure: bool
    """The item failed for good (a failed handler, an unknown kind)."""


@dataclass
class RunReport:
    exit_code: int
    finished: list[FinishedItem] = field(default_factory=list)
    interrupted: bool = False


def app_store(
    database: Database,
    settings: Settings,
    clock: Clock,
    *,
    observer: EngineObserver = NO_OBSERVER,
) -> WorkStore:
    return WorkStore(
        database.pool, clock, KIND_SPECS, max_stalls=settings.max_stalls, observer=observer
    )


def journaled(handlers: Mapping[str, Handler], journal: Journal | None) -> dict[str, Handler]:
    """Each handler runs with its attempt as the journal's current one (a no-op without)."""
    if journal is None:
        return dict(handlers)

    def wrap(handler: Handler) -> Handler:
        async def with_journal(ctx: HandlerContext) -> dict[str, Any] | None:
            item = ctx.item
            with attempt_scope(
                journal, config_id=item.storage_config_id, item_id=item.id, attempt=item.attempt
            ):
                return await handler(ctx)

        return with_journal

    return {kind: wrap(handler) for kind, handler in handlers.items()}


def finished_item(item: WorkItem, result: RunResult) -> FinishedItem:
    """The item as its attempt ended: the result and error are those its write stored."""
    write = result.write
    body = write.result if isinstance(write, Complete) else None
    error = write.error if isinstance(write, Fail | RetryLater | Retry) else None
    outcome = result.outcome
    return FinishedItem(
        item.id,
        item.kind,
        item.storage_config_id,
        outcome.name,
        body,
        error,
        outcome.counts_as_failure,
    )


@dataclass(frozen=True, slots=True)
class Engine:
    """A Worker process's parts, assembled by :func:`build_engine` with nothing started."""

    settings: Settings
    database: Database
    clock: Clock
    name: str
    """The Workers' ids start with it (``worker_ids``)."""
    store: WorkStore
    services: Services
    handlers: Mapping[str, Handler]
    executor: Executor
    hub: WakeupHub
    listener: Listener
    """The process's LISTEN connection (run as the "listener" background task)."""
    cancels: CancelRequests
    """Cancel requests the listener heard, which the executor's attempts heed."""
    metrics: Metrics
    """What the engine and the crawls count, for /metrics (``safelight.observe``)."""
    presence: Presence
    """Writes the Workers' presence (the "presence" background task) for ``health``."""
    workers: tuple[Worker, ...]
    lifecycle: Lifecycle
    """The Workers' lifecycle lines (``work.lifecycle``), flushed as the run ends."""
    background: tuple[Background, ...]
    """The listener, lease recovery, the presence and (unless until idle) the scheduler,
    not started."""
    finished: list[FinishedItem]
    """Every attempt the Workers ran to its end, as it ended; kept only when they run
    until idle (``safelight run``): a Worker that runs for months keeps none."""
    decoder: ImageDecoder | None
    journal: Journal | None
    owns_decoder: bool

    @property
    def kinds(self) -> frozenset[str]:
        """The kinds this engine's Workers claim: those it has a handler for."""
        return frozenset(self.handlers)

    async def close(self) -> None:
        """Shut the decode processes (if the engine made them) and the journal."""
        if self.decoder is not None and self.owns_decoder:
            # Calls not started are cancelled; this waits for at most the photo each
            # process is decoding (every handler has ended: nobody awaits them).
            await asyncio.to_thread(self.decoder.shutdown)
        if self.journal is not None:
            self.journal.close()


def build_engine(
    settings: Settings,
    database: Database,
    clock: Clock,
    options: WorkerOptions,
    *,
    on_progress: Callable[[WorkItem, Mapping[str, Any]], None] | None = None,
    on_finished: Callable[[FinishedItem], None] | None = None,
    handlers: Callable[[Services], Mapping[str, Handler]] = build_handlers,
    decoder: ImageDecoder | None = None,
) -> Engine:
    """The store, services, handlers, executor, ``options.concurrency`` Workers and the
    background services of one Worker process; nothing started.

    It uses no connection and starts no task, thread or process: the pool is only
    handed on, and the decode processes start with the first photo. It opens one file,
    the side-effect journal, when the ``side_effect_log`` setting names one.
    ``handlers`` makes the handlers from the services (tests wrap them); ``decoder`` is
    a decode pool of the caller's, left running by :meth:`Engine.close` (default: one
    made from the settings, or none with ``decode_processes`` 0).
    """
    hub = WakeupHub()
    cancels = CancelRequests()
    listener = Listener(
        database.url,
        hub,
        clock,
        retry_seconds=settings.poll_seconds,
        retry_max_seconds=settings.outage_backoff_max_seconds,
        cancels=cancels,
    )
    metrics = Metrics([spec.name for spec in KIND_SPECS], listening=listener.connected.is_set)
    store = app_store(database, settings, clock, observer=metrics)
    owns_decoder = decoder is None
    if decoder is None and settings.decode_processes:
        # One pool of decode processes for all of this process's Workers.
        decoder = ImageDecoder(settings.decode_processes, settings.decode_memory_mib)
    services = Services(
        pool=database.pool,
        store=store,
        clock=clock,
        settings=settings,
        decoder=decoder,
        crawl_observer=metrics,
    )
    journal = None if settings.side_effect_log is None else Journal(settings.side_effect_log, clock)
    built = journaled(handlers(services), journal)
    # Heavy hours bind a Worker that serves for good; a run until idle was asked for now.
    heavy = frozenset() if options.until_idle else HEAVY_KINDS
    executor = Executor(
        store,
        clock,
        built,
        settings.executor(heavy),
        logging.getLogger("safelight.executor"),
        on_progress=on_progress,
        retries=Retries.of(KIND_SPECS, settings.retry_policy(), random.Random().random),
        observer=metrics,
        cancels=cancels,
    )
    finished_items: list[FinishedItem] = []
    # Only a run until idle keeps what ended, for its summary: a Worker that runs for
    # months would otherwise hold every item it ever ran.
    keep = options.until_idle

    def finished(item: WorkItem, result: RunResult) -> None:
        done = finished_item(item, result)
        if keep:
            finished_items.append(done)
        if on_finished is not None:
            on_finished(done)

    name = options.name or f"{socket.gethostname()}:{os.getpid()}"
    ids = worker_ids(name, options.concurrency)
    # One for the process: its summary line counts every Worker's quick successes.
    lifecycle = Lifecycle(logging.getLogger("safelight.work.worker"), clock)
    workers = tuple(
        Worker(
            store,
            executor,
            clock,
            settings.worker(
                worker_id,
                frozenset(built),
                owner=options.user,
                until_idle=options.until_idle,
                heavy_kinds=heavy,
            ),
            wake=hub.subscribe(),
            on_finished=finished,
            after_item=hub.wake_all,
            observer=metrics,
            lifecycle=lifecycle,
        )
        for worker_id in ids
    )
    presence = Presence(
        database.pool, clock, ids, forget_after=timedelta(days=settings.work_retention_days)
    )
    backoff = {"backoff_max_seconds": settings.outage_backoff_max_seconds}
    background = [
        Background("listener", listener.run),
        Background(
            "lease-recovery",
            partial(
                every,
                clock,
                settings.recovery_interval_seconds,
                "lease recovery",
                LeaseRecovery(store, metrics).run_once,
                **backoff,
            ),
        ),
        Background(
            "presence",
            partial(
                every,
                clock,
                settings.recovery_interval_seconds,
                "presence",
                presence.run_once,
                **backoff,
            ),
        ),
    ]
    if database.embedded_handle is not None:
        # The server this process started or joined: if it stops, nothing brings it
        # back while this process holds it, so the run ends at once (db.embeddedwatch).
        background.append(
            Background(
                "embedded-server",
                partial(watch_postmaster, database.embedded_handle.pgdata),
                fatal=(EmbeddedServerStopped,),
            )
        )
    if not options.until_idle:
        scheduler = Scheduler(store, schedule_settings(settings), owner=options.user)
        background.append(
            Background(
                "scheduler",
                partial(
                    every, clock, SCHEDULER_TICK_SECONDS, "scheduler", scheduler.run_once, **backoff
                ),
            )
        )
    return Engine(
        settings=settings,
        database=database,
        clock=clock,
        name=name,
        store=store,
        services=services,
        handlers=built,
        executor=executor,
        hub=hub,
        listener=listener,
        cancels=cancels,
        metrics=metrics,
        presence=presence,
        workers=workers,
        lifecycle=lifecycle,
        background=tuple(background),
        finished=finished_items,
        decoder=decoder,
        journal=journal,
        owns_decoder=owns_decoder,
    )


async def run_workers(
    settings: Settings,
    options: WorkerOptions,
    *,
    database: Database,
    on_progress: Callable[[WorkItem, Mapping[str, Any]], None] | None = None,
    on_finished: Callable[[FinishedItem], None] | None = None,
    install_signal_handlers: bool = True,
    clock: Clock | None = None,
    shutdown: asyncio.Event | None = None,
) -> RunReport:  # pragma: no mutate block
    """Run ``options.concurrency`` Workers in this process until shutdown (or idle).

    The first SIGINT/SIGTERM stops claiming, cancels the running handlers, waits up to
    the grace period and releases their items: ``exit_code`` 0, ``interrupted`` set. A
    second stops at once (the items come back by lease recovery): ``exit_code`` 130.
    A background task that fails stops the Workers as the first signal does and raises
    :class:`~safelight.work.supervisor.BackgroundFailed` (ADR 0021).
    """
    # Whoever opened the database, Workers never run on a schema this release does not
    # know: they could write what a newer schema forbids, or miss what it requires.
    async with database.pool.connection() as conn:
        await check_schema(conn)
    clock = clock or SystemClock()
    engine = build_engine(
        settings, database, clock, options, on_progress=on_progress, on_finished=on_finished
    )
    gone = False  # the database stopped under the Workers: no presence to delete
    # The metrics port's own connection, made at its first scrape: never the Workers'.
    scrapes = OneConnection(database.url, METRICS_APPLICATION_NAME)
    try:
        # Before anything is claimed: nothing this process writes or deletes may land in
        # any registered library (whoever's, whatever its state), and its proxy root must
        # be this database's (library.files.roots, .proxyroot).
        await check_proxy_root(engine.services)
        _log.info(
            "%d worker(s) %s serving %s on %s",
            len(engine.workers),
            engine.name,
            f"user {options.user}" if options.user else "every user",
            database.display,
        )
        background = engine.background
        if options.serve_metrics and settings.metrics_port is not None:
            server = await serve_metrics(
                engine, settings.metrics_host, settings.metrics_port, scrapes
            )
            background = (*background, Background("metrics", server.serve))
        stopped = await supervise(
            engine.workers,
            background,
            shutdown=shutdown or asyncio.Event(),
            log=_log,
            install_signal_handlers=install_signal_handlers,
        )
    except EmbeddedServerStopped:
        gone = True
        raise
    finally:
        engine.lifecycle.flush()
        if not gone:
            await leave(engine)
        await scrapes.close()
        await engine.close()
    return RunReport(
        exit_code=EXIT_INTERRUPTED if stopped.at_once else 0,
        finished=engine.finished,
        interrupted=stopped.interrupted,
    )


async def serve_metrics(
    engine: Engine, host: str, port: int, connection: Connections
) -> MetricsServer:
    """The metrics server of ``engine``, bound (not serving yet), reading the database
    through ``connection`` (its own, never the Workers' pool). A port it cannot listen
    on is a setting safelight cannot use: a :class:`SettingsError`, before any claim.
    Logs a warning when the port is open beyond this machine."""
    settings = engine.settings
    health = Health(connection, engine.clock, engine.listener.connected.is_set)
    server = MetricsServer(
        engine.metrics,
        health,
        connection,
        engine.clock,
        settings.metrics_limits(),
        refresh_seconds=settings.metrics_refresh_seconds,
    )
    try:
        bound_host, bound_port = await server.bind(host, port)
    except OSError as exc:
        # As the dashboard says it ("Address already in use"): asyncio's own message
        # repeats the address. A name that does not resolve has no errno of the system's.
        code = exc.errno
        if code is not None and code in errno.errorcode:
            reason = os.strerror(code)
        else:
            reason = exc.strerror or str(exc)
        raise SettingsError(
            f"metrics_port (SAFELIGHT_METRICS_PORT): cannot listen on {host} port {port}: {reason}"
        ) from None
    _log.info("metrics on http://%s:%d/metrics, health on /healthz", bound_host, bound_port)
    warning = exposure_warning(host)
    if warning is not None:
        _log.warning("%s", warning)
    return server


async def leave(engine: Engine) -> None:
    """Delete the Workers' presence as the process stops (``safelight health`` then no
    longer counts them); a database that does not answer keeps it until it goes stale."""
    try:
        await wait_with_timeout(engine.clock, engine.presence.leave(), PROBE_SECONDS)
    except (psycopg.Error, OSError, TimeoutError) as exc:
        _log.warning("could not delete the Workers' presence (%s)", describe_briefly(exc))
