"""Assembles a Worker process: database, store, handlers, executor, Workers, maintenance.

The CLI calls these; tests and benchmarks call them too, with a fake clock if they like.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from safelight.core.clock import Clock, SystemClock
from safelight.core.journal import Journal, attempt_scope
from safelight.db.database import Database, open_database
from safelight.db.migrate import check_schema
from safelight.handlers import KIND_SPECS, Services, build_handlers, schedule_settings
from safelight.handlers.guards import check_active_roots, check_proxy_root
from safelight.library.decoding import ImageDecoder
from safelight.settings import Settings
from safelight.work.context import Handler, HandlerContext
from safelight.work.executor import Executor, ExecutorSettings, RunResult
from safelight.work.maintenance import LeaseRecovery, Scheduler, every
from safelight.work.model import WorkItem
from safelight.work.outcome import Complete, Fail, Retry
from safelight.work.store import WorkStore
from safelight.work.wakeup import Listener, WakeupHub
from safelight.work.worker import Worker, WorkerSettings, worker_ids

_log = logging.getLogger(__name__)

# How often each process looks for due schedules. A schedule is taken at most once per
# period however often this runs; this only bounds how late a period starts.
SCHEDULER_TICK_SECONDS = 30.0
EXIT_INTERRUPTED = 130


@dataclass(frozen=True, slots=True)
class WorkerOptions:
    concurrency: int = 1
    user: str | None = None
    until_idle: bool = False
    name: str | None = None

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


def pool_size(settings: Settings, concurrency: int) -> int:
    """Connections one process needs: per Worker a claim/heartbeat connection and one
    per concurrent file of its handler, plus maintenance. Too few would make heartbeats
    wait for a connection behind the handler's writes."""
    return concurrency * (2 + settings.max_concurrent_files) + 2


async def open_app_database(
    settings: Settings, *, concurrency: int = 2
) -> Database:  # pragma: no mutate block
    """Open (and migrate) the configured database, or the embedded one."""
    return await open_database(
        settings.database_url,
        settings.home,
        max_size=pool_size(settings, concurrency),
        # A transaction left open by a Worker cut off mid-write must not hold its item
        # past half a lease: recovery (after a full lease) skips locked rows.
        idle_in_transaction_seconds=settings.lease_seconds / 2,
    )


def app_store(database: Database, settings: Settings, clock: Clock) -> WorkStore:
    return WorkStore(database.pool, clock, KIND_SPECS, max_stalls=settings.max_stalls)


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
    error = write.error if isinstance(write, Fail | Retry) else None
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
    """
    clock = clock or SystemClock()
    shutdown = shutdown or asyncio.Event()
    # Whoever opened the database, Workers never run on a schema this release does not
    # know: they could write what a newer schema forbids, or miss what it requires.
    async with database.pool.connection() as conn:
        await check_schema(conn)
    store = app_store(database, settings, clock)
    # One pool of decode processes for all of this process's Workers; its processes
    # start with the first photo (ImageDecoder) and end with run_workers.
    decoder = (
        ImageDecoder(settings.decode_processes, settings.decode_memory_mib)
        if settings.decode_processes
        else None
    )
    services = Services(
        pool=database.pool, store=store, clock=clock, settings=settings, decoder=decoder
    )
    # Before anything is claimed: nothing this process writes may land in a library it
    # serves, and its proxy root must be this database's (library.roots, .proxyroot).
    await check_active_roots(services, options.user)
    await check_proxy_root(services)
    journal = None if settings.side_effect_log is None else Journal(settings.side_effect_log, clock)
    handlers = journaled(build_handlers(services), journal)
    executor = Executor(
        store,
        clock,
        handlers,
        ExecutorSettings(
            lease_seconds=settings.lease_seconds,
            heartbeat_seconds=settings.heartbeat_seconds,
            shutdown_grace_seconds=settings.shutdown_grace_seconds,
        ),
        logging.getLogger("safelight.executor"),
        on_progress=on_progress,
    )
    report = RunReport(exit_code=0)

    def finished(item: WorkItem, result: RunResult) -> None:
        done = finished_item(item, result)
        report.finished.append(done)
        if on_finished is not None:
            on_finished(done)

    hub = WakeupHub()
    name = options.name or f"{socket.gethostname()}:{os.getpid()}"
    workers = [
        Worker(
            store,
            executor,
            clock,
            WorkerSettings(
                worker_id=worker_id,
                kinds=frozenset(handlers),
                owner=options.user,
                lease_seconds=settings.lease_seconds,
                poll_seconds=settings.poll_seconds,
                until_idle=options.until_idle,
            ),
            wake=hub.subscribe(),
            on_finished=finished,
            after_item=hub.wake_all,
        )
        for worker_id in worker_ids(name, options.concurrency)
    ]

    background = [
        asyncio.create_task(Listener(database.url, hub, clock).run(), name="listener"),
        asyncio.create_task(
            every(
                clock,
                settings.recovery_interval_seconds,
                "lease recovery",
                LeaseRecovery(store).run_once,
            ),
            name="lease-recovery",
        ),
    ]
    if not options.until_idle:
        scheduler = Scheduler(store, schedule_settings(settings), owner=options.user)
        background.append(
            asyncio.create_task(
                every(clock, SCHEDULER_TICK_SECONDS, "scheduler", scheduler.run_once),
                name="scheduler",
            )
        )

    tasks = [asyncio.create_task(w.run(shutdown), name=w.settings.worker_id) for w in workers]
    loop = asyncio.get_running_loop()
    signals = (signal.SIGINT, signal.SIGTERM)

    def on_signal(signum: int) -> None:
        if not shutdown.is_set():
            _log.warning(
                "%s: finishing up; the running items go back to the queue (again to stop now)",
                signal.Signals(signum).name,
            )
            report.interrupted = True
            shutdown.set()
        else:
            _log.warning("stopping now; lease recovery will requeue the running items")
            for task in tasks:
                task.cancel()

    if install_signal_handlers:
        for signum in signals:
            loop.add_signal_handler(signum, on_signal, signum)
    _log.info(
        "%d worker(s) %s serving %s on %s",
        len(workers),
        name,
        f"user {options.user}" if options.user else "every user",
        database.display,
    )
    try:
        results = await asyncio.gather(*tasks, return_exceptions=True)
        for result in results:
            if isinstance(result, asyncio.CancelledError):
                # A second signal: stopped at once, items left to lease recovery.
                report.interrupted = True
                report.exit_code = EXIT_INTERRUPTED
            elif isinstance(result, BaseException):
                raise result
    finally:
        if install_signal_handlers:
            for signum in signals:
                loop.remove_signal_handler(signum)
        for task in background:
            task.cancel()
        await asyncio.gather(*background, return_exceptions=True)
        if decoder is not None:
            # Calls not started are cancelled; this waits for at most the photo each
            # process is decoding (every handler has ended: nobody awaits them).
            await asyncio.to_thread(decoder.shutdown)
        if journal is not None:
            journal.close()
    return report
