"""The supervisor: a process's Workers and its background services under one task group.

The Workers run until shutdown (or, until idle, until nothing is left). The background
services (the wake-up listener, lease recovery, the presence, the scheduler, the metrics
server) run for as long as the Workers do, and are cancelled, quietly, once every Worker
has returned.

Each task survives what it expects by waiting and trying again, with a backoff (the
database being away: ``safelight.work.backoff``). Anything else is a bug, and ends the
process rather than leaving it to limp on (docs/operations.md has the table, ADR 0021
and 0025 the decision):

- A background service runs until it is cancelled. One that ends any other way, by an
  exception no retry inside it handled or by returning, would leave the Workers running
  without it (no wake-ups, no recovery, no schedules): it is logged with its traceback,
  the Workers stop as on a first signal (their items released), and the run ends with
  :class:`BackgroundFailed`, so that the service manager restarts the process.
- A Worker that raises is logged with its traceback at once, and its siblings stop as
  on a first signal, releasing their items; once they have, the run raises its error.
  Left running, they would hide for months that the process has one Worker fewer.
- A background service may also end with one of its ``fatal`` errors: no bug, but the
  end of what the process can do (the embedded server it runs on has stopped, ADR 0038).
  It is logged as one line, without a traceback; the Workers are cancelled at once, as
  on a second signal (nothing they would write could land), and the run raises it.

Signals: the first SIGINT/SIGTERM stops claiming and lets each Worker release its item;
a second cancels the Workers at once (their items come back by lease recovery).
"""

from __future__ import annotations

import asyncio
import logging
import signal
from collections.abc import Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any

from safelight.work.errors import describe_briefly
from safelight.work.worker import Worker

__all__ = ["Background", "BackgroundFailed", "Stopped", "supervise"]

SIGNALS = (signal.SIGINT, signal.SIGTERM)


@dataclass(frozen=True, slots=True)
class Background:
    """A service that runs beside the Workers: ``run()`` makes its coroutine, which runs
    until cancelled."""

    name: str
    run: Callable[[], Coroutine[Any, Any, object]]
    fatal: tuple[type[Exception], ...] = ()
    """The errors it ends with that are no bug but the end of the run: raised as they are,
    once the Workers are cancelled (see the module docstring)."""


@dataclass(frozen=True, slots=True)
class Stopped:
    """How the Workers' run ended, when it ended without an error."""

    interrupted: bool
    """A signal stopped the run."""
    at_once: bool
    """A second signal cancelled the Workers: their items are left to lease recovery."""


class BackgroundFailed(RuntimeError):
    """A background service ended while the Workers ran; its traceback is in the log."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(f"the {name} task stopped: {reason}")
        self.name = name


async def supervise(
    workers: Sequence[Worker],
    background: Sequence[Background],
    *,
    shutdown: asyncio.Event,
    log: logging.Logger,
    install_signal_handlers: bool = True,
) -> Stopped:
    """Run ``workers`` and ``background`` until every Worker has returned.

    Raises the first fatal error of a background service (``Background.fatal``), else
    the first exception a Worker raised (after the others have stopped, as the first
    one's failure makes them), else :class:`BackgroundFailed` if a background service
    ended.
    """
    interrupted = False
    stopping = False  # the Workers have returned; the services are being cancelled
    ended: list[BackgroundFailed] = []
    fatal: list[Exception] = []
    worker_errors: list[BaseException] = []
    worker_tasks: list[asyncio.Task[None]] = []

    async def guarded(service: Background) -> None:
        try:
            await service.run()
        except service.fatal as exc:
            log.error("%s; stopping the Workers at once", describe_briefly(exc))
            fatal.append(exc)
            shutdown.set()
            for task in worker_tasks:
                task.cancel()
            return
        except Exception as exc:
            log.error("background task %s failed; stopping the Workers", service.name, exc_info=exc)
            failed = BackgroundFailed(service.name, describe_briefly(exc))
            failed.__cause__ = exc
        else:
            if stopping:
                return  # it swallowed its cancellation: it ended as it was asked to
            log.error("background task %s returned; stopping the Workers", service.name)
            failed = BackgroundFailed(service.name, "it returned")
        ended.append(failed)
        shutdown.set()

    async def settled(worker: Worker) -> None:
        # A Worker's error stops its siblings, and waits for them to release their items.
        try:
            await worker.run(shutdown)
        except Exception as exc:
            log.error(
                "worker %s failed; stopping the Workers", worker.settings.worker_id, exc_info=exc
            )
            worker_errors.append(exc)
            shutdown.set()

    def on_signal(signum: int) -> None:
        nonlocal interrupted
        if not shutdown.is_set():
            log.warning(
                "%s: finishing up; the running items go back to the queue (again to stop now)",
                signal.Signals(signum).name,
            )
            interrupted = True
            shutdown.set()
        else:
            log.warning("stopping now; lease recovery will requeue the running items")
            for task in worker_tasks:
                task.cancel()

    loop = asyncio.get_running_loop()
    async with asyncio.TaskGroup() as group:
        services = [group.create_task(guarded(s), name=s.name) for s in background]
        worker_tasks.extend(
            group.create_task(settled(w), name=w.settings.worker_id) for w in workers
        )
        if install_signal_handlers:
            for signum in SIGNALS:
                loop.add_signal_handler(signum, on_signal, signum)
        try:
            if worker_tasks:
                await asyncio.wait(worker_tasks)
        finally:
            if install_signal_handlers:
                for signum in SIGNALS:
                    loop.remove_signal_handler(signum)
            stopping = True
            for task in services:
                task.cancel()

    # A second signal: stopped at once, items left to lease recovery.
    at_once = any(ran.cancelled() for ran in worker_tasks)
    interrupted = interrupted or at_once
    if fatal:
        raise fatal[0]
    if worker_errors:
        raise worker_errors[0]
    if ended:
        raise ended[0]
    return Stopped(interrupted=interrupted, at_once=at_once)
